"""The fused kernel against the numpy reference (the plugins' own code): identical
feasible rows, evaluated count, totals, best score, tie set and status, on random
tables, profiles, pods, windows, masks and score columns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import CPU, MEMORY, Node, ObjectMeta
from cluster_sched.config.plugin_args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from cluster_sched.kernels import (
    KernelProfile,
    NormalizedScore,
    PodQuery,
    PodRequests,
    evaluate_pod,
    evaluate_pod_reference,
)
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.noderesources.balanced_allocation import BalancedAllocation
from cluster_sched.plugins.noderesources.fit import Fit
from cluster_sched.testing.builders import make_pod
from tests.kernels.strategies import (
    EXAMPLES,
    assert_same,
    orders,
    profiles,
    queries,
    tables,
    wide_tables,
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_kernel_equals_reference(data: st.DataObject) -> None:
    table = data.draw(tables())
    profile = data.draw(profiles())
    query = data.draw(queries(table, profile))
    order = data.draw(orders(table))
    n = len(table.order() if order is None else order)
    to_find = data.draw(st.integers(1, n + 3))
    want = evaluate_pod_reference(table, profile, query, to_find, order)
    assert_same(evaluate_pod(table, profile, query, to_find, order), want)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_kernel_equals_reference_across_blocks(data: st.DataObject) -> None:
    """Windows of hundreds of nodes: the filter's vectorised blocks (runs of rows, the
    all-pass shortcut, a window ending inside or exactly at a block, wrapping around
    the end of the order) and the scorers' dense-row loads, against the plugins."""
    table = data.draw(wide_tables())
    profile = data.draw(profiles())
    requests = PodRequests.of_pod(make_pod("p").req(cpu="100m", memory="1Mi").obj(), profile)
    plain = st.builds(PodQuery, st.just(requests), st.integers(0, 10**6))
    query = data.draw(st.one_of(queries(table, profile), plain, plain))
    order = data.draw(st.one_of(st.none(), st.none(), orders(table)))
    n = len(table.order() if order is None else order)
    # numFeasibleNodesToFind is at least 1 (an empty order is asked for one node)
    to_find = data.draw(st.one_of(st.integers(1, n + 3), st.sampled_from([256, 512, max(n, 1)])))
    want = evaluate_pod_reference(table, profile, query, to_find, order)
    assert_same(evaluate_pod(table, profile, query, to_find, order), want)


def _default_profile() -> KernelProfile:
    return KernelProfile(
        Fit(NodeResourcesFitArgs()), BalancedAllocation(NodeResourcesBalancedAllocationArgs())
    )


def _table(allocs: list[tuple[int, int]]) -> NodeTable:
    table = NodeTable()
    for i, (cpu, mem) in enumerate(allocs):
        alloc = {CPU: cpu, MEMORY: mem, "pods": 110}
        table.upsert_node(Node(ObjectMeta(f"n{i}"), allocatable=alloc, capacity=alloc))
    return table


def test_window_stops_at_to_find_and_rotates() -> None:
    """Rows 1 and 3 are too small; from start 1, two feasible nodes are 2 and 4 (after
    evaluating 1, 2, 3, 4): evaluated 4, the next start index moves past node 4."""
    table = _table([(4000, 8 << 30), (100, 8 << 30), (4000, 8 << 30), (100, 8 << 30)] * 2)
    profile = _default_profile()
    pod = make_pod("p").req(cpu="1", memory="1Gi").obj()
    query = PodQuery(PodRequests.of_pod(pod, profile), start=1)
    got = evaluate_pod(table, profile, query, 2)
    assert got.feasible_rows.tolist() == [2, 4]
    assert got.evaluated == 4
    assert_same(got, evaluate_pod_reference(table, profile, query, 2))


def test_scores_match_upstream_arithmetic() -> None:
    """cpu 1000/4000 and memory 1Gi/8Gi requested on both nodes, the second node already
    half full: LeastAllocated (75 + 87) // 2 = 81 vs (25 + 37) // 2 = 31, Balanced
    1 - |0.25 - 0.125| / 2 -> 93 vs 1 - |0.75 - 0.625| / 2 -> 93."""
    table = _table([(4000, 8 << 30), (4000, 8 << 30)])
    table.add_pod(1, make_pod("r").req(cpu="2", memory="4Gi").obj())
    profile = _default_profile()
    query = PodQuery(PodRequests.of_pod(make_pod("p").req(cpu="1", memory="1Gi").obj(), profile))
    got = evaluate_pod(table, profile, query, 2)
    assert got.totals.tolist() == [81 + 93, 31 + 93]
    assert got.ties.tolist() == [0]
    assert_same(got, evaluate_pod_reference(table, profile, query, 2))


def test_default_normalized_columns_and_extra() -> None:
    """TaintToleration-like reverse column [0, 2, 1] -> [100, 0, 50] times 3; extra added."""
    table = _table([(4000, 8 << 30)] * 3)
    profile = KernelProfile(Fit(NodeResourcesFitArgs()), None, 0, 0)
    requests = PodRequests.of_pod(make_pod("p").obj(), profile)
    raw = np.asarray([0, 2, 1] + [0] * (table.allocatable.shape[1] - 3), dtype=np.int64)
    extra = np.arange(table.allocatable.shape[1], dtype=np.int64)
    query = PodQuery(requests, normalized=(NormalizedScore(raw, True, 3),), extra=extra)
    got = evaluate_pod(table, profile, query, 3)
    assert got.totals.tolist() == [300, 1, 152]
    assert_same(got, evaluate_pod_reference(table, profile, query, 3))


def test_to_find_must_be_positive() -> None:
    table = _table([(4000, 8 << 30)])
    profile = _default_profile()
    query = PodQuery(PodRequests.of_pod(make_pod("p").obj(), profile))
    with pytest.raises(ValueError, match="to_find"):
        evaluate_pod(table, profile, query, 0)
