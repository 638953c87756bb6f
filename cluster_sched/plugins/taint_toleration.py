"""TaintToleration: NoSchedule/NoExecute taints filter; PreferNoSchedule taints lower the score."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.api.objects import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, Pod, Toleration
from cluster_sched.api.taints import tolerations_tolerate_taint
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import Code
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins._helpers import default_normalize_score
from cluster_sched.plugins.names import TAINT_TOLERATION

NAME = TAINT_TOLERATION
DO_NOT_SCHEDULE = frozenset({NO_SCHEDULE, NO_EXECUTE})
_NO_TAINT = np.iinfo(np.int16).max


def untolerated_taint_columns(table: NodeTable, tolerations: tuple[Toleration, ...], effects: frozenset[str]) -> np.ndarray:
    """Taint ids (columns of ``taint_pos``) with an effect in ``effects`` that the
    tolerations do not tolerate. Loops over distinct taints, not nodes."""
    return np.asarray(
        [
            t
            for t, taint in enumerate(table.taints.values)
            if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint)
        ],
        dtype=np.intp,
    )


def _first_untolerated(table: NodeTable, tolerations: tuple[Toleration, ...]) -> np.ndarray:
    """int64[cap]: id of the first (by node order) untolerated NoSchedule/NoExecute taint
    per row, -1 where none; shared by every pod with the same tolerations."""
    def compute() -> np.ndarray:
        return _compute_first_untolerated(table, tolerations)

    return table.memo(("first-untolerated-taint", tolerations), compute)


def _compute_first_untolerated(table: NodeTable, tolerations: tuple[Toleration, ...]) -> np.ndarray:
    cols = untolerated_taint_columns(table, tolerations, DO_NOT_SCHEDULE)
    first = np.full(table._cap, -1, dtype=np.int64)
    best_pos = np.full(table._cap, _NO_TAINT, dtype=np.int32)
    for t in cols.tolist():  # distinct taints, not nodes
        pos = table.taint_pos[t].astype(np.int32)
        better = (pos > 0) & (pos < best_pos)
        best_pos[better] = pos[better]
        first[better] = t
    return first


class TaintToleration:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        table = nodes.table
        first = _first_untolerated(table, pod.tolerations)[nodes.rows]
        fails = first >= 0
        if not fails.any():
            return NodeVerdicts.passing(len(nodes))
        ids, inverse = np.unique(first[fails], return_inverse=True)
        reasons = [
            (f"node(s) had untolerated taint {{{table.taints.values[t].key}: {table.taints.values[t].value}}}",)
            for t in ids.tolist()
        ]
        reason_ids = np.zeros(len(nodes), dtype=np.int32)
        reason_ids[fails] = inverse
        codes = np.where(fails, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0)).astype(np.int8)
        return NodeVerdicts(codes, reason_ids, reasons)

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        table = nodes.table
        relevant = tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
        cols = untolerated_taint_columns(table, relevant, frozenset({PREFER_NO_SCHEDULE}))
        if not len(cols):
            return np.zeros(len(nodes), dtype=np.int64)
        count = np.zeros(len(nodes), dtype=np.int64)
        for t in cols.tolist():
            count += table.taint_pos[t][nodes.rows] > 0
        return count

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=True)

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
        )


def new(args: Any, handle: Handle) -> TaintToleration:
    return TaintToleration()
