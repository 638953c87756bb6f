"""Shards on other machines: a Ray cluster of several raylets on this host
(``ray.cluster_utils.Cluster``), the shard actors pinned off the head node by a custom
resource only the worker nodes have, the coordinator joining by address. The reduced
protocol gives the placements the serial loop gives, directly and through the shard relay
(``workers.ray_relay``), which the same rule keeps off the head node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.coordinator import Coordinator
from tests.scheduler.shards.shard_runs import reducible_workload, run_outcome
from workers.ray_shard import SHARD_RESOURCE_ENV

RESOURCE = "cluster-sched-shard"


@pytest.fixture
def ray_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import ray
    from ray.cluster_utils import Cluster

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    monkeypatch.setenv(SHARD_RESOURCE_ENV, RESOURCE)
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources={RESOURCE: 1})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.raycluster
@pytest.mark.parametrize("relay", ["off", "on"])
def test_shards_off_the_head_node_give_the_serial_placements(
    ray_cluster: Any, redis_client: redis.Redis, redis_url: str, relay: str
) -> None:
    import ray

    docs = reducible_workload(11, n_nodes=120, n_pods=40)
    serial = run_outcome(redis_client, docs, ExecutorOptions("local", compiled=False), 1)
    head = ray.get_runtime_context().get_node_id()
    placed: list[str] = []
    relays: list[str] = []

    def where(coord: Coordinator) -> None:
        clients = coord.source.clients  # type: ignore[attr-defined]
        placed.extend(ray.get([c.actor.node_id.remote() for c in clients]))
        if clients[0].relay is not None:
            relays.append(ray.get(clients[0].relay.actor.node_id.remote()))

    options = ExecutorOptions(
        "ray",
        shards=2,
        ray_address=ray_cluster.address,
        redis_url=redis_url,
        shard_dispatch="shards",
        shard_relay=relay,
    )
    placements, counts, counters = run_outcome(redis_client, docs, options, 64, where)
    assert (placements, counts) == serial[:2]
    assert counters["reduced_attempts"] > 0, counters
    assert len(placed) == 2 and head not in placed, (head, placed)
    assert len(relays) == (relay == "on") and head not in relays, (head, relays)
    assert (counters["reduced_relayed_payloads"] > 0) == (relay == "on"), counters
