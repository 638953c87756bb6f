"""InterPodAffinity Score/NormalizeScore, and the AddPod/RemovePod extensions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.plugins.crossnode import DomainCounts
from cluster_sched.plugins.interpodaffinity.plugin import new
from cluster_sched.plugins.interpodaffinity.scoring import PreScoreState, normalize
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    make_namespace,
    make_node,
    make_pod,
)
from cluster_sched.testing.isolated import explain_with_only


def run(objects: list[Any], pod: Pod, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return explain_with_only(
        ("InterPodAffinity",),
        objects,
        pod,
        {"InterPodAffinity": args} if args is not None else None,
    )


def nodes(*zones: str) -> list[Any]:
    return [make_node(f"n{i}").zone(z).obj() for i, z in enumerate(zones)]


def scores(doc: dict[str, Any]) -> dict[str, int | None]:
    return {n: s.get("InterPodAffinity") for n, s in doc["scores"].items()}


def test_preferred_affinity_favours_the_matching_zone() -> None:
    existing = make_pod("db").label("app", "db").node("n0").obj()
    pod = make_pod("web").pod_affinity(ZONE_LABEL, {"app": "db"}, weight=5).obj()
    doc = run([*nodes("a", "a", "b"), existing], pod)
    assert scores(doc) == {"n0": 100, "n1": 100, "n2": 0}
    assert doc["rawScores"]["n0"]["InterPodAffinity"] == 5


def test_preferred_anti_affinity_avoids_the_matching_zone() -> None:
    existing = make_pod("db").label("app", "db").node("n0").obj()
    pod = make_pod("web").pod_anti_affinity(ZONE_LABEL, {"app": "db"}, weight=5).obj()
    doc = run([*nodes("a", "b"), existing], pod)
    assert scores(doc) == {"n0": 0, "n1": 100}
    assert doc["rawScores"]["n0"]["InterPodAffinity"] == -5


def test_normalize_uses_float_min_max_scaling_truncated() -> None:
    anti = make_pod("x").label("app", "x").node("n0").obj()
    aff = make_pod("y").label("app", "y").node("n2").obj()
    pod = (
        make_pod("web")
        .pod_anti_affinity(ZONE_LABEL, {"app": "x"}, weight=3)
        .pod_affinity(ZONE_LABEL, {"app": "y"}, weight=4)
        .obj()
    )
    doc = run([*nodes("a", "b", "c"), anti, aff], pod)
    assert {n: s["InterPodAffinity"] for n, s in doc["rawScores"].items()} == {
        "n0": -3,
        "n1": 0,
        "n2": 4,
    }
    assert scores(doc) == {"n0": 0, "n1": 42, "n2": 100}


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ([1, 2, 3], [0, 50, 100]),
        ([5, 5], [0, 0]),
        ([-10, 20, 0], [0, 100, 33]),
        ([0, 1, 2], [0, 50, 100]),
    ],
)
def test_normalize_formula(raw: list[int], want: list[int]) -> None:
    state = PreScoreState({"k": DomainCounts.from_values(["v"], [1])})
    assert normalize(state, np.asarray(raw, dtype=np.int64)).tolist() == want


def test_existing_pods_hard_affinity_scores_with_hard_pod_affinity_weight() -> None:
    existing = (
        make_pod("db").label("app", "db").pod_affinity(ZONE_LABEL, {"app": "web"}).node("n0").obj()
    )
    pod = make_pod("web").label("app", "web").obj()
    objs = [*nodes("a", "b"), existing]
    default = run(objs, pod)
    assert {n: s["InterPodAffinity"] for n, s in default["rawScores"].items()} == {"n0": 1, "n1": 0}
    assert scores(default) == {"n0": 100, "n1": 0}
    weighted = run(objs, pod, {"hardPodAffinityWeight": 7})
    assert {n: s["InterPodAffinity"] for n, s in weighted["rawScores"].items()} == {
        "n0": 7,
        "n1": 0,
    }
    off = run(objs, pod, {"hardPodAffinityWeight": 0})
    assert all(v is None for v in scores(off).values())  # PreScore skipped: nothing to score


def test_existing_pods_preferred_terms_score_unless_ignored() -> None:
    existing = (
        make_pod("db")
        .label("app", "db")
        .pod_anti_affinity(ZONE_LABEL, {"app": "web"}, weight=9)
        .node("n0")
        .obj()
    )
    pod = make_pod("web").label("app", "web").obj()
    objs = [*nodes("a", "b"), existing]
    assert scores(run(objs, pod)) == {"n0": 0, "n1": 100}
    ignored = run(objs, pod, {"ignorePreferredTermsOfExistingPods": True})
    assert all(v is None for v in scores(ignored).values())


def test_cancelling_terms_still_count_as_scored() -> None:
    """+w and -w on one domain sum to 0 but the topology map is not empty (upstream)."""
    a = make_pod("a").label("app", "a").node("n0").obj()
    pod = (
        make_pod("web")
        .pod_affinity(HOSTNAME_LABEL, {"app": "a"}, weight=2)
        .pod_anti_affinity(HOSTNAME_LABEL, {"app": "a"}, weight=2)
        .obj()
    )
    doc = run([*nodes("a", "b"), a], pod)
    assert scores(doc) == {"n0": 0, "n1": 0}


# ---------------------------------------------------------------------------- extensions

P = (
    make_pod("p")
    .label("app", "web")
    .pod_affinity(ZONE_LABEL, {"app": "db"})
    .pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"})
    .obj()
)
BASE = [make_pod("db0").label("app", "db").node("n0").obj()]
EXTRAS = {
    "matches-affinity": make_pod("db1").label("app", "db").node("n2").obj(),
    "matches-anti-affinity": make_pod("web1").label("app", "web").node("n1").obj(),
    "existing-anti-affinity": make_pod("x")
    .label("app", "x")
    .pod_anti_affinity(ZONE_LABEL, {"app": "web"})
    .node("n3")
    .obj(),
    "unrelated": make_pod("z").label("app", "z").node("n1").obj(),
}


def _verdicts(cache: Cache, state: CycleState, pl: Any) -> list[int]:
    table = cache.sink.table  # type: ignore[attr-defined]
    return pl.filter(state, P, NodeSlice(table, table.order())).codes.tolist()


def _cluster(extra: Pod | None) -> Cache:
    cache = Cache()
    cache.load(
        [make_namespace("default"), *nodes("a", "a", "b", "c"), *BASE, *([extra] if extra else [])]
    )
    return cache


@pytest.mark.parametrize("name", list(EXTRAS))
def test_add_pod_matches_prefilter_with_the_pod_present(name: str) -> None:
    extra = EXTRAS[name]
    without, with_ = _cluster(None), _cluster(extra)
    pl = new(None, Handle(snapshot=without.snapshot))
    s0 = CycleState()
    pl.pre_filter(s0, P, without.snapshot)
    assert pl.add_pod(s0, P, extra, extra.node_name).is_success
    s1 = CycleState()
    pl.pre_filter(s1, P, with_.snapshot)
    assert _verdicts(without, s0, pl) == _verdicts(with_, s1, pl)


@pytest.mark.parametrize("name", list(EXTRAS))
def test_remove_pod_matches_prefilter_without_the_pod(name: str) -> None:
    extra = EXTRAS[name]
    without, with_ = _cluster(None), _cluster(extra)
    pl = new(None, Handle(snapshot=with_.snapshot))
    s1 = CycleState()
    pl.pre_filter(s1, P, with_.snapshot)
    assert pl.remove_pod(s1, P, extra, extra.node_name).is_success
    s0 = CycleState()
    pl.pre_filter(s0, P, without.snapshot)
    assert _verdicts(with_, s1, pl) == _verdicts(without, s0, pl)


def test_removing_the_only_match_reenables_the_first_pod_rule() -> None:
    pod = make_pod("p").label("app", "web").pod_affinity(ZONE_LABEL, {"app": "web"}).obj()
    other = make_pod("w").label("app", "web").node("n0").obj()
    cache = Cache()
    cache.load([make_namespace("default"), *nodes("a", "b"), other])
    pl = new(None, Handle(snapshot=cache.snapshot))
    state = CycleState()
    pl.pre_filter(state, pod, cache.snapshot)
    table = cache.sink.table  # type: ignore[attr-defined]
    rows = table.rows_of(["n0", "n1"])
    assert pl.filter(state, pod, NodeSlice(table, rows)).codes.tolist() == [0, 3]
    pl.remove_pod(state, pod, other, "n0")
    assert pl.filter(state, pod, NodeSlice(table, rows)).codes.tolist() == [0, 0]
