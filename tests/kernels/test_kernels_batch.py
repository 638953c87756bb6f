"""One batch call equals B single calls: every pod keeps its own requests, window start,
masks and score columns, and pods sharing columns (one Deployment's memoised masks, one
raw column weighted two ways) are not mixed up."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.kernels import NormalizedScore, evaluate_batch, evaluate_pod
from tests.kernels.strategies import EXAMPLES, assert_same, orders, profiles, queries, tables


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_batch_equals_single_calls(data: st.DataObject) -> None:
    table = data.draw(tables())
    profile = data.draw(profiles())
    batch = data.draw(st.lists(queries(table, profile), min_size=1, max_size=6))
    # share columns between pods, as pods of one Deployment do
    for i in range(1, len(batch)):
        if data.draw(st.booleans()):
            other = batch[data.draw(st.integers(0, i - 1))]
            shared = tuple(
                NormalizedScore(s.raw, not s.reverse, s.weight + 1) for s in other.normalized
            )
            batch[i] = replace(batch[i], masks=other.masks, normalized=other.normalized + shared)
    order = data.draw(orders(table))
    n = len(table.order() if order is None else order)
    to_find = data.draw(st.integers(1, n + 3))
    got = evaluate_batch(table, profile, batch, to_find, order)
    assert len(got) == len(batch)
    for g, q in zip(got, batch, strict=True):
        assert_same(g, evaluate_pod(table, profile, q, to_find, order))


def test_empty_batch() -> None:
    from cluster_sched.config.plugin_args import NodeResourcesFitArgs
    from cluster_sched.kernels import KernelProfile
    from cluster_sched.nodetable.table import NodeTable
    from cluster_sched.plugins.noderesources.fit import Fit

    assert len(evaluate_batch(NodeTable(), KernelProfile(Fit(NodeResourcesFitArgs())), [], 1)) == 0
