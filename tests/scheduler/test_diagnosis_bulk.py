"""NodeStatusMap: failing nodes recorded in bulk read exactly like a dict filled one
status at a time (order, repeats, len, lookups, the FitError histogram, codes by row)."""

from __future__ import annotations

import numpy as np

from cluster_sched.framework.diagnosis import (
    Diagnosis,
    FilterVerdicts,
    NodeStatusMap,
    fit_error_message,
    node_codes,
)
from cluster_sched.framework.status import Code, Status
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.testing.builders import make_node

PLUGINS = ["A", "B"]


def _table(n: int) -> NodeTable:
    t = NodeTable()
    for i in range(n):
        t.upsert_node(make_node(f"n{i}").obj())
    return t


def _verdicts(codes: list[int], reasons: list[int], plugins: list[int]) -> FilterVerdicts:
    return FilterVerdicts(
        np.asarray(codes, dtype=np.int8),
        np.asarray(reasons, dtype=np.int32),
        np.asarray(plugins, dtype=np.int16),
        [("r0",), ("r1", "r2")],
        PLUGINS,
    )


def _both() -> tuple[Diagnosis, Diagnosis, NodeTable]:
    t = _table(8)
    bulk, plain = Diagnosis(), Diagnosis()
    plain.node_to_status.statuses = {}
    single = Status(Code.UNSCHEDULABLE, ("nominated",), "B")
    v = _verdicts([2, 0, 3, 2, 6, 0], [0, 0, 1, 1, 0, 0], [0, -1, 1, 0, 1, -1])
    rows = np.asarray([3, 4, 5, 1, 6, 7])
    failed = np.flatnonzero(v.codes != 0)
    for d in (bulk, plain):
        d.add_status("n5", single)  # the nominated node, evaluated again below
    bulk.add_failed(t, rows[failed], v, failed)
    for i in failed.tolist():
        plain.add_status(str(t.names[int(rows[i])]), v(i))
    return bulk, plain, t


def test_bulk_reads_like_one_by_one() -> None:
    bulk, plain, t = _both()
    statuses = bulk.node_to_status.statuses
    assert isinstance(statuses, NodeStatusMap)
    assert len(statuses) == len(plain.node_to_status.statuses) == 4
    assert fit_error_message(8, bulk) == fit_error_message(8, plain)
    assert statuses.get("n5") == plain.node_to_status.statuses["n5"]
    assert statuses.get("n0") is None and "n0" not in statuses and "n1" in statuses
    for absent in (2, 3):
        assert np.array_equal(
            node_codes(bulk.node_to_status, t, absent), node_codes(plain.node_to_status, t, absent)
        )
    assert bulk.unschedulable_plugins == plain.unschedulable_plugins == {"A", "B"}
    assert bulk.pending_plugins == plain.pending_plugins == {"B"}
    assert list(statuses.items()) == list(plain.node_to_status.statuses.items())
    assert statuses == plain.node_to_status.statuses


def test_histogram_without_single_entries_reads_the_arrays() -> None:
    t = _table(4)
    bulk = Diagnosis()
    v = _verdicts([2, 2, 3, 2], [0, 1, 1, 0], [0, 0, 1, 0])
    idx = np.arange(4)
    bulk.add_failed(t, idx, v, idx)
    assert fit_error_message(4, bulk) == "0/4 nodes are available: 2 r0, 2 r1, 2 r2."
    assert len(bulk.node_to_status.statuses) == 4
