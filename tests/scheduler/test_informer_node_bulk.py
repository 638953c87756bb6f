"""Runs of new nodes handed to the event handlers in one call
(``EventHandlers.on_nodes_added``: the cache and node table take them in bulk) against
``on_node`` per node (the informer without ``on_nodes_added``): the same script of node
adds, updates (zone and resource changes), deletes and re-adds, pods bound to nodes that
do not exist yet (their pods wait for the node), pending pods, scheduling cycles and
watch reads of any size (runs of node adds split anywhere, pods between them), run once
each way on a real coordinator, ends in the same informer, cache, node table (every
column, the order, the versions), placements and queue state."""

from __future__ import annotations

from typing import Any

import redis
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store
from tests.nodetable.table_state import table_state
from tests.scheduler.coordinator_harness import Harness, config, node, pod
from tests.scheduler.informer_helpers import PROPERTY

NODES = 6
PODS = 8

steps = st.one_of(
    st.tuples(st.just("node"), st.integers(0, NODES - 1), st.integers(0, 3)),
    st.tuples(st.just("nodes"), st.lists(st.integers(0, NODES - 1), min_size=1, max_size=5)),
    st.tuples(st.just("delete-node"), st.integers(0, NODES - 1)),
    st.tuples(st.just("pod"), st.integers(0, PODS - 1)),
    st.tuples(st.just("bound"), st.integers(0, PODS - 1), st.integers(0, NODES - 1)),
    st.tuples(st.just("cycle"), st.integers(1, 3)),
    st.tuples(st.just("read"), st.integers(1, 8)),
)


def _node(i: int, variant: int = 0) -> dict[str, Any]:
    b = node(f"n{i}", cpu=str(2 + variant % 2), pods=4 + variant).zone(f"z{(i + variant) % 2}")
    if variant == 2:
        b = b.label("disk", "ssd").capacity({"example.com/gpu": 1})
    if variant == 3:
        b = b.taint("dedicated", "x").image("registry.k8s.io/pause:3.10", 700_000)
    return b.manifest()


def _pod(i: int, node_name: str = "") -> dict[str, Any]:
    b = pod(f"p{i}", cpu="500m")
    if node_name:
        b = b.node(node_name)
    doc = b.manifest()
    doc["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"  # not the wall clock
    return doc


def _step(h: Harness, store: Store, step: tuple[Any, ...]) -> None:
    what, *args = step
    coord = h.coord
    if what == "read":
        coord.informer.poll(count=args[0])
        coord.handlers.flush()
    elif what == "cycle":
        for _ in range(args[0]):
            info = coord.queue.pop(timeout=0.01)
            if info is None:
                break
            coord.schedule_one(info, coord.queue.last_pop_cycle)
            coord.flush_done()
            assert coord.binder.wait_idle(h.patience)
    elif what == "node":
        store.apply(_node(args[0], args[1]))
    elif what == "nodes":
        store.apply_many([_node(i, 0) for i in args[0]])
    elif what == "delete-node":
        if store.get("Node", f"n{args[0]}") is not None:
            store.delete("Node", f"n{args[0]}")
    elif what == "pod":
        if store.get("Pod", f"default/p{args[0]}") is None:
            store.apply(_pod(args[0]))
    elif store.get("Pod", f"default/p{args[0]}") is None:  # bound elsewhere, maybe early
        store.apply(_pod(args[0], f"n{args[1]}"))


def _view(n: Any) -> tuple[Any, ...]:
    """A node without its manifest and timestamps (the store's wall clock)."""
    return (n.name, dict(n.labels), dict(n.allocatable), n.taints, n.unschedulable, n.images)


def _state(coord: Coordinator) -> dict[str, Any]:
    cache, table = coord.cache, coord.cache.sink.table  # type: ignore[attr-defined]
    infos, summary = coord.queue.pending_pods()
    return {
        "informer_nodes": [_view(n) for n in coord.informer.nodes.values()],
        "informer_pods": {k: p.node_name for k, p in coord.informer.pods.items()},
        "cache_nodes": [_view(n) for n in cache.nodes.values()],
        "table_nodes": [None if n is None else _view(n) for n in table.nodes],
        "node_pods": {n: set(keys) for n, keys in cache.node_pods.items()},
        "generation": cache.generation,
        "images": dict(cache.snapshot.images),
        "num_nodes": cache.snapshot.num_nodes,
        "table": table_state(table),
        "names": list(table.names),
        "index": list(table.index.items()),
        "free_rows": list(table._free_rows),
        "node_version": table.node_version,
        "order": table.order().tolist(),
        "labels": {k: v.tolist() for k, v in table.labels.items()},
        "zones": (list(table.zones.values), list(table.zone_list._rank.items())),
        "placements": list(coord.stats.placement_log),
        "bound_node": dict(coord.stats.bound_node),
        "queue": ([(i.pod_key, i.timestamp, i.attempts) for i in infos], summary),
    }


def _run(
    store: Store, client: redis.Redis, script: list[tuple[Any, ...]], bulk: bool
) -> dict[str, Any]:
    client.flushall()
    h = Harness(store, client, config())
    try:
        if not bulk:
            h.coord.informer.handlers.on_nodes_added = None
        store.apply_many([_node(i) for i in range(2)] + [_pod(0), _pod(1, "n3")])
        h.start()
        for step in script:
            _step(h, store, step)
        h.settle()
        while h.coord.poll_informer():
            pass
        return _state(h.coord)
    finally:
        h.close()


@PROPERTY
@given(script=st.lists(steps, max_size=25))
def test_bulk_node_adds_end_as_per_node(
    store: Store, redis_client: redis.Redis, script: list[tuple[Any, ...]]
) -> None:
    per_node = _run(store, redis_client, script, bulk=False)
    bulk = _run(store, redis_client, script, bulk=True)
    assert bulk.keys() == per_node.keys()
    for part in per_node:
        assert bulk[part] == per_node[part], part


def test_a_run_of_node_adds_is_handed_on_in_one_call(
    store: Store, redis_client: redis.Redis
) -> None:
    """The listing's nodes, then a watch batch's: each run in one call, a pod between
    two node adds splitting the run (the pod's handler sees the nodes before it)."""
    h = Harness(store, redis_client, config())
    try:
        runs: list[list[str]] = []
        handlers = h.coord.informer.handlers
        bulk = handlers.on_nodes_added
        assert bulk is not None
        on_pod = handlers.on_pod

        def counted(nodes: list[Any]) -> None:
            runs.append([n.name for n in nodes])
            bulk(nodes)

        def seen(old: Any, new: Any) -> None:
            runs.append([f"pod sees {len(h.cache.nodes)} nodes"])
            on_pod(old, new)

        handlers.on_nodes_added = counted
        handlers.on_pod = seen
        store.apply_many([_node(i) for i in range(3)])
        h.start()
        store.apply_many([_node(3), _node(4), _pod(0), _node(5)])
        h.coord.poll_informer()
        assert runs == [
            ["n0", "n1", "n2"],
            ["n3", "n4"],
            ["pod sees 5 nodes"],
            ["n5"],
        ]
    finally:
        h.close()
