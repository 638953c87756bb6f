"""PodTopologySpread Score / NormalizeScore: upstream's formula, topology weights,
ignored nodes, and system-default constraints deduced from controllers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.plugins.podtopologyspread.scoring import (
    PreScoreState,
    _round_half_away,
    normalize,
    topology_normalizing_weight,
)
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    make_controller,
    make_node,
    make_pod,
)
from cluster_sched.testing.isolated import explain_with_only


def run(
    objects: list[Any], pod: Pod, plugins: tuple[str, ...] = ("PodTopologySpread",)
) -> dict[str, Any]:
    return explain_with_only(plugins, objects, pod)


def web(name: str, node: str) -> Pod:
    return make_pod(name).label("app", "web").node(node).obj()


def pts(doc: dict[str, Any], key: str = "scores") -> dict[str, int]:
    return {n: s["PodTopologySpread"] for n, s in doc[key].items()}


def test_hostname_spreading_formula() -> None:
    objs = [make_node(f"n{i}").obj() for i in range(3)]
    objs += [web("a", "n1"), web("b", "n2"), web("c", "n2")]
    pod = (
        make_pod("p")
        .label("app", "web")
        .spread(1, HOSTNAME_LABEL, "ScheduleAnyway", {"app": "web"})
        .obj()
    )
    doc = run(objs, pod)
    w = math.log(3 + 2)
    want_raw = {f"n{i}": math.floor(c * w + 0.5) for i, c in enumerate([0, 1, 2])}
    assert pts(doc, "rawScores") == want_raw
    hi, lo = max(want_raw.values()), min(want_raw.values())
    assert pts(doc) == {n: 100 * (hi + lo - s) // hi for n, s in want_raw.items()}


def test_zone_domains_come_from_feasible_nodes_and_counts_from_all() -> None:
    objs = [
        make_node("a1").zone("a").obj(),
        make_node("a2").zone("a").unschedulable().obj(),  # counted, not feasible
        make_node("b1").zone("b").obj(),
        web("w1", "a2"),
        web("w2", "a2"),
    ]
    pod = (
        make_pod("p")
        .label("app", "web")
        .spread(1, ZONE_LABEL, "ScheduleAnyway", {"app": "web"})
        .obj()
    )
    doc = run(objs, pod, ("NodeUnschedulable", "PodTopologySpread"))
    w = topology_normalizing_weight(2)
    assert pts(doc, "rawScores") == {"a1": round(2 * w), "b1": 0}
    assert pts(doc) == {"a1": 0, "b1": 100}


def test_nodes_missing_a_key_are_ignored_and_score_zero() -> None:
    objs = [make_node("a1").zone("a").obj(), make_node("bare").obj(), web("w1", "a1")]
    pod = (
        make_pod("p")
        .label("app", "web")
        .spread(1, ZONE_LABEL, "ScheduleAnyway", {"app": "web"})
        .obj()
    )
    doc = run(objs, pod)
    assert pts(doc) == {"a1": 100, "bare": 0}


def test_max_skew_waters_down_differences() -> None:
    objs = [make_node(f"n{i}").obj() for i in range(2)] + [web("a", "n1")]
    one = (
        make_pod("p")
        .label("app", "web")
        .spread(1, HOSTNAME_LABEL, "ScheduleAnyway", {"app": "web"})
        .obj()
    )
    five = (
        make_pod("p")
        .label("app", "web")
        .spread(5, HOSTNAME_LABEL, "ScheduleAnyway", {"app": "web"})
        .obj()
    )
    assert pts(run(objs, one)) == {"n0": 100, "n1": 0}
    raw = pts(run(objs, five), "rawScores")
    assert raw == {"n0": 4, "n1": round(math.log(4) + 4)}
    assert pts(run(objs, five))["n1"] > 0


def test_system_defaults_need_a_selecting_controller() -> None:
    objs = [make_node(f"n{i}").obj() for i in range(2)] + [web("a", "n1"), web("b", "n1")]
    pod = make_pod("p").label("app", "web").obj()
    assert all("PodTopologySpread" not in s for s in run(objs, pod)["scores"].values())
    with_svc = run([*objs, make_controller("Service", "svc", {"app": "web"})], pod)
    # hostname maxSkew 3 over 2 nodes: raw 0*log(4)+2 = 2 and 2*log(4)+2 = 4.77 -> 5;
    # the zone default is skipped (no node has a zone label)
    assert pts(with_svc, "rawScores") == {"n0": 2, "n1": 5}
    assert pts(with_svc) == {"n0": 100, "n1": 40}


def test_system_defaults_follow_the_owning_replicaset() -> None:
    objs = [make_node(f"n{i}").obj() for i in range(2)]
    objs += [make_pod("a").labels({"app": "web", "rs": "1"}).node("n1").obj()]
    objs += [make_controller("ReplicaSet", "rs1", {"rs": "1"})]
    owned = make_pod("p").labels({"app": "web", "rs": "1"}).owner("ReplicaSet", "rs1").obj()
    assert pts(run(objs, owned)) == {"n0": 100, "n1": 66}
    stranger = make_pod("q").labels({"app": "web", "rs": "1"}).owner("ReplicaSet", "rs9").obj()
    assert all("PodTopologySpread" not in s for s in run(objs, stranger)["scores"].values())


def test_round_half_away_from_zero() -> None:
    x = np.asarray([0.5, 1.5, 2.4999999, 2.5, 0.49999999999999994])
    assert _round_half_away(x).tolist() == [1, 2, 2, 3, 0]


@pytest.mark.parametrize(
    ("raw", "ignored", "want"),
    [
        ([0, 0], [False, False], [100, 100]),
        ([3, 1, 5], [False, False, False], [60, 100, 20]),
        ([3, 0, 5], [False, True, False], [100, 0, 60]),
    ],
)
def test_normalize(raw: list[int], ignored: list[bool], want: list[int]) -> None:
    state = PreScoreState((), True, (), (), np.asarray(ignored))
    assert normalize(state, np.asarray(raw, dtype=np.int64)).tolist() == want
