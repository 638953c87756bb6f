"""PodTopologySpread Filter: skew, minDomains, inclusion policies, matchLabelKeys, the
missing-label reason, default constraints, and the AddPod/RemovePod extensions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.plugin_args import PodTopologySpreadArgs
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import ActionType, EventResource
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    new,
)
from cluster_sched.testing.builders import (
    ZONE_LABEL,
    make_controller,
    make_namespace,
    make_node,
    make_pod,
)
from cluster_sched.testing.isolated import explain_with_only

UNRESOLVABLE = "UnschedulableAndUnresolvable"


def run(objects: list[Any], pod: Pod, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return explain_with_only(
        ("PodTopologySpread",),
        objects,
        pod,
        {"PodTopologySpread": args} if args is not None else None,
    )


def codes(doc: dict[str, Any]) -> dict[str, str]:
    return {n: s["code"] for n, s in doc["filter"].items()}


def spread_pod(max_skew: int = 1, **kw: Any) -> Pod:
    return (
        make_pod("p")
        .label("app", "web")
        .spread(max_skew, ZONE_LABEL, match_labels={"app": "web"}, **kw)
        .obj()
    )


def web(name: str, node: str, ns: str = "default") -> Pod:
    return make_pod(name, ns).label("app", "web").node(node).obj()


def test_skew_over_max_is_unschedulable() -> None:
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("b1").zone("b").obj(),
        web("w1", "a1"),
        web("w2", "a1"),
    ]
    doc = run(objs, spread_pod(1))
    assert codes(doc) == {"a1": "Unschedulable", "b1": "Success"}
    assert doc["filter"]["a1"]["reasons"] == [ERR_REASON_CONSTRAINTS_NOT_MATCH]


def test_missing_topology_label_is_unresolvable() -> None:
    doc = run([make_node("a1").zone("a").obj(), make_node("bare").obj()], spread_pod(1))
    assert codes(doc) == {"a1": "Success", "bare": UNRESOLVABLE}
    assert doc["filter"]["bare"]["reasons"] == [ERR_REASON_NODE_LABEL_NOT_MATCH]


def test_min_domains_treats_the_global_minimum_as_zero() -> None:
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("b1").zone("b").obj(),
        web("w1", "a1"),
        web("w2", "b1"),
    ]
    assert set(codes(run(objs, spread_pod(1))).values()) == {"Success"}
    assert set(codes(run(objs, spread_pod(1, min_domains=3))).values()) == {"Unschedulable"}


def test_other_namespaces_and_terminating_pods_do_not_count() -> None:
    doomed = make_pod("t").label("app", "web").node("a1").manifest()
    doomed["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("b1").zone("b").obj(),
        make_namespace("other"),
        web("o1", "a1", "other"),
        web("o2", "a1", "other"),
        parse_pod(doomed, source="<test>"),
    ]
    assert set(codes(run(objs, spread_pod(1))).values()) == {"Success"}


@pytest.mark.parametrize(("policy", "want"), [("Honor", "Success"), ("Ignore", "Unschedulable")])
def test_node_affinity_policy(policy: str, want: str) -> None:
    # zone c holds no node the pod may use; with Honor it is not a domain at all
    objs = [
        make_node("a1").zone("a").label("disk", "ssd").obj(),
        make_node("c1").zone("c").obj(),
        web("w1", "a1"),
    ]
    pod = (
        make_pod("p")
        .label("app", "web")
        .node_selector("disk", "ssd")
        .spread(1, ZONE_LABEL, match_labels={"app": "web"}, node_affinity_policy=policy)
        .obj()
    )
    assert codes(run(objs, pod))["a1"] == want


@pytest.mark.parametrize(("policy", "want"), [("Honor", "Success"), ("Ignore", "Unschedulable")])
def test_node_taints_policy(policy: str, want: str) -> None:
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("c1").zone("c").taint("dedicated", "x").obj(),
        web("w1", "a1"),
    ]
    pod = (
        make_pod("p")
        .label("app", "web")
        .spread(1, ZONE_LABEL, match_labels={"app": "web"}, node_taints_policy=policy)
        .obj()
    )
    assert codes(run(objs, pod))["a1"] == want


def test_match_label_keys_count_only_the_pods_revision() -> None:
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("b1").zone("b").obj(),
        make_pod("old1").labels({"app": "web", "rev": "1"}).node("a1").obj(),
        make_pod("old2").labels({"app": "web", "rev": "1"}).node("a1").obj(),
    ]
    pod = (
        make_pod("p")
        .labels({"app": "web", "rev": "2"})
        .spread(1, ZONE_LABEL, match_labels={"app": "web"}, match_label_keys=["rev"])
        .obj()
    )
    assert set(codes(run(objs, pod)).values()) == {"Success"}


def test_null_selector_counts_nothing_and_does_not_self_match() -> None:
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("b1").zone("b").obj(),
        web("w1", "a1"),
        web("w2", "a1"),
    ]
    pod = make_pod("p").label("app", "web").spread(1, ZONE_LABEL).obj()
    assert set(codes(run(objs, pod)).values()) == {"Success"}


def test_list_defaulting_applies_default_constraints_to_selected_pods() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("b1").zone("b").obj(),
        web("w1", "a1"),
        web("w2", "a1"),
        make_controller("Service", "svc", {"app": "web"}),
    ]
    pod = make_pod("p").label("app", "web").obj()
    assert codes(run(objs, pod, args)) == {"a1": "Unschedulable", "b1": "Success"}
    unselected = make_pod("q").label("app", "other").obj()
    assert set(codes(run(objs, unselected, args)).values()) == {"Success"}


def test_events_to_register_are_upstreams() -> None:
    pl = new(None, Handle())
    events = {e.resource: e.action_type for e in pl.events_to_register()}
    assert events[EventResource.POD] == (
        ActionType.ADD
        | ActionType.UPDATE_POD_LABEL
        | ActionType.UPDATE_POD_TOLERATION
        | ActionType.DELETE
    )
    assert events[EventResource.NODE] == (
        ActionType.ADD
        | ActionType.DELETE
        | ActionType.UPDATE_NODE_LABEL
        | ActionType.UPDATE_NODE_TAINT
    )


# ---------------------------------------------------------------------------- property


@settings(max_examples=80, deadline=None)
@given(
    per_zone=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    max_skew=st.integers(1, 3),
    min_domains=st.one_of(st.none(), st.integers(1, 5)),
    self_match=st.booleans(),
)
def test_filter_never_admits_more_skew_than_max_skew(
    per_zone: list[int], max_skew: int, min_domains: int | None, self_match: bool
) -> None:
    objs: list[Any] = [make_namespace("default")]
    for z, n in enumerate(per_zone):
        objs.append(make_node(f"n{z}").zone(f"z{z}").obj())
        objs += [web(f"w{z}-{i}", f"n{z}") for i in range(n)]
    label = "web" if self_match else "other"
    pod = (
        make_pod("p")
        .label("app", label)
        .spread(max_skew, ZONE_LABEL, match_labels={"app": "web"}, min_domains=min_domains)
        .obj()
    )
    cache = Cache()
    cache.load(objs)
    pl = new(PodTopologySpreadArgs(), Handle(snapshot=cache.snapshot))
    state = CycleState()
    pl.pre_filter(state, pod, cache.snapshot)
    table = cache.sink.table  # type: ignore[attr-defined]
    rows = table.rows_of([f"n{z}" for z in range(len(per_zone))])
    passed = pl.filter(state, pod, NodeSlice(table, rows)).codes == 0
    low = 0 if min_domains is not None and len(per_zone) < min_domains else min(per_zone)
    for z, ok in enumerate(passed.tolist()):
        assert ok == (per_zone[z] + int(self_match) - low <= max_skew)
        if ok and self_match:  # placing the pod there keeps the skew within bounds
            after = list(per_zone)
            after[z] += 1
            assert after[z] - low <= max_skew


# ---------------------------------------------------------------------------- extensions

P = (
    make_pod("p")
    .label("app", "web")
    .spread(1, ZONE_LABEL, match_labels={"app": "web"})
    .spread(2, "kubernetes.io/hostname", match_labels={"app": "web"})
    .obj()
)


def _cluster(extra: Pod | None) -> Cache:
    cache = Cache()
    cache.load(
        [
            make_namespace("default"),
            make_namespace("other"),
            *[make_node(f"n{i}").zone("ab"[i % 2]).obj() for i in range(4)],
            web("w0", "n0"),
            web("w1", "n1"),
            web("w2", "n2"),
            *([extra] if extra else []),
        ]
    )
    return cache


EXTRAS = {
    "matching": web("x", "n0"),
    "other-namespace": web("y", "n1", "other"),
    "not-matching": make_pod("z").label("app", "db").node("n3").obj(),
}


def _verdicts(cache: Cache, state: CycleState, pl: Any) -> list[int]:
    table = cache.sink.table  # type: ignore[attr-defined]
    return pl.filter(state, P, NodeSlice(table, table.order())).codes.tolist()


@pytest.mark.parametrize("name", list(EXTRAS))
def test_add_and_remove_pod_match_prefilter(name: str) -> None:
    extra = EXTRAS[name]
    without, with_ = _cluster(None), _cluster(extra)
    pl = new(None, Handle(snapshot=without.snapshot))
    added = CycleState()
    pl.pre_filter(added, P, without.snapshot)
    pl.add_pod(added, P, extra, extra.node_name)
    fresh = CycleState()
    pl.pre_filter(fresh, P, with_.snapshot)
    assert _verdicts(without, added, pl) == _verdicts(with_, fresh, pl)
    pl.remove_pod(fresh, P, extra, extra.node_name)
    base = CycleState()
    pl.pre_filter(base, P, without.snapshot)
    assert _verdicts(with_, fresh, pl) == _verdicts(without, base, pl)


def test_filter_works_on_simulation_subsets() -> None:
    cache = _cluster(None)
    pl = new(None, Handle(snapshot=cache.snapshot))
    state = CycleState()
    pl.pre_filter(state, P, cache.snapshot)
    table = cache.sink.table  # type: ignore[attr-defined]
    full = pl.filter(state, P, NodeSlice(table, table.order())).codes
    for i, row in enumerate(table.order().tolist()):
        sub = table.subset(np.asarray([row]))
        assert pl.filter(state, P, NodeSlice(sub, np.zeros(1, dtype=np.int64))).codes[0] == full[i]
