"""Carrying out a preemption decision (upstream prepareCandidate), against the store.

DefaultPreemption decides; this executes: victims waiting in Permit are rejected, the
others deleted from the store (their DELETED events free the node through the watch),
and lower-priority pods nominated to the same node lose their nomination. The
preemptor's own nomination is recorded by the coordinator's failure handler, as upstream.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cluster_sched.api.objects import Pod
from cluster_sched.errors import ClusterSchedError
from cluster_sched.framework.status import SUCCESS, Code, Status

if TYPE_CHECKING:
    from cluster_sched.scheduler.coordinator import Coordinator

log = logging.getLogger(__name__)


class StorePreemptionExecutor:
    def __init__(self, coordinator: Coordinator) -> None:
        self.c = coordinator

    def prepare_candidate(self, pod: Pod, node_name: str, victims: Sequence[Pod]) -> Status:
        c = self.c
        deletes: list[tuple[str, str]] = []
        events: list[dict[str, str]] = []
        for victim in victims:
            fwk = c.frameworks.get(victim.scheduler_name)
            if fwk is not None and fwk.handle.waiting_pods.reject(
                victim.key, "DefaultPreemption", "preempted"
            ):
                continue
            deletes.append(("Pod", victim.key))
            events.append(
                {
                    "kind": "Pod",
                    "key": victim.key,
                    "reason": "Preempted",
                    "message": f"Preempted by pod {pod.uid or pod.key} on node {node_name}",
                    "type": "Normal",
                }
            )
        try:
            if deletes:
                c.store.delete_many(deletes)
                c.store.record_events(events)
            for key, nominated in list(c.nominated.get(node_name, {}).items()):
                if nominated.priority < pod.priority and key != pod.key:
                    c._clear_nominated(key)
                    c.queue.nominator.delete_nominated_pod_if_exists(key)
                    c.store.set_nominated_node_name(key, "")
        except ClusterSchedError as exc:
            return Status(Code.ERROR, (f"preemption of node {node_name} failed: {exc}",))
        return SUCCESS
