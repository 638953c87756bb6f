"""The coordinator's own bindings are known from the mark bind.lua writes into their watch
entries, not decoded (scheduler/own_bindings.py): what the informer then holds must be
exactly what decoding and parsing the bound manifest gives, whatever the pod's status
held and whatever other writers did in between, and whether the binder's reply came
before the entry or not; every other entry (refused, fenced, foreign bindings,
re-created pods) is decoded as before."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import redis
from hypothesis import example, given
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.errors import StoreError
from cluster_sched.scheduler.informer import Informer
from cluster_sched.scheduler.own_bindings import OwnMark, bound_manifest
from cluster_sched.store.fence import is_fenced_error
from cluster_sched.store.results import BindOutcome
from cluster_sched.store.store import Store
from cluster_sched.testing import make_node, make_pod
from tests.scheduler.coordinator_harness import Harness, node, pod
from tests.scheduler.informer_helpers import (
    CONDITION,
    PROPERTY,
    pod_statuses,
    recording_informer,
)
from workers.ray_binding import ray_binding_executor

_names = itertools.count()

#: conditions as bind.lua may meet them: typed entries, one without a type, or no list
condition_entries = st.one_of(
    CONDITION,
    CONDITION.map(lambda c: {**c, "lastTransitionTime": "2025-01-01T00:00:00Z"}),
    st.just({"status": "True"}),
)
statuses = pod_statuses(st.one_of(st.lists(condition_entries, max_size=4), st.just("odd")))


def _applied(store: Store, status: dict[str, Any] | None, labels: dict[str, str]) -> str:
    name = f"p{next(_names)}"
    built = make_pod(name).req(cpu="1")
    for k, v in labels.items():
        built = built.label(k, v)
    doc = built.manifest()
    if status is not None:
        doc["status"] = status
    store.apply(doc)
    return f"default/{name}"


def _watching(store: Store, seen: list[tuple[Any, Any]] | None = None) -> Informer:
    informer = recording_informer(store, [] if seen is None else seen)
    informer.list_and_watch()
    return informer


@PROPERTY
@example(  # PodScheduled already True: bind.lua keeps that condition as it is
    status={"conditions": [{"type": "PodScheduled", "status": "True"}], "phase": "Pending"},
    labels={},
    relabel=False,
)
@given(
    status=statuses,
    labels=st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"])),
    relabel=st.booleans(),
)
def test_an_own_binding_is_the_parse_of_the_stored_bound_manifest(
    store: Store,
    redis_client: redis.Redis,
    status: dict[str, Any] | None,
    labels: dict[str, str],
    relabel: bool,
) -> None:
    redis_client.flushall()
    key = _applied(store, status, labels)
    seen: list[tuple[Any, Any]] = []
    informer = _watching(store, seen)
    uid = informer.pods[key].uid
    if relabel:  # another writer changes the pod between our cycle and our binding
        doc = store.get("Pod", key)
        assert doc is not None
        doc["metadata"].setdefault("labels", {})["extra"] = "yes"
        store.apply(doc)
    results = store.bind_many([(key, "n1", uid, {"cpu": 1000})], mark=informer.own.mark)
    assert results[0].ok

    informer.poll()  # the reply was never handed to the informer: the entry says it all
    stored = store.get("Pod", key)
    after = informer.pods[key]
    assert (informer.own_confirmed, informer.own_decoded) == (1, 0), "our binding was decoded"
    assert after == parse_object(stored)
    assert after.raw == stored
    assert after.node_name == "n1" and after.nominated_node_name == ""
    assert seen[-1][1] is after and seen[-1][0].labels.get("extra") == ("yes" if relabel else None)


def test_the_entry_of_a_marked_binding_carries_what_bind_lua_changed(
    store: Store, redis_client: redis.Redis
) -> None:
    """``by``, ``node`` and ``cond`` are exactly what rebuilds the stored manifest from
    the pod as it was; an unmarked binding's entry carries none of them."""
    a, b = _applied(store, None, {}), _applied(store, None, {})
    before = store.get("Pod", a)
    assert before is not None
    (bound,) = store.bind_many([(a, "n1", None)], mark="m1")
    assert store.bind_many([(b, "n2", None)])[0].ok
    marked, plain = redis_client.xrange(store.keys.events, "-", "+")[-2:]
    fields = marked[1]
    assert (fields[b"by"], fields[b"node"], fields[b"key"]) == (b"m1", b"n1", a.encode())
    binding = OwnMark("m1").binding(fields)
    assert binding is not None and binding.condition == bound.condition
    assert bound_manifest(before, "n1", bound.rv, binding.condition) == store.get("Pod", a)
    assert not {b"by", b"node", b"cond"} & set(plain[1])


