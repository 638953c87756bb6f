"""TaintToleration: PreScore state, PreferNoSchedule counting and reversed normalisation."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.tainttoleration import SCORE_STATE_KEY, TaintToleration
from cluster_sched.testing.builders import make_node, make_pod

SOFT = "PreferNoSchedule"


@pytest.fixture
def table() -> NodeTable:
    t = NodeTable()
    t.upsert_node(make_node("clean").obj())
    t.upsert_node(make_node("one").taint("a", "1", SOFT).obj())
    t.upsert_node(
        make_node("two")
        .taint("a", "1", SOFT)
        .taint("b", "2", SOFT)
        .taint("hard", effect="NoSchedule")
        .obj()
    )
    return t


@pytest.mark.parametrize(
    ("pod", "raw", "normalized"),
    [
        pytest.param(make_pod("p").obj(), [0, 1, 2], [100, 50, 0], id="no-tolerations"),
        pytest.param(make_pod("p").tolerate("a", value="1", effect=SOFT).obj(), [0, 0, 1], [100, 100, 0], id="tolerates-a"),
        pytest.param(make_pod("p").tolerate("a").obj(), [0, 0, 1], [100, 100, 0], id="empty-effect-counts"),
        pytest.param(
            make_pod("p").tolerate("a", value="1", effect="NoSchedule").obj(), [0, 1, 2], [100, 50, 0],
            id="noschedule-toleration-ignored-for-score",
        ),
        pytest.param(make_pod("p").tolerate().obj(), [0, 0, 0], [100, 100, 100], id="tolerate-everything"),
    ],
)  # fmt: skip
def test_score_counts_untolerated_prefer_no_schedule_taints(
    table: NodeTable, pod: Pod, raw: list[int], normalized: list[int]
) -> None:
    plugin = TaintToleration()
    nodes = NodeSlice(table, table.order())
    state = CycleState()
    assert plugin.pre_score(state, pod, None, nodes).is_success  # never Skip, as upstream
    assert state.get(SCORE_STATE_KEY) is not None
    scores = plugin.score(state, pod, nodes)
    assert scores.tolist() == raw
    assert plugin.score(CycleState(), pod, nodes).tolist() == raw  # same without PreScore state
    assert plugin.normalize_score(state, pod, scores).tolist() == normalized


def test_filter_ignores_prefer_no_schedule(table: NodeTable) -> None:
    v = TaintToleration().filter(CycleState(), make_pod("p").obj(), NodeSlice(table, table.order()))
    assert v.passed.tolist() == [True, True, False]
    assert v.reasons_of(2) == ("node(s) had untolerated taint(s)",)
    assert np.array_equal(v.codes[:2], [0, 0])
