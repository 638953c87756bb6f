"""NodeName: a pod naming spec.nodeName fits only that node."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.api.objects import Node, Pod
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
from cluster_sched.plugins.names import NODE_NAME

NAME = NODE_NAME
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        if not pod.node_name:
            return NodeVerdicts.passing(len(nodes))
        row = nodes.table.index.get(pod.node_name, -1)
        fails = nodes.rows != row
        return NodeVerdicts.from_mask(
            np.asarray(fails), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON
        )

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Only the node the pod names can help, and only by appearing."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD), self.is_schedulable_after_node_add
            ),
        )

    def is_schedulable_after_node_add(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        if new is None or (pod.node_name and pod.node_name != new.name):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


def new(args: Any, handle: Handle) -> NodeName:
    return NodeName()
