"""A node's request sums past int64 saturate, stay exact underneath, and undo exactly.

Every quantity the parser admits fits int64, but pods bound by hand are accounted
whatever they ask for: three pods of 7Ei memory on one node sum past int64.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Pod
from cluster_sched.nodetable.overflow import INT64_MAX, NONZERO, REQUESTED, saturating_add
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.testing.builders import make_node, make_pod

EI = 2**60


def _table() -> tuple[NodeTable, int]:
    table = NodeTable()
    row = table.upsert_node(
        make_node("n1").capacity(cpu="9223372036854775807m", memory="7Ei", pods=110).obj()
    )
    return table, row


def _heavy(i: int) -> Pod:
    return make_pod(f"heavy-{i}").req(cpu="9223372036854775807m", memory="7Ei").obj()


def test_sums_saturate_and_removing_restores_the_exact_value() -> None:
    table, row = _table()
    cpu, mem = table.resource_col("cpu"), table.resource_col("memory")
    pods = [_heavy(i) for i in range(3)]
    for p in pods:
        table.add_pod(row, p)
    assert table.requested[mem, row] == INT64_MAX
    assert table.requested[cpu, row] == INT64_MAX
    assert table.overflow.exact(REQUESTED, mem, row) == 3 * 7 * EI
    assert table.overflow.exact(NONZERO, 1, row) == 3 * 7 * EI
    assert table.free[mem, row] == 7 * EI - INT64_MAX  # no room, not a wrapped "lots"
    for p in pods[1:]:
        table.remove_pod(row, p)
    assert table.requested[mem, row] == 7 * EI
    assert table.free[mem, row] == 0
    assert table.nonzero[1, row] == 7 * EI
    assert not table.overflow
    table.remove_pod(row, pods[0])
    assert table.requested[:, row].tolist() == [0] * table.requested.shape[0]


def test_bulk_add_equals_one_by_one_past_int64() -> None:
    one, row = _table()
    bulk = one.subset(np.asarray([row]))
    one = one.subset(np.asarray([row]))
    pods = [_heavy(i) for i in range(4)] + [make_pod("small").req(cpu="1").obj()]
    for p in pods:
        one.add_pod(0, p)
    bulk.add_pods([0] * len(pods), pods)
    for name in ("requested", "free", "nonzero", "pod_count"):
        assert getattr(one, name).tolist() == getattr(bulk, name).tolist(), name
    assert sorted(one.overflow.items()) == sorted(bulk.overflow.items())


def test_subset_keeps_the_exact_sums() -> None:
    table, row = _table()
    other = table.upsert_node(make_node("n2").capacity(cpu="1", memory="1Gi", pods=1).obj())
    pods = [_heavy(i) for i in range(2)]
    for p in pods:
        table.add_pod(row, p)
    sub = table.subset(np.asarray([other, row]))
    mem = sub.resource_col("memory")
    assert sub.overflow.exact(REQUESTED, mem, 1) == 2 * 7 * EI
    sub.remove_pod(1, pods[0])
    assert sub.requested[mem, 1] == 7 * EI
    assert table.requested[mem, row] == INT64_MAX  # the original is untouched


def test_a_removed_node_forgets_its_sums() -> None:
    table, row = _table()
    for i in range(2):
        table.add_pod(row, _heavy(i))
    table.remove_node("n1")
    again = table.upsert_node(make_node("n1").capacity(cpu="1", memory="1Gi", pods=1).obj())
    assert again == row and not table.overflow
    assert table.requested[:, row].tolist() == [0] * table.requested.shape[0]


@pytest.mark.parametrize(
    ("values", "amount", "want"),
    [
        ([0, 5, INT64_MAX - 1, INT64_MAX], 2, [2, 7, INT64_MAX, INT64_MAX]),
        ([0, INT64_MAX], INT64_MAX, [INT64_MAX, INT64_MAX]),
        ([-INT64_MAX, 0], -5, [-INT64_MAX, -5]),
        ([3], 2**70, [INT64_MAX]),
    ],
    ids=["near-max", "max-amount", "negative", "amount-past-int64"],
)
def test_saturating_add(values: list[int], amount: int, want: list[int]) -> None:
    got = saturating_add(np.asarray(values, dtype=np.int64), amount)
    assert got.tolist() == want


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.integers(0, 3), st.sampled_from(["1", "64", "9223372036854775807m"]), st.booleans()
        ),
        min_size=1,
        max_size=30,
    )
)
def test_amount_bound_ceiling_is_never_below_a_row(ops: list[tuple[int, str, bool]]) -> None:
    """The fast path's overflow check reads the ceiling instead of every row's bound."""
    table = NodeTable()
    rows = [
        table.upsert_node(make_node(f"n{i}").capacity(cpu="64", memory="7Ei", pods=110).obj())
        for i in range(4)
    ]
    placed: list[tuple[int, Pod]] = []
    for k, (i, cpu, bulk) in enumerate(ops):
        pod = make_pod(f"p{k}").req(cpu=cpu, memory="1Gi").obj()
        if bulk:
            table.add_pods([rows[i]], [pod])
        else:
            table.add_pod(rows[i], pod)
        placed.append((rows[i], pod))
        if k % 3 == 2:
            row, gone = placed.pop(0)
            table.remove_pod(row, gone)
        assert table.amount_bound_ceiling >= float(table.amount_bound.max())
