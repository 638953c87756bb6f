"""SchedulingGates: PreEnqueue keeps gated pods out of activeQ until their gates are gone."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.status import SUCCESS, Status, unresolvable
from cluster_sched.plugins.names import SCHEDULING_GATES

NAME = SCHEDULING_GATES


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: Pod) -> Status:
        if not pod.scheduling_gates:
            return SUCCESS
        return unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),)


def new(args: Any, handle: Handle) -> SchedulingGates:
    return SchedulingGates()