def test_refused_bindings_write_no_mark_and_are_decoded_as_before(store: Store) -> None:
    """Already bound (someone else's binding first), a re-created pod (another uid) and
    an over-committed node: our binding writes nothing; the writes that did happen are
    decoded, and the informer holds what the store holds."""
    taken, recreated = _applied(store, None, {}), _applied(store, None, {})
    informer = _watching(store)
    old_uid = informer.pods[recreated].uid
    assert store.bind(taken, "n1").ok  # a foreign binding, unmarked
    store.delete("Pod", recreated)
    store.apply(make_pod(recreated.split("/")[1]).req(cpu="1").manifest())
    store.apply(make_node("small").capacity(cpu="1", memory="1Gi", pods=10).manifest())
    big = _applied(store, None, {})
    got = store.bind_many(
        [(taken, "n2", None), (recreated, "n2", old_uid), (big, "small", None, {"cpu": 2000}, [])],
        mark=informer.own.mark,
        check_fit=True,
    )
    assert [r.outcome for r in got] == [
        BindOutcome.ALREADY_BOUND,
        BindOutcome.UID_MISMATCH,
        BindOutcome.OVER_COMMITTED,
    ]
    informer.poll()
    assert (informer.own_confirmed, informer.own_decoded) == (0, 0)
    for key in (taken, recreated, big):
        assert informer.pods[key] == parse_object(store.get("Pod", key))
    assert informer.pods[taken].node_name == "n1"
    assert informer.pods[recreated].uid != old_uid and not informer.pods[recreated].node_name


def test_foreign_and_fenced_bindings_are_decoded(store: Store, redis_client: redis.Redis) -> None:
    """Another coordinator's mark, and our own binding refused by fencing (a lost lease:
    the whole script is refused), never take the compact path."""
    ours, theirs, fenced = (_applied(store, None, {}) for _ in range(3))
    informer = _watching(store)
    assert store.bind_many([(theirs, "n2", None)], mark="another-coordinator")[0].ok
    redis_client.hset(store.fence.key, "token", "7")
    store.fence.token = 6  # deposed: the lease moved on
    with pytest.raises(StoreError) as refused:
        store.bind_many([(fenced, "n1", None)], mark=informer.own.mark)
    assert is_fenced_error(refused.value.__cause__)
    store.fence.token = 7
    assert store.bind_many([(ours, "n1", None)], mark=informer.own.mark)[0].ok
    informer.poll()
    assert (informer.own_confirmed, informer.own_decoded) == (1, 0)
    for key in (ours, theirs, fenced):
        assert informer.pods[key] == parse_object(store.get("Pod", key))
    assert not informer.pods[fenced].node_name


def test_a_marked_entry_the_informer_cannot_rebuild_is_decoded_and_counted(
    store: Store,
) -> None:
    """Our binding of a pod the informer does not hold unbound (here: forgotten by hand)
    is decoded as before, and counted in ``own_decoded``."""
    key = _applied(store, None, {})
    informer = _watching(store)
    del informer.pods[key]
    assert store.bind_many([(key, "n1", None)], mark=informer.own.mark)[0].ok
    informer.poll()
    assert (informer.own_confirmed, informer.own_decoded) == (0, 1)
    assert informer.pods[key] == parse_object(store.get("Pod", key))


