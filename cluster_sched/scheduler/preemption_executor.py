"""Carrying out a preemption decision (upstream prepareCandidate), against the store.

DefaultPreemption decides; this executes: victims waiting in Permit are rejected, the
others deleted from the store (their DELETED events free the node through the watch),
and lower-priority pods nominated to the same node lose their nomination (through the
one nominator, and in their status). The preemptor's own nomination is recorded by the
failure handler, as upstream.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from cluster_sched.api.objects import Pod
from cluster_sched.errors import ClusterSchedError
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.queue.nominator import Nominator
from cluster_sched.store.store import Store

log = logging.getLogger(__name__)


class StorePreemptionExecutor:
    def __init__(
        self, store: Store, frameworks: Mapping[str, Framework], nominator: Nominator
    ) -> None:
        self.store = store
        self.frameworks = frameworks
        self.nominator = nominator

    def prepare_candidate(self, pod: Pod, node_name: str, victims: Sequence[Pod]) -> Status:
        deletes: list[tuple[str, str]] = []
        events: list[dict[str, str]] = []
        for victim in victims:
            fwk = self.frameworks.get(victim.scheduler_name)
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
                self.store.delete_many(deletes)
                self.store.record_events(events)
            for nominated in self.nominator.pods_nominated_to(node_name):
                if nominated.priority < pod.priority and nominated.key != pod.key:
                    self.nominator.delete_nominated_pod_if_exists(nominated.key)
                    self.store.set_nominated_node_name(nominated.key, "")
        except ClusterSchedError as exc:
            return Status(Code.ERROR, (f"preemption of node {node_name} failed: {exc}",))
        return SUCCESS
