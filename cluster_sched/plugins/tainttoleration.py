"""TaintToleration: NoSchedule/NoExecute taints filter; PreferNoSchedule taints lower the score."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.api.objects import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Node,
    Pod,
    Toleration,
)
from cluster_sched.api.taints import find_matching_untolerated_taint, tolerations_tolerate_taint
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins._helpers import default_normalize_score
from cluster_sched.plugins.names import TAINT_TOLERATION

NAME = TAINT_TOLERATION
SCORE_STATE_KEY = "PreScore" + NAME
DO_NOT_SCHEDULE = frozenset({NO_SCHEDULE, NO_EXECUTE})
#: Since v1.35 upstream no longer names the taint (its key/value may be sensitive).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


def untolerated_taint_columns(
    table: NodeTable, tolerations: tuple[Toleration, ...], effects: frozenset[str]
) -> np.ndarray:
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


def _untolerated_mask(table: NodeTable, tolerations: tuple[Toleration, ...]) -> np.ndarray:
    """bool[cap]: rows with a NoSchedule/NoExecute taint the tolerations do not tolerate;
    shared by every pod with the same tolerations."""

    def compute() -> np.ndarray:
        mask = np.zeros(table._cap, dtype=bool)
        for t in untolerated_taint_columns(table, tolerations, DO_NOT_SCHEDULE).tolist():
            mask |= table.taint_pos[t] > 0  # distinct taints, not nodes
        return mask

    return table.memo(("untolerated-taints", tolerations), compute)


def _prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    return tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


class TaintToleration:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        fails = nodes.take(_untolerated_mask(nodes.table, pod.tolerations))
        return NodeVerdicts.from_mask(
            fails, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNTOLERATED
        )

    def pre_score(self, state: CycleState, pod: Pod, snapshot: Any, feasible: Any) -> Status:
        """Upstream PreScore: the tolerations that matter to Score (empty or
        PreferNoSchedule effect). Never Skip, as upstream."""
        state.write(SCORE_STATE_KEY, _prefer_no_schedule_tolerations(pod))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        table = nodes.table
        relevant = state.get(SCORE_STATE_KEY)
        if relevant is None:
            relevant = _prefer_no_schedule_tolerations(pod)
        cols = untolerated_taint_columns(table, relevant, frozenset({PREFER_NO_SCHEDULE}))
        if not len(cols):
            return np.zeros(len(nodes), dtype=np.int64)
        count = np.zeros(len(nodes), dtype=np.int64)
        for t in cols.tolist():
            count += nodes.take(table.taint_pos[t]) > 0
        return count

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=True)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A node added or retainted; the pod gaining a toleration (upstream, hints on)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        )

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        """Queue when the node's NoSchedule/NoExecute taints went from not tolerated (or
        a new node) to tolerated."""
        if new is None:
            return QueueingHint.QUEUE_SKIP
        effects = frozenset({NO_SCHEDULE, NO_EXECUTE})
        was_untolerated = old is None or (
            find_matching_untolerated_taint(old.taints, pod.tolerations, effects) is not None
        )
        untolerated = find_matching_untolerated_taint(new.taints, pod.tolerations, effects)
        if was_untolerated and untolerated is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Only this pod's own toleration change can help it."""
        if new is not None and new.key == pod.key:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Handle) -> TaintToleration:
    return TaintToleration()
