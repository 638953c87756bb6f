"""NodeUnschedulable: cordoned nodes reject pods that do not tolerate the unschedulable taint."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import NO_SCHEDULE, Pod, Taint
from cluster_sched.api.taints import tolerations_tolerate_taint
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
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

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),)


def new(args: Any, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
