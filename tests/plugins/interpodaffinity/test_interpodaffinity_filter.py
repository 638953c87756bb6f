"""InterPodAffinity Filter through ``explain``: required terms, symmetry, namespaces,
match/mismatchLabelKeys, the first-pod-of-a-group rule, and reasons/codes."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.framework.events import ActionType, EventResource
from cluster_sched.framework.handle import Handle
from cluster_sched.plugins.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    new,
)
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    make_namespace,
    make_node,
    make_pod,
)
from cluster_sched.testing.isolated import explain_with_only

UNRESOLVABLE = "UnschedulableAndUnresolvable"


def run(objects: list[Any], pod: Pod, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return explain_with_only(
        ("InterPodAffinity",),
        objects,
        pod,
        {"InterPodAffinity": args} if args is not None else None,
    )


def nodes(*zones: str) -> list[Any]:
    return [make_node(f"n{i}").zone(z).obj() for i, z in enumerate(zones)]


def codes(doc: dict[str, Any]) -> dict[str, str]:
    return {n: s["code"] for n, s in doc["filter"].items()}


def test_required_affinity_follows_the_matching_pods_zone() -> None:
    existing = make_pod("db").label("app", "db").node("n1").obj()
    pod = make_pod("web").pod_affinity(ZONE_LABEL, {"app": "db"}).obj()
    doc = run([*nodes("a", "b", "b"), existing], pod)
    assert codes(doc) == {"n0": UNRESOLVABLE, "n1": "Success", "n2": "Success"}
    assert doc["filter"]["n0"]["reasons"] == [ERR_REASON_AFFINITY_RULES_NOT_MATCH]
    assert doc["filter"]["n0"]["plugin"] == "InterPodAffinity"


def test_affinity_terms_must_all_match_one_pod() -> None:
    a = make_pod("a").label("app", "db").node("n0").obj()
    b = make_pod("b").label("tier", "x").node("n1").obj()
    pod = (
        make_pod("web")
        .label("app", "web")
        .pod_affinity(ZONE_LABEL, {"app": "db"})
        .pod_affinity(ZONE_LABEL, {"tier": "x"})
        .obj()
    )
    doc = run([*nodes("a", "b"), a, b], pod)
    assert set(codes(doc).values()) == {UNRESOLVABLE}


def test_first_pod_of_a_self_affine_group_goes_anywhere_with_the_topology_label() -> None:
    pod = make_pod("web").label("app", "web").pod_affinity(ZONE_LABEL, {"app": "web"}).obj()
    no_zone = make_node("bare").obj()
    doc = run([*nodes("a", "b"), no_zone], pod)
    assert codes(doc) == {"n0": "Success", "n1": "Success", "bare": UNRESOLVABLE}


def test_self_affinity_rule_needs_the_pod_to_match_its_own_terms() -> None:
    pod = make_pod("web").label("app", "web").pod_affinity(ZONE_LABEL, {"app": "db"}).obj()
    doc = run(nodes("a", "b"), pod)
    assert set(codes(doc).values()) == {UNRESOLVABLE}


def test_required_anti_affinity_rejects_the_domain_holding_a_match() -> None:
    existing = make_pod("a").label("app", "web").node("n0").obj()
    pod = make_pod("b").label("app", "web").pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"}).obj()
    doc = run([*nodes("a", "a"), existing], pod)
    assert codes(doc) == {"n0": "Unschedulable", "n1": "Success"}
    assert doc["filter"]["n0"]["reasons"] == [ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH]


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    existing = (
        make_pod("a")
        .label("app", "db")
        .pod_anti_affinity(ZONE_LABEL, {"app": "web"})
        .node("n0")
        .obj()
    )
    pod = make_pod("web").label("app", "web").obj()
    doc = run([*nodes("a", "a", "b"), existing], pod)
    assert codes(doc) == {"n0": "Unschedulable", "n1": "Unschedulable", "n2": "Success"}
    assert doc["filter"]["n1"]["reasons"] == [ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH]


def test_affinity_failure_is_reported_before_anti_affinity() -> None:
    existing = make_pod("a").label("app", "web").node("n0").obj()
    pod = (
        make_pod("b")
        .label("app", "web")
        .pod_affinity(ZONE_LABEL, {"app": "nothing"})
        .pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"})
        .obj()
    )
    doc = run([*nodes("a"), existing], pod)
    assert doc["filter"]["n0"]["reasons"] == [ERR_REASON_AFFINITY_RULES_NOT_MATCH]


def test_terms_default_to_the_pods_namespace_and_namespaces_widen_them() -> None:
    existing = make_pod("a", "other").label("app", "db").node("n0").obj()
    same_ns = make_pod("web").pod_affinity(ZONE_LABEL, {"app": "db"}).obj()
    listed = make_pod("web").pod_affinity(ZONE_LABEL, {"app": "db"}, namespaces=["other"]).obj()
    objs = [*nodes("a", "b"), make_namespace("other"), existing]
    assert set(codes(run(objs, same_ns)).values()) == {UNRESOLVABLE}
    assert codes(run(objs, listed)) == {"n0": "Success", "n1": UNRESOLVABLE}


def test_namespace_selector_selects_namespaces_by_label() -> None:
    existing = make_pod("a", "team-a").label("app", "db").node("n0").obj()
    objs = [*nodes("a", "b"), make_namespace("team-a", {"team": "a"}), existing]
    match = (
        make_pod("web")
        .pod_affinity(ZONE_LABEL, {"app": "db"}, namespace_selector={"team": "a"})
        .obj()
    )
    miss = (
        make_pod("web")
        .pod_affinity(ZONE_LABEL, {"app": "db"}, namespace_selector={"team": "b"})
        .obj()
    )
    every = make_pod("web").pod_affinity(ZONE_LABEL, {"app": "db"}, namespace_selector={}).obj()
    assert codes(run(objs, match)) == {"n0": "Success", "n1": UNRESOLVABLE}
    assert set(codes(run(objs, miss)).values()) == {UNRESOLVABLE}
    assert codes(run(objs, every)) == {"n0": "Success", "n1": UNRESOLVABLE}


def test_existing_terms_namespace_selector_reads_the_incoming_pods_namespace_labels() -> None:
    existing = (
        make_pod("a", "ops")
        .label("app", "db")
        .pod_anti_affinity(ZONE_LABEL, {"app": "web"}, namespace_selector={"env": "prod"})
        .node("n0")
        .obj()
    )
    objs = [
        *nodes("a", "b"),
        make_namespace("ops"),
        make_namespace("prod-ns", {"env": "prod"}),
        existing,
    ]
    prod = make_pod("web", "prod-ns").label("app", "web").obj()
    dev = make_pod("web").label("app", "web").obj()
    assert codes(run(objs, prod)) == {"n0": "Unschedulable", "n1": "Success"}
    assert set(codes(run(objs, dev)).values()) == {"Success"}


def _term(topology: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"topologyKey": topology, "labelSelector": {"matchLabels": labels}, **extra}


def _pod_with_term(kind: str, term: dict[str, Any], labels: dict[str, str]) -> Pod:
    doc = make_pod("web").labels(labels).manifest()
    doc["spec"]["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return parse_pod(doc, source="<test>")


def test_match_label_keys_restrict_the_selector_to_the_pods_own_value() -> None:
    v1 = make_pod("a").labels({"app": "web", "rev": "1"}).node("n0").obj()
    v2 = make_pod("b").labels({"app": "web", "rev": "2"}).node("n1").obj()
    term = _term(ZONE_LABEL, {"app": "web"}, matchLabelKeys=["rev"])
    pod = _pod_with_term("podAffinity", term, {"app": "web", "rev": "2"})
    assert codes(run([*nodes("a", "b"), v1, v2], pod)) == {"n0": UNRESOLVABLE, "n1": "Success"}


def test_mismatch_label_keys_exclude_the_pods_own_value() -> None:
    mine = make_pod("a").labels({"app": "web", "tenant": "x"}).node("n0").obj()
    theirs = make_pod("b").labels({"app": "web", "tenant": "y"}).node("n1").obj()
    term = _term(HOSTNAME_LABEL, {"app": "web"}, mismatchLabelKeys=["tenant"])
    pod = _pod_with_term("podAntiAffinity", term, {"app": "web", "tenant": "x"})
    assert codes(run([*nodes("a", "b"), mine, theirs], pod)) == {
        "n0": "Success",
        "n1": "Unschedulable",
    }


def test_pod_without_terms_and_no_existing_anti_affinity_skips_the_filter() -> None:
    existing = make_pod("a").label("app", "web").node("n0").obj()
    doc = run([*nodes("a"), existing], make_pod("b").obj())
    assert codes(doc) == {"n0": "Success"}


def test_events_to_register_are_upstreams() -> None:
    pl = new(None, Handle())
    events = {e.resource: e.action_type for e in pl.events_to_register()}
    assert (
        events[EventResource.POD]
        == ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    )
    # QueueingHints on: preCheck is gone upstream, so no node taint updates.
    assert events[EventResource.NODE] == ActionType.ADD | ActionType.UPDATE_NODE_LABEL


@pytest.mark.parametrize("weight", [-1, 101])
def test_hard_pod_affinity_weight_out_of_range_is_rejected(weight: int) -> None:
    from cluster_sched.config.plugin_args import InterPodAffinityArgs
    from cluster_sched.errors import PluginError

    with pytest.raises(PluginError, match="hardPodAffinityWeight"):
        new(InterPodAffinityArgs(hard_pod_affinity_weight=weight), Handle())
