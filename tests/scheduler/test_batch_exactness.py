"""Batched scheduling is exact: placements and attempts equal the serial loop's.

Every pod is queued before scheduling starts. Two drivers make event processing
deterministic and the same for every mode:

- ``rounds``: watch events are read only when activeQ is drained; between two pods
  every binding finishes and its outcome is handled (SchedulerPopFromBackoffQ pops
  backoffQ pods mid-round, so an outcome must not land at a timing-dependent pod);
- ``each pod``: between any two pods (the loop's housekeeping), every binding finishes
  and every watch event is read, so bindings and preemption victims' deletions move
  queued pods mid-batch (this is where the in-flight events rule is exercised: only
  events of a pod's own cycle or later count for it, never those that arrived while it
  waited in the popped batch).

After a round the fake clock jumps past every backoff. Batch size 1 is the serial loop;
larger batches pop many pods per round trip and commit them one by one. Equal outcomes
across batch sizes, the compiled and the numpy path, and executors (table, in-process
shards, Ray shard actors with Ray binding tasks) show that neither a batch nor the kernels change any pod's decision: filter/score state, nominations, preemption, host-selection randomness
and requeueing.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config, parse_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.queue.types import Location
from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_pod
from cluster_sched.testing.random_cluster import random_workload

_runs = itertools.count()
MAX_ROUNDS = 12


def _settle_preemption(coord: Coordinator) -> None:
    """Async preemption's victim deletions finish before the watch is read, as
    bindings do: what the coordinator reads then never depends on thread timing."""
    for fwk in coord.frameworks.values():
        wait = getattr(fwk.handle.preemption_executor, "wait_idle", None)
        if wait is not None:
            assert wait(30.0), "preemptions did not finish"


def _drive(coord: Coordinator, clock: FakeClock) -> None:
    coord.start()
    for _ in range(MAX_ROUNDS):
        while coord.step(pop_timeout=0):
            pass
        assert coord.binder.wait_idle(30.0), "bindings did not finish"
        coord.process_binding_outcomes()
        while coord.poll_informer():
            pass
        coord.flush_done()
        clock.step(30.0)  # past every backoff
        coord.queue.flush_backoff_q_completed()
        if coord.queue.counts()[Location.ACTIVE] == 0:
            return


def _outcome(
    client: redis.Redis,
    docs: list[dict[str, Any]],
    options: ExecutorOptions,
    batch: int,
    config: SchedulerConfiguration | None = None,
) -> tuple[dict[str, str], dict[str, int]]:
    prefix = f"{{x{next(_runs)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(docs)
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        config or load_config(None),
        options=options,
        clock=clock,
        seed=5,
        prefix=prefix,
        batch_size=batch,
    )
    try:
        _drive(coord, clock)
        placements = {
            f"{d['metadata']['namespace']}/{d['metadata']['name']}": d["spec"].get("nodeName", "")
            for d in store.list("Pod")
        }
        attempts = dict(coord.stats.attempts)
        failures = {
            key: len(store.events(key=key, reason="FailedScheduling")) for key in placements
        }
        return placements, failures | {f"attempts:{k}": v for k, v in attempts.items()}
    finally:
        coord.close()


def _settle_everything(coord: Coordinator) -> None:
    """Housekeeping of the ``each pod`` driver: every binding done, every event read."""
    assert coord.binder.wait_idle(30.0), "bindings did not finish"
    _settle_preemption(coord)
    coord.process_binding_outcomes()
    while coord.poll_informer():
        pass
    coord.flush_done()


def _settle_bindings(coord: Coordinator) -> None:
    """Housekeeping of the ``rounds`` driver: every binding done, watch events unread."""
    assert coord.binder.wait_idle(30.0), "bindings did not finish"
    coord.process_binding_outcomes()
    coord.flush_done()


@pytest.fixture(params=["rounds", "each pod"])
def driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)
    poll = Coordinator.poll_informer

    def settled_poll(coord: Coordinator, block_ms: int | None = None) -> int:
        _settle_preemption(coord)
        return poll(coord, block_ms)

    monkeypatch.setattr(Coordinator, "poll_informer", settled_poll)
    if request.param == "each pod":
        monkeypatch.setattr(Coordinator, "housekeeping", _settle_everything)
    else:
        monkeypatch.setattr(Coordinator, "housekeeping", _settle_bindings)
    return str(request.param)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 10_000))
def test_batches_and_shards_give_the_serial_outcome(
    redis_client: redis.Redis, driver: str, seed: int
) -> None:
    docs = random_workload(seed)
    serial = _outcome(redis_client, docs, ExecutorOptions("local", compiled=False), batch=1)
    assert any(serial[0].values()), "the workload schedules something"
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
        assert _outcome(redis_client, docs, options, batch) == serial, (options, batch)


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


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 10_000))
def test_batches_give_the_serial_outcome_with_opportunistic_batching(
    redis_client: redis.Redis, driver: str, seed: int
) -> None:
    docs = random_workload(seed) + _one_per_node_pods(6)
    config = parse_config(SIGNABLE, "<test>")
    serial = _outcome(redis_client, docs, ExecutorOptions("local", compiled=False), 1, config)
    for options, batch in (
        (ExecutorOptions("local", compiled=False), 7),
        (ExecutorOptions("local"), 64),
        (ExecutorOptions("shards", shards=2), 5),
    ):
        got = _outcome(redis_client, docs, options, batch, config)
        assert got == serial, (options, batch)


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 10_000))
def test_ray_shards_give_the_serial_outcome(
    ray_session: None, redis_client: redis.Redis, redis_url: str, driver: str, seed: int
) -> None:
    """Real Ray shard actors (and Ray binding tasks), every attempt fanned out to them
    (``compiled=False``), with the Filter calls' speculative scores: the serial outcome."""
    docs = random_workload(seed)
    serial = _outcome(redis_client, docs, ExecutorOptions("local", compiled=False), batch=1)
    assert any(serial[0].values()), "the workload schedules something"
    for shards, batch in ((2, 64), (3, 5)):
        options = ExecutorOptions("ray", shards=shards, compiled=False, redis_url=redis_url)
        assert _outcome(redis_client, docs, options, batch) == serial, (shards, batch)
        # the reduced protocol: one shared payload per chunk, reductions back (shard_merge)
        options = ExecutorOptions(
            "ray", shards=shards, redis_url=redis_url, shard_dispatch="shards"
        )
        assert _outcome(redis_client, docs, options, batch) == serial, ("reduced", shards, batch)