def test_parts_bind_lua_rewrites_whole_are_left_to_decoding() -> None:
    doc = make_pod("p").req(cpu="1").manifest()
    cond = {"type": "PodScheduled", "status": "True"}
    assert bound_manifest({**doc, "spec": "odd"}, "n1", 5, cond) is None
    assert bound_manifest({**doc, "status": ["odd"]}, "n1", 5, cond) is None
    odd_entry = {**doc, "status": {"conditions": ["odd", {"type": "PodScheduled"}]}}
    assert bound_manifest(odd_entry, "n1", 5, cond) is None
    made = bound_manifest({**doc, "status": {"nominatedNodeName": "n2"}}, "n1", 5, cond)
    assert made is not None
    assert made["status"] == {"conditions": [cond]}
    assert made["metadata"]["resourceVersion"] == "5"


def test_unreadable_mark_fields_mean_decoding() -> None:
    mark = OwnMark("m")
    fields = {b"by": b"m", b"key": b"default/p", b"node": b"n1", b"cond": b"\xc1"}
    assert mark.binding(fields) is None  # not msgpack
    assert mark.binding({**fields, b"cond": b"\x91\x01"}) is None  # not a map
    assert mark.binding({**fields, b"node": b"\xff"}) is None
    assert mark.binding({b"by": b"m", b"key": b"default/p"}) is None


def test_the_coordinator_confirms_its_bindings_without_decoding(h: Harness) -> None:
    h.apply(node("n1"), *(pod(f"p{i}") for i in range(3)))
    h.start()
    for _ in range(3):
        h.cycle()
    h.settle()
    informer = h.coord.informer
    assert (informer.own_confirmed, informer.own_decoded) == (3, 0)
    for i in range(3):
        key = f"default/p{i}"
        assert informer.pods[key] == parse_object(h.store.get("Pod", key))
        assert not h.cache.is_assumed(key), "the confirmation reached the cache"
    assert h.coord.stats.bound_node == {f"default/p{i}": "n1" for i in range(3)}


def test_bindings_with_one_condition_share_one_conditions_list_and_each_is_its_parse(
    store: Store,
) -> None:
    """Pods that had no conditions get one ``[condition]`` list for all the bindings of
    that condition (not a copy each, nor a sharing pass), and each pod is still the
    parse of its stored manifest."""
    keys = [_applied(store, None, {}) for _ in range(3)]
    informer = _watching(store)
    results = store.bind_many(
        [(k, f"n{i}", None) for i, k in enumerate(keys)], mark=informer.own.mark
    )
    assert all(r.ok for r in results)
    informer.poll()
    assert informer.own_confirmed == 3
    pods = [informer.pods[k] for k in keys]
    for k, p in zip(keys, pods, strict=True):
        stored = store.get("Pod", k)
        assert p == parse_object(stored) and p.raw == stored
    lists = {id(p.raw["status"]["conditions"]) for p in pods if p.raw is not None}
    assert len(lists) == 1


def test_ray_tasks_bindings_are_confirmed_whenever_their_replies_come(
    ray_session: None, make_harness: Any, redis_url: str
) -> None:
    """Through the coordinator with Ray binding tasks: each task's reply (one per batch)
    may come before or after the watch entries of its bindings; either way every one of
    them takes the compact path and confirms the assumed pod in the cache."""
    mark = OwnMark()
    factory = ray_binding_executor(redis_url=redis_url, batch=2, mark=mark.mark)
    h = make_harness(binding_executor=factory, patience=120.0)
    h.coord.informer.own = mark  # the informer new_scheduler built, with the task's mark
    h.apply(node("n1"), *(pod(f"p{i}") for i in range(4)))
    h.start()
    for _ in range(4):
        h.cycle()
    h.settle()
    informer = h.coord.informer
    assert (informer.own_confirmed, informer.own_decoded) == (4, 0)
    for i in range(4):
        key = f"default/p{i}"
        assert informer.pods[key] == parse_object(h.store.get("Pod", key))
        assert not h.cache.is_assumed(key) and h.cache.pod_node(key) == "n1"
