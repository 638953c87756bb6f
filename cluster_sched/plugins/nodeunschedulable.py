"""NodeUnschedulable: cordoned nodes reject pods that do not tolerate the unschedulable taint."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import NO_SCHEDULE, Node, Pod, Taint
from cluster_sched.api.taints import tolerations_tolerate_taint
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
from cluster_sched.framework.status import Code
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.plugins.names import NODE_UNSCHEDULABLE

NAME = NODE_UNSCHEDULABLE
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)


class NodeUnschedulable:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        if tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
            return NodeVerdicts.passing(len(nodes))
        fails = nodes.take(nodes.table.unschedulable)
        return NodeVerdicts.from_mask(
            fails, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE
        )

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A node added or made schedulable; the pod gaining a toleration of the
        unschedulable taint (upstream, hints on)."""
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
        """Queue when the node turned schedulable (an added node counts as turned)."""
        if new is None or new.unschedulable:
            return QueueingHint.QUEUE_SKIP
        if old is None or old.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Queue when this pod now tolerates the unschedulable taint."""
        own = new is not None and new.key == pod.key
        if (
            own
            and new is not None
            and tolerations_tolerate_taint(new.tolerations, UNSCHEDULABLE_TAINT)
        ):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
