"""The shard relay (``workers.ray_relay``) on a real local Ray: every shard keeps the
coordinator's order across the relayed lane and the direct one, and a lost relay loses
no pod and changes no placement."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import redis

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.handle import Handle
from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.scheduler.shards.merge import ReducedBatch, predict_windows
from cluster_sched.scheduler.shards.source import ShardRouter
from cluster_sched.testing.builders import make_pod
from tests.scheduler.shards.shard_runs import reducible_workload, run_outcome
from workers.ray_shard import ray_shard_clients
from workers.shard_wire import snapshot_facts

pytestmark = pytest.mark.usefixtures("ray_session")

#: nodes of the ordering test: shard 1's share takes its actor long enough to apply
#: (~1 s) that the calls after it are all issued while it runs
ORDER_NODES = 40_000


def _node(i: int) -> Node:
    alloc = {CPU: 4000, MEMORY: 32 << 30, PODS: 110}
    labels = {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}"}
    return Node(ObjectMeta(f"n{i}", labels=labels), allocatable=alloc, capacity=alloc)


def _cluster(nodes: int, shards: int) -> tuple[ShardRouter, Cache, bytes, int]:
    """A replica of ``nodes`` nodes over ``shards`` shards (deltas waiting), the first
    chunk's payload of 8 pods' questions and their window."""
    router = ShardRouter(shards)
    cache = Cache(router)
    for i in range(nodes):
        cache.add_node(_node(i))
    profile = default_config().profiles[0]
    handle = Handle(profile_name=profile.scheduler_name, rng=random.Random(0))
    handle.snapshot = cache.snapshot
    fwk = new_framework(profile, handle)
    pods = [make_pod(f"p{j}").req(cpu="100m", memory="500Mi").obj() for j in range(8)]
    items = predict_windows({fwk.profile_name: fwk}, pods, router.table, cache.snapshot, 0, None)
    payloads, _ = ReducedBatch().encode(
        items, router.table, cache.snapshot, snapshot_facts, True, router.shard_of_row, shards
    )
    return router, cache, payloads[0], items[0].width


def _columns(reply: Any) -> list[list[int]]:
    """A shard's reduction of a chunk without its busy time: what must be equal."""
    _, _, chunk = reply
    return [np.asarray(getattr(chunk, k)).tolist() for k in ("status", "best", "rows", "bits")]


def test_a_direct_call_after_relayed_ones_runs_after_them_on_its_shard() -> None:
    """Shard 1 is busy applying its share of the cluster (a direct call); chunk R0 goes
    through the relay, which waits for shard 1; chunk R1, the same questions, queues at
    the relay; then a direct apply A fills every node of shard 0. Issued after R1, A
    must run after it: R1's answer from shard 0 is R0's. Ray alone would run A first
    (it reaches shard 0 directly, R1 only once the relay is done with R0): without
    ``ShardRelay``'s gate R1 sees shard 0 full and this fails."""
    router, cache, payload, window = _cluster(ORDER_NODES, 2)
    payloads = [payload]
    clients = ray_shard_clients(2, seed=1, relay=True)
    try:
        big = clients[1].submit_apply(router.take_deltas(1))  # direct, not waited for
        r0 = clients[0].submit_reduce_all(clients, router.take_deltas, payloads[0])
        r1 = clients[0].submit_reduce_all(clients, lambda s: [], payloads[0])
        assert r0 is not None and r1 is not None, "both chunks went through the relay"
        table = router.table
        for row in table.order()[:window].tolist():  # every node of the window full
            name = table.names[row]
            assert name is not None
            filler = make_pod(f"fill-{name}").req(cpu="4").obj()
            cache.assume_pod(replace(filler, node_name=name), name)
        a = clients[0].submit_apply(router.take_deltas(0))
        first, second = r0[0][0].result(), r1[0][0].result()
        a.result()
        big.result()
        assert _columns(second) == _columns(first)
        # and A did reach shard 0: the same chunk now finds no room there
        r2 = clients[0].submit_reduce_all(clients, lambda s: [], payloads[0])
        assert r2 is not None
        assert _columns(r2[0][0].result()) != _columns(first)
    finally:
        for c in clients:
            c.close()


def test_a_relay_lost_with_calls_in_flight_leaves_every_shard_unknown_until_rebuilt() -> None:
    """The relay dies while shard 1 takes its share of the cluster (a relayed chunk) and
    a second chunk waits at the relay: which shards took which deltas is unknown, so a
    direct call to any shard fails as to a dead actor, no chunk is relayed until every
    shard is rebuilt from the replica, and then a new relay answers as direct calls do."""
    import ray

    from cluster_sched.scheduler.shards.source import ShardLostError

    router, _, payload, _ = _cluster(ORDER_NODES, 3)
    clients = ray_shard_clients(3, seed=1, relay=True)
    relay = clients[0].relay
    assert relay is not None
    try:
        assert clients[0].submit_reduce_all(clients, router.take_deltas, payload) is not None
        assert clients[0].submit_reduce_all(clients, lambda s: [], payload) is not None
        ray.kill(relay.actor, no_restart=True)
        with pytest.raises(ShardLostError):
            clients[2].submit_apply([]).result()
        assert relay.unknown == {0, 1, 2}
        assert clients[0].submit_reduce_all(clients, lambda s: [], payload) is None
        for c in clients:
            c.rebuild(router.full_state_deltas(c.shard_id))
        relayed = clients[0].submit_reduce_all(clients, lambda s: [], payload)
        assert relayed is not None and relay.restarts == 1
        shared = clients[0].share(payload)
        direct = [c.submit_reduce([], shared, len(payload))[0] for c in clients]
        for (part, _), call in zip(relayed, direct, strict=True):
            assert _columns(part.result()) == _columns(call.result())
    finally:
        for c in clients:
            c.close()


def test_a_lost_relay_loses_no_pod_and_changes_no_placement(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """The relay is killed (``ray.kill``) after the third turn: every shard is rebuilt
    from the replica before its next call, a new relay takes the next chunks, and the
    placements, FailedScheduling counts and attempts are the serial loop's."""
    import ray

    docs = reducible_workload(0)
    serial = run_outcome(redis_client, docs, ExecutorOptions("local", compiled=False), 1)
    steps: list[int] = []
    seen: dict[str, int] = {}

    def kill_once(coord: Coordinator) -> None:
        steps.append(1)
        relay = coord.source.clients[0].relay  # type: ignore[attr-defined]
        if len(steps) == 3:
            seen["relayed_before"] = relay.chunks
            ray.kill(relay.actor, no_restart=True)

    def inspect(coord: Coordinator) -> None:
        relay = coord.source.clients[0].relay  # type: ignore[attr-defined]
        seen.update(restarts=relay.restarts, relayed=relay.chunks, enabled=relay.enabled)
        seen["rebuilds"] = coord.source.rebuilds  # type: ignore[attr-defined]

    options = ExecutorOptions(
        "ray", shards=3, redis_url=redis_url, shard_dispatch="shards", shard_relay="on"
    )
    placements, counts, counters = run_outcome(redis_client, docs, options, 7, inspect, kill_once)
    assert (placements, counts) == serial[:2]
    assert seen["relayed_before"] > 0, seen
    assert seen["restarts"] == 1 and seen["enabled"], seen
    assert seen["rebuilds"] >= 3, seen  # every shard: which took the lost calls is unknown
    assert seen["relayed"] > seen["relayed_before"], seen  # the new relay took chunks
    assert counters["reduced_attempts"] > 0, counters
