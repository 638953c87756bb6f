"""SchedulingGates: PreEnqueue keeps gated pods out of activeQ until their gates are gone."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
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

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_update_pod_scheduling_gates_eliminated,
            ),
        )

    def is_schedulable_after_update_pod_scheduling_gates_eliminated(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Only the pod's own last gate going away releases it."""
        if new is not None and new.key == pod.key:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Handle) -> SchedulingGates:
    return SchedulingGates()
