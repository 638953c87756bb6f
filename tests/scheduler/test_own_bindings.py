"""The coordinator's own bindings are applied from the store's reply, not decoded from
the watch (scheduler/own_bindings.py): what the informer then holds must be exactly what
decoding and parsing the bound manifest gives, whatever the pod's status held and
whatever other writers did in between; anything else is decoded as before."""

from __future__ import annotations

import itertools
from typing import Any

import redis
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.scheduler.own_bindings import bound_manifest
from cluster_sched.store.results import BindOutcome, BindResult
from cluster_sched.store.store import Store
from cluster_sched.testing import make_pod
from tests.scheduler.coordinator_harness import Harness, node, pod
from tests.scheduler.informer_helpers import (
    CONDITION,
    PROPERTY,
    pod_statuses,
    recording_informer,
)

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


@PROPERTY
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
    informer = recording_informer(store, seen)
    informer.list_and_watch()
    uid = informer.pods[key].uid
    if relabel:  # another writer changes the pod between our cycle and our binding
        doc = store.get("Pod", key)
        assert doc is not None
        doc["metadata"].setdefault("labels", {})["extra"] = "yes"
        store.apply(doc)
    results = store.bind_many([(key, "n1", uid, {"cpu": 1000})])
    assert results[0].ok
    informer.expected.expect(results)

    informer.poll()
    stored = store.get("Pod", key)
    after = informer.pods[key]
    assert informer.own_confirmed == 1, "our binding was not decoded"
    assert after == parse_object(stored)
    assert after.raw == stored
    assert after.node_name == "n1" and after.nominated_node_name == ""
    assert seen[-1][1] is after and seen[-1][0].labels.get("extra") == ("yes" if relabel else None)
    assert len(informer.expected) == 0


def test_a_refused_binding_registers_nothing_and_is_not_confirmed(store: Store) -> None:
    key = _applied(store, None, {})
    informer = recording_informer(store, [])
    informer.list_and_watch()
    assert store.bind(key, "n1").ok
    refused = store.bind_many([(key, "n2", None)])
    assert refused[0].outcome is BindOutcome.ALREADY_BOUND
    informer.expected.expect(refused)
    assert len(informer.expected) == 0
    informer.poll()
    assert informer.own_confirmed == 0
    assert informer.pods[key].node_name == "n1"


def test_a_registration_that_does_not_match_its_entry_means_decoding(store: Store) -> None:
    """A stale or wrong registration (another key, another node at that rv) never
    replaces what the watch says: the entry is decoded."""
    a = _applied(store, None, {})
    b = _applied(store, None, {})
    informer = recording_informer(store, [])
    informer.list_and_watch()
    (bound,) = store.bind_many([(a, "n1", None)])
    wrong = BindResult(b, "n9", BindOutcome.BOUND, bound.rv, condition=bound.condition)
    informer.expected.expect([wrong])
    informer.poll()
    assert informer.own_confirmed == 0
    assert informer.pods[a] == parse_object(store.get("Pod", a))
    assert informer.pods[b].node_name == ""


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


def test_the_coordinator_confirms_its_bindings_without_decoding(h: Harness) -> None:
    h.apply(node("n1"), *(pod(f"p{i}") for i in range(3)))
    h.start()
    for _ in range(3):
        h.cycle()
    h.settle()
    informer = h.coord.informer
    assert informer.own_confirmed == 3
    for i in range(3):
        key = f"default/p{i}"
        assert informer.pods[key] == parse_object(h.store.get("Pod", key))
        assert not h.cache.is_assumed(key), "the confirmation reached the cache"
    assert h.coord.stats.bound_node == {f"default/p{i}": "n1" for i in range(3)}


def test_bindings_of_one_reply_share_one_conditions_list_and_each_is_its_parse(
    store: Store,
) -> None:
    """Pods that had no conditions get the reply's one ``[condition]`` list (not a copy
    each, nor a sharing pass), and each pod is still the parse of its stored manifest."""
    keys = [_applied(store, None, {}) for _ in range(3)]
    informer = recording_informer(store, [])
    informer.list_and_watch()
    results = store.bind_many([(k, f"n{i}", None) for i, k in enumerate(keys)])
    assert all(r.ok for r in results)
    informer.expected.expect(results)
    informer.poll()
    assert informer.own_confirmed == 3
    pods = [informer.pods[k] for k in keys]
    for k, p in zip(keys, pods, strict=True):
        stored = store.get("Pod", k)
        assert p == parse_object(stored) and p.raw == stored
    lists = {id(p.raw["status"]["conditions"]) for p in pods if p.raw is not None}
    assert len(lists) == 1
