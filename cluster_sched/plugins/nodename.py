"""NodeName: a pod naming spec.nodeName fits only that node."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
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

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent(EventResource.NODE, ActionType.ADD),)


def new(args: Any, handle: Handle) -> NodeName:
    return NodeName()
