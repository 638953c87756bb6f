"""Batched scheduling is exact: outcomes equal the serial loop's, on varied small clusters.

``random_workload`` mixes resources, taints and tolerations, node labels, host ports,
inter-pod affinity and anti-affinity, zone spread and priorities on 12 nodes; every pod
is queued before scheduling starts. The drivers (events only when activeQ is drained,
or everything settled between any two pods), the clock that keeps backoff timing and
the drained-queue check are ``exactness_harness``'s; so is what is compared: placements,
attempts, FailedScheduling and Preempted messages, nominatedNodeName, preemptors.

Batch size 1 is the serial loop; larger batches pop many pods per round trip and commit
them one by one. Equal outcomes across batch sizes, the compiled and the numpy path, and
executors (table, in-process shards) show that neither a batch nor the kernels change
any pod's decision: filter/score state, nominations, preemption, host-selection
randomness and requeueing. Tables big enough for window rotation, preemption pressure by
construction and real Ray shard actors are ``test_exactness_at_scale``'s.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cluster_sched.config.load import parse_config
from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.testing.builders import make_pod
from cluster_sched.testing.random_cluster import random_workload
from tests.scheduler.exactness_harness import DRIVERS, Phase, install_driver, run_workload

SERIAL = ExecutorOptions("local", compiled=False)


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    install_driver(monkeypatch, request.param)
    return str(request.param)


def _pending_placed(placements: dict[str, str]) -> int:
    """Pending pods (``p...``) the run placed: the workload is not vacuous."""
    return sum(1 for key, node in placements.items() if key.startswith("default/p") and node)


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 10_000))
def test_batches_and_shards_give_the_serial_outcome(
    redis_client: redis.Redis, driver: str, seed: int
) -> None:
    phases: list[Phase] = [(random_workload(seed), [])]
    serial = run_workload(redis_client, phases, SERIAL, 1)
    assert _pending_placed(serial.placements) > 0, serial.placements
    for options, batch in (
        (ExecutorOptions("local", compiled=False), 7),
        (ExecutorOptions("local"), 1),
        (ExecutorOptions("local"), 64),
        (ExecutorOptions("shards", shards=2), 64),
        (ExecutorOptions("shards", shards=3), 5),
        # every attempt on the shards: batches prefetched (shard_prefetch)
        (ExecutorOptions("shards", shards=2, compiled=False), 64),
        # the per-pod protocol under the same batches
        (ExecutorOptions("shards", shards=2, compiled=False, shard_prefetch=False), 64),
        # the compiled path's attempts answered by the shards' reductions (shard_merge)
        (ExecutorOptions("shards", shards=2, shard_dispatch="shards"), 64),
        (ExecutorOptions("shards", shards=3, shard_dispatch="shards"), 5),
    ):
        got = run_workload(redis_client, phases, options, batch)
        assert got == serial, (options, batch, got.difference(serial))


#: PodTopologySpread without default constraints, so that pods are signable and
#: OpportunisticBatching (on by default) hints nodes (System defaulting signs no pod).
SIGNABLE = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }
    ],
}


def _one_per_node_pods(n: int) -> list[dict[str, Any]]:
    """Identical high-priority pods no node holds two of: consecutive and signable, so
    each one after the first may be placed on the previous attempt's list."""
    return [
        make_pod(f"big{i}")
        .req(cpu="3500m", memory="1Gi")
        .label("app", "big")
        .priority(1000)
        .manifest()
        for i in range(n)
    ]


def test_batches_give_the_serial_outcome_with_opportunistic_batching(
    redis_client: redis.Redis, driver: str
) -> None:
    """Hinted placements (OpportunisticBatching) are the same in every mode; some
    examples use no hint (the first pod's node not full), so the count is asserted over
    all of them (seed 0 uses none; seeds 1, 2, 3, 7, 11 use one or two)."""
    config = parse_config(SIGNABLE, "<test>")
    hinted: list[int] = []

    @settings(max_examples=4, deadline=None)
    @given(seed=st.integers(0, 10_000))
    # a preemption's victim deletion moves a pod that sorts before the batch's next pods
    # (``each pod``): the serial loop pops it next, so the batch gives those pods back
    @example(seed=1355)
    @example(seed=8767)
    def check(seed: int) -> None:
        phases: list[Phase] = [(random_workload(seed) + _one_per_node_pods(6), [])]
        serial = run_workload(redis_client, phases, SERIAL, 1, config)
        hinted.append(serial.paths["batched_pods"])
        for options, batch in (
            (ExecutorOptions("local", compiled=False), 7),
            (ExecutorOptions("local"), 64),
            (ExecutorOptions("shards", shards=2), 5),
        ):
            got = run_workload(redis_client, phases, options, batch, config)
            assert got == serial, (options, batch, got.difference(serial))
            assert got.paths["batched_pods"] == serial.paths["batched_pods"], got.paths

    check()
    assert sum(hinted) > 0, hinted


@pytest.mark.parametrize("relay", ["off", "on"])
@pytest.mark.parametrize("seed", [4, 2024])
def test_reduced_ray_shards_give_the_serial_outcome(
    ray_session: None, redis_client: redis.Redis, redis_url: str, driver: str, seed: int, relay: str
) -> None:
    """The compiled path's attempts answered by real Ray shard actors (2 and 3), the next
    batch sent to them while this one is committed (``shards.pipeline``); directly, or
    every chunk through the shard relay (``workers.ray_relay``)."""
    phases: list[Phase] = [(random_workload(seed), [])]
    serial = run_workload(redis_client, phases, SERIAL, 1)
    assert _pending_placed(serial.placements) > 0, serial.placements
    pipelined = relayed = 0
    for shards, batch in ((2, 4), (3, 7)):
        options = ExecutorOptions(
            "ray", shards=shards, redis_url=redis_url, shard_dispatch="shards", shard_relay=relay
        )
        got = run_workload(redis_client, phases, options, batch)
        assert got == serial, (shards, batch, got.difference(serial))
        pipelined += got.paths["reduced_pipelined"]
        relayed += got.paths["reduced_relayed_payloads"]
    assert pipelined > 0, "no batch was taken from one sent ahead"
    assert (relayed > 0) == (relay == "on"), relayed
