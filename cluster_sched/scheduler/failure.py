"""What happens to a pod whose scheduling attempt failed (upstream handleSchedulingFailure).

Back to the queue with the scheduling cycle it was popped in (so the moveRequestCycle
rule decides between backoff and unschedulable), the nomination PostFilter made recorded
through the one nominator, a FailedScheduling event and the PodScheduled=False
condition written to the store.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import redis

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.errors import ClusterSchedError, StoreError
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Code, Status
from cluster_sched.queue.scheduling_queue import SchedulingQueue
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.batch import ScriptBatch
from cluster_sched.store.deferred import record_events_in, update_pod_status_in
from cluster_sched.store.store import Store

log = logging.getLogger(__name__)

__all__ = ["FailureHandler"]


class FailureHandler:
    def __init__(
        self,
        store: Store,
        queue: SchedulingQueue,
        pods: Mapping[str, Pod],
        stats: RunStats,
    ) -> None:
        self.store = store
        self.queue = queue
        self.pods = pods
        self.stats = stats

    def handle_scheduling_failure(
        self,
        fwk: Framework,
        pod: Pod,
        info: QueuedPodInfo,
        cycle: int,
        status: Status,
        nominated_node: str,
    ) -> None:
        """Requeue ``pod`` (unless deleted or bound meanwhile), record the nomination,
        and report the failure on the pod."""
        self.stats.failed_attempts += 1
        if status.code == Code.ERROR:
            self.stats.errors += 1
            info = evolve(info, unschedulable_plugins=frozenset(), pending_plugins=frozenset())
        current = self.pods.get(pod.key)
        # The requeue, the nomination, the Event and the status go to Redis in one
        # round trip (a pipeline; each script atomic on its own, run in this order).
        batch = ScriptBatch()
        requeued = None
        if current is None or current.node_name:
            # Deleted meanwhile, or bound by someone else: nothing to requeue.
            self.queue.done(pod.key)
        else:
            requeued = self.queue.add_unschedulable_in(
                batch,
                evolve(
                    info,
                    priority=current.priority,
                    nominated_node_name=nominated_node or info.nominated_node_name,
                ),
                cycle,
            )
        nominated = None
        if nominated_node:
            nominator = self.queue.nominator
            nominated = nominator.add_nominated_pod_in(batch, pod.key, nominated_node, pod.priority)
        message = status.message()
        self.stats.on_failure(pod.key, message)
        reason = "Unschedulable" if status.is_rejected else "SchedulerError"
        event = record_events_in(
            self.store,
            batch,
            [
                {
                    "kind": "Pod",
                    "key": pod.key,
                    "reason": "FailedScheduling",
                    "message": message,
                    "type": "Warning",
                    "action": "",
                }
            ],
        )
        written = update_pod_status_in(
            self.store,
            batch,
            pod.key,
            condition={
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
            },
            nominated_node_name=nominated_node if nominated_node else None,
            pod_uid=pod.uid or None,
            # the informer's copy: one compare-and-set, read only when it is stale
            cached=current.raw if current is not None else None,
        )
        try:
            batch.execute()
        except redis.RedisError as exc:
            # Nothing is sent again: a call may have run before the connection failed.
            raise StoreError(f"cannot record the failure of {pod.key} in Redis: {exc}") from exc
        # Every call ran (or was refused) in Redis: each is finished, so this process's
        # view follows what Redis holds; the queue's and the nominator's errors are
        # raised after that, the Event's and the status's only logged (as before).
        raised: list[ClusterSchedError] = []
        for finish in (requeued, nominated):
            try:
                if finish is not None:
                    finish()
            except ClusterSchedError as exc:
                raised.append(exc)
        for record in (event, written):
            try:
                record()
            except ClusterSchedError as exc:
                log.warning("could not record the failure of %s: %s", pod.key, exc)
        if raised:
            raise raised[0]
