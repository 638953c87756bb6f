"""Runs of our own bindings handed to the event handlers in one call
(``EventHandlers.on_own_bound``) against ``on_pod`` per pod (the informer without
``on_own_bound``): the same script of arrivals, cycles, watch reads of any size,
foreign bindings, relabels and deletes, run once each way on a real coordinator, ends in
the same informer, cache, node table, run stats and queue state, key by key."""

from __future__ import annotations

from typing import Any

import numpy as np
import redis
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store
from tests.scheduler.coordinator_harness import Harness, config, node, pod
from tests.scheduler.informer_helpers import PROPERTY

PODS = 6
NODES = ("n1", "n2")

steps = st.one_of(
    st.tuples(st.sampled_from(["add", "delete", "relabel"]), st.integers(0, PODS - 1)),
    st.tuples(st.just("foreign"), st.integers(0, PODS - 1), st.sampled_from(NODES)),
    st.tuples(st.just("cycle"), st.integers(1, 4)),
    st.tuples(st.just("read"), st.integers(1, 6)),
    st.tuples(st.just("outcomes")),
)


def _manifest(i: int, label: str = "a") -> dict[str, Any]:
    doc = pod(f"p{i}", cpu="100m").label("app", label).manifest()
    if i % 3 == 2:  # an extended resource: the run stats keep those per pod
        doc["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    doc["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"  # not the wall clock
    return doc


def _step(h: Harness, store: Store, step: tuple[Any, ...]) -> None:
    what, *args = step
    coord = h.coord
    if what == "read":  # a watch read of any size: runs of our bindings split anywhere
        coord.informer.poll(count=args[0])
        coord.handlers.flush()
    elif what == "cycle":
        for _ in range(args[0]):
            info = coord.queue.pop(timeout=0.01)
            if info is None:
                break
            coord.schedule_one(info, coord.queue.last_pop_cycle)
            coord.flush_done()
            # written, not yet read back; one at a time, so in the same order each run
            assert coord.binder.wait_idle(h.patience)
    elif what == "outcomes":
        coord.process_binding_outcomes()
    else:
        key = f"default/p{args[0]}"
        doc = store.get("Pod", key)
        if what == "add" and doc is None:
            store.apply(_manifest(args[0]))
        elif what == "delete" and doc is not None:
            store.delete("Pod", key)
        elif what == "relabel" and doc is not None:
            doc["metadata"].setdefault("labels", {})["app"] = "b"
            store.apply(doc)
        elif what == "foreign" and doc is not None:  # another binder's: no mark
            store.bind_many([(key, args[1], None)])


def _timeless(doc: Any) -> Any:
    """``doc`` without its conditions' lastTransitionTime (the binding's wall clock)."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if k != "lastTransitionTime"}
    if isinstance(doc, list):
        return [_timeless(v) for v in doc]
    return doc


def _state(coord: Coordinator) -> dict[str, Any]:
    """Everything the pod handlers feed, by key."""
    cache, stats, table = coord.cache, coord.stats, coord.cache.sink.table
    flight = coord.queue.in_flight_events
    infos, summary = coord.queue.pending_pods()
    return {
        "informer": {k: (p, _timeless(p.raw)) for k, p in coord.informer.pods.items()},
        "cache": {
            k: (s.pod, s.node_name, s.assumed, s.binding_finished, s.deadline)
            for k, s in cache.pod_states.items()
        },
        "assumed": set(cache.assumed),
        "node_pods": {n: set(keys) for n, keys in cache.node_pods.items() if keys},
        "generation": cache.generation,
        "requested": np.asarray(table.requested).tolist(),
        "row_pods": [dict(r) for r in table.row_pods],
        "bound_at": dict(stats.bound_at),
        "bound_node": dict(stats.bound_node),
        "placements": list(stats.placement_log),
        "per_namespace": dict(stats.bound_per_namespace),
        "extended": dict(stats.extended_requests),
        "last_bind": stats.last_bind,
        "attempts": dict(stats.attempts),
        "enqueued_at": dict(stats.enqueued_at),
        "queue": ([(i.pod_key, i.timestamp, i.attempts) for i in infos], summary),
        "in_flight": (dict(flight._pods), list(flight._events)),
        "pending_assigned": [p.key for p in coord.handlers._pending_assigned],
        "pending_adds": list(coord.handlers._pending_adds),
        "own": (coord.informer.own_confirmed, coord.informer.own_decoded),
    }


def _run(
    store: Store, client: redis.Redis, script: list[tuple[Any, ...]], bulk: bool
) -> dict[str, Any]:
    client.flushall()
    h = Harness(store, client, config())
    try:
        if not bulk:
            h.coord.informer.handlers.on_own_bound = None
        store.apply_many([node(n).manifest() for n in NODES])
        store.apply_many([_manifest(i) for i in range(PODS // 2)])
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
def test_bulk_handing_on_ends_as_per_pod(
    store: Store, redis_client: redis.Redis, script: list[tuple[Any, ...]]
) -> None:
    per_pod = _run(store, redis_client, script, bulk=False)
    bulk = _run(store, redis_client, script, bulk=True)
    assert bulk.keys() == per_pod.keys()
    for part in per_pod:
        assert bulk[part] == per_pod[part], part


def test_a_run_of_bindings_is_handed_on_in_one_call(
    store: Store, redis_client: redis.Redis
) -> None:
    """Four cycles' bindings read in one poll reach ``on_own_bound`` as one run."""
    h = Harness(store, redis_client, config())
    try:
        runs: list[int] = []
        handlers = h.coord.informer.handlers
        bulk = handlers.on_own_bound
        assert bulk is not None

        def counted(pairs: list[Any]) -> None:
            runs.append(len(pairs))
            bulk(pairs)

        handlers.on_own_bound = counted
        store.apply_many([node(n).manifest() for n in NODES])
        store.apply_many([_manifest(i) for i in (0, 1, 3, 4)])  # no extended resource: all fit
        h.start()
        _step(h, store, ("cycle", 4))
        h.settle()
        assert runs == [4]
        assert len(h.coord.stats.bound_node) == 4 and not h.cache.assumed
    finally:
        h.close()
