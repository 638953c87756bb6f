"""Our bindings' watch entries met in any order against everything else that happens to
their pods (refused and fenced bindings, foreign bindings, relabels, nominations and
PodScheduled=False written first, deletes, re-created pods, the informer reading at any
point): an informer that takes the compact path for
entries with its mark ends in exactly the state of one that decodes every entry (the
path before own_bindings.py), having made the same handler calls, so the cache and the
queue, which only those calls feed, end the same too."""

from __future__ import annotations

from typing import Any

import redis
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.errors import StoreError
from cluster_sched.scheduler.informer import Informer
from cluster_sched.scheduler.own_bindings import OwnMark
from cluster_sched.store.podstatus import unschedulable_condition
from cluster_sched.store.store import Store
from cluster_sched.testing import make_pod
from tests.scheduler.informer_helpers import PROPERTY, recording_informer

PODS = 4
NODES = ("n1", "n2")

#: one step: who does what to which pod (index), or the informer reading ``count`` entries
steps = st.one_of(
    st.tuples(
        st.sampled_from(["ours", "ours-stale-uid", "foreign", "other-mark", "fenced"]),
        st.integers(0, PODS - 1),
        st.sampled_from(NODES),
    ),
    st.tuples(st.just("nominate"), st.integers(0, PODS - 1), st.sampled_from(NODES)),
    st.tuples(
        st.sampled_from(["relabel", "recreate", "delete", "unschedulable"]),
        st.integers(0, PODS - 1),
    ),
    st.tuples(st.just("read"), st.integers(1, 5)),
)


def _manifest(i: int, label: str = "a") -> dict[str, Any]:
    return make_pod(f"p{i}").req(cpu="100m").label("app", label).manifest()


def _step(store: Store, redis_client: redis.Redis, ours: Informer, step: tuple[Any, ...]) -> int:
    """Run one step; 1 if it was a binding of ours that the store made."""
    what, *args = step
    if what == "read":
        ours.poll(count=args[0])
        return 0
    i = args[0]
    key = f"default/p{i}"
    doc = store.get("Pod", key)
    if what in ("ours", "ours-stale-uid", "foreign", "other-mark", "fenced"):
        if doc is None:
            return 0
        node = args[1]
        uid = doc["metadata"]["uid"] if what != "ours-stale-uid" else "stale-uid"
        mark = {"foreign": "", "other-mark": "another-coordinator"}.get(what, ours.own.mark)
        if what == "fenced":
            redis_client.hset(store.fence.key, "token", "2")
            store.fence.token = 1
            try:
                store.bind_many([(key, node, uid)], mark=mark)
            except StoreError:  # FENCED: the whole script refused, nothing written
                pass
            finally:
                store.fence.token = 0
                redis_client.hdel(store.fence.key, "token")
            return 0
        (result,) = store.bind_many([(key, node, uid)], mark=mark)
        return int(result.ok and mark == ours.own.mark)
    if what == "nominate" and doc is not None:  # the failure handler's or preemption's
        store.update_pod_status(key, nominated_node_name=args[1])
    elif what == "unschedulable" and doc is not None:  # PodScheduled=False, then bound
        store.update_pod_status(key, condition=unschedulable_condition("0/2 nodes fit"))
    elif what == "relabel" and doc is not None:
        doc["metadata"].setdefault("labels", {})["app"] = "b"
        store.apply(doc)
    elif what == "delete" and doc is not None:
        store.delete("Pod", key)
    elif what == "recreate":
        if doc is not None:
            store.delete("Pod", key)
        store.apply(_manifest(i))
    return 0


@PROPERTY
@given(script=st.lists(steps, max_size=30))
def test_any_interleaving_ends_as_decoding_every_entry(
    store: Store, redis_client: redis.Redis, script: list[tuple[Any, ...]]
) -> None:
    redis_client.flushall()
    for i in range(PODS):
        store.apply(_manifest(i))
    seen_ours: list[tuple[Any, Any]] = []
    seen_decoding: list[tuple[Any, Any]] = []
    ours = recording_informer(store, seen_ours)
    decoding = recording_informer(store, seen_decoding)
    decoding.own = OwnMark("decodes-every-entry")  # no binding carries this mark
    ours.list_and_watch()
    decoding.list_and_watch()

    made = sum(_step(store, redis_client, ours, step) for step in script)
    while ours.poll():
        pass
    while decoding.poll():
        pass

    assert (ours.own_confirmed, ours.own_decoded) == (made, 0)
    assert decoding.own_confirmed == decoding.own_decoded == 0
    assert ours.pods.keys() == decoding.pods.keys()
    for key, pod in ours.pods.items():
        assert pod == decoding.pods[key] and pod.raw == decoding.pods[key].raw
    assert len(seen_ours) == len(seen_decoding)
    for (old_a, new_a), (old_b, new_b) in zip(seen_ours, seen_decoding, strict=True):
        assert old_a == old_b and new_a == new_b
        assert (new_a and new_a.raw) == (new_b and new_b.raw)
    assert (ours.last_rv, ours.last_id) == (decoding.last_rv, decoding.last_id)
