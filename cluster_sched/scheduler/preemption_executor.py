"""Carrying out a preemption decision (upstream prepareCandidate / prepareCandidateAsync),
against the store.

DefaultPreemption decides; this executes: victims waiting in Permit are rejected, the
others deleted from the store (their DELETED events free the node through the watch),
and lower-priority pods nominated to the same node lose their nomination (through the
one nominator, and in their status). The preemptor's own nomination is recorded by the
failure handler, as upstream.

With SchedulerAsyncPreemption (the v1.35 default) the store writes run off the
scheduling cycle, on a worker thread of their own, as upstream's goroutine does; the
preemptor is then "running preemption" and DefaultPreemption's PreEnqueue holds it
gated until the deletions are done. What "done" means is read on the coordinator's
thread, from the informer's view only (upstream's last-victim check against the pod
lister): the preemptor is released once the watch has seen every victim it deleted go
(or being deleted), or when the worker reports a failed write (the coordinator then
activates it, as upstream does: ``take_failed``). A decision therefore never
depends on how far the worker thread got, only on which watch events the coordinator has
read, which keeps test drivers that settle the worker before reading the watch
deterministic. In-memory steps (rejecting victims waiting in Permit, dropping
nominations in the nominator) stay on the coordinator's thread, which owns them.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cluster_sched.api.objects import Pod
from cluster_sched.errors import ClusterSchedError
from cluster_sched.features import ASYNC_PREEMPTION
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.queue.nominator import Nominator
from cluster_sched.store.store import Store

log = logging.getLogger(__name__)

__all__ = ["WORKER_IDLE_SECONDS", "StorePreemptionExecutor"]

#: How long the async worker waits for the next job before its thread ends.
WORKER_IDLE_SECONDS = 1.0


@dataclass(slots=True)
class _AsyncJob:
    """One preemptor's pending store writes (upstream's goroutine)."""

    preemptor: Pod
    node_name: str
    #: (key, uid) of the victims this job deletes
    victims: list[tuple[str, str]]
    events: list[dict[str, str]]
    #: lower-priority pods whose nominatedNodeName is cleared in the store
    denominated: list[str]
    failed: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class StorePreemptionExecutor:
    def __init__(
        self,
        store: Store,
        frameworks: Mapping[str, Framework],
        nominator: Nominator,
        pod_lookup: Callable[[str], Pod | None] | None = None,
    ) -> None:
        self.store = store
        self.frameworks = frameworks
        self.nominator = nominator
        #: the informer's pods (default: the nominator's lookup, which is the same view)
        self.pod_lookup = pod_lookup or nominator.pod_lookup
        #: preemptor uid -> its async job (upstream Executor.preempting)
        self._preempting: dict[str, _AsyncJob] = {}
        #: jobs for the worker; None only wakes it (``close``)
        self._jobs: queue.Queue[_AsyncJob | None] = queue.Queue()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._unfinished = 0
        #: keys of preemptors whose writes failed, for the coordinator to activate
        self._failed: list[str] = []

    # ------------------------------------------------------------------ decisions

    def _async_enabled(self, pod: Pod) -> bool:
        fwk = self.frameworks.get(pod.scheduler_name)
        return fwk is not None and fwk.handle.features.enabled(ASYNC_PREEMPTION)

    def prepare_candidate(self, pod: Pod, node_name: str, victims: Sequence[Pod]) -> Status:
        if self._async_enabled(pod):
            self.prepare_candidate_async(pod, node_name, victims)
            return SUCCESS
        deletes, events = self._reject_waiting_and_collect(pod, node_name, victims)
        try:
            if deletes:
                self.store.delete_many([("Pod", key) for key, _ in deletes])
                self.store.record_events(events)
            for key in self._drop_lower_nominations(pod, node_name):
                self.store.set_nominated_node_name(key, "")
        except ClusterSchedError as exc:
            return Status(Code.ERROR, (f"preemption of node {node_name} failed: {exc}",))
        return SUCCESS

    def prepare_candidate_async(self, pod: Pod, node_name: str, victims: Sequence[Pod]) -> None:
        """upstream prepareCandidateAsync: victims already terminating are skipped; if
        none is left there is nothing to wait for. Otherwise the preemptor is marked
        as running preemption and the writes go to the worker."""
        live = [v for v in victims if v.meta.deletion_timestamp is None]
        if not live:
            return
        deletes, events = self._reject_waiting_and_collect(pod, node_name, live)
        denominated = self._drop_lower_nominations(pod, node_name)
        if not deletes:
            # Only waiting pods were victims: rejected already, nothing to wait for.
            for key in denominated:
                self.store.set_nominated_node_name(key, "")
            return
        job = _AsyncJob(pod, node_name, deletes, events, denominated)
        self._forget_gone_preemptors()
        self._preempting[pod.uid or pod.key] = job
        with self._lock:
            self._unfinished += 1
            self._jobs.put(job)
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._run, name="async-preemption", daemon=True
                )
                self._worker.start()

    def is_pod_running_preemption(self, pod: Pod) -> bool:
        """upstream IsPodRunningPreemption, read on the coordinator's thread: true until
        the watch shows every deleted victim gone or terminating (or the writes failed)."""
        uid = pod.uid or pod.key
        job = self._preempting.get(uid)
        if job is None:
            return False
        if job.done.is_set() and job.failed:
            del self._preempting[uid]
            return False
        for key, victim_uid in job.victims:
            seen = self.pod_lookup(key)
            if seen is not None and seen.uid == victim_uid and seen.meta.deletion_timestamp is None:
                return True
        del self._preempting[uid]
        return False

    def _forget_gone_preemptors(self) -> None:
        """Drop the entries of finished jobs whose preemptor was deleted (its PreEnqueue
        will never ask again)."""
        for uid, job in list(self._preempting.items()):
            seen = self.pod_lookup(job.preemptor.key)
            if job.done.is_set() and (seen is None or (seen.uid or seen.key) != uid):
                del self._preempting[uid]

    def take_failed(self) -> list[str]:
        """Preemptors whose async preemption failed since the last call: upstream moves
        them to activeQ (the coordinator does, on its thread) so none stays stuck."""
        if not self._failed:
            return []
        with self._lock:
            out, self._failed = self._failed, []
        return out

    def preempting(self) -> list[str]:
        """Uids of the preemptors whose preemption has not been seen to finish."""
        return list(self._preempting)

    # ------------------------------------------------------------------ the worker

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted job's writes are done; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._unfinished == 0:
                    return True
            time.sleep(0.001)
        return False

    def _run(self) -> None:
        """Drain the job queue; end once it stayed empty for ``WORKER_IDLE_SECONDS`` or
        ``close`` asked (a new thread starts with the next job). Staying a while spares
        a preemption burst one thread start per preemptor on the scheduling cycle."""
        while True:
            try:
                job = self._jobs.get(timeout=WORKER_IDLE_SECONDS)
            except queue.Empty:
                job = None
            if job is None:  # idle, or close()'s wake-up
                with self._lock:
                    if self._jobs.empty():
                        self._worker = None
                        return
                continue
            try:
                self._execute(job)
            finally:
                job.done.set()
                with self._lock:
                    self._unfinished -= 1

    def _execute(self, job: _AsyncJob) -> None:
        try:
            for key in job.denominated:
                self.store.set_nominated_node_name(key, "")
            self.store.delete_many([("Pod", key) for key, _ in job.victims])
            self.store.record_events(job.events)
        except Exception:
            # upstream: the preemptor re-enters scheduling (PreEnqueue lets it through)
            log.exception(
                "async preemption for %s on node %s failed", job.preemptor.key, job.node_name
            )
            job.failed = True
            with self._lock:
                self._failed.append(job.preemptor.key)

    def close(self) -> None:
        self.wait_idle(10.0)
        with self._lock:
            if self._worker is not None:
                self._jobs.put(None)  # wake the idle worker so that it ends now

    # ------------------------------------------------------------------ shared steps

    def _reject_waiting_and_collect(
        self, pod: Pod, node_name: str, victims: Sequence[Pod]
    ) -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
        """Victims waiting in Permit are rejected (in memory); the others are returned as
        (key, uid) to delete, with their Preempted events."""
        deletes: list[tuple[str, str]] = []
        events: list[dict[str, str]] = []
        for victim in victims:
            fwk = self.frameworks.get(victim.scheduler_name)
            if fwk is not None and fwk.handle.waiting_pods.reject(
                victim.key, "DefaultPreemption", "preempted"
            ):
                continue
            deletes.append((victim.key, victim.uid))
            events.append(
                {
                    "kind": "Pod",
                    "key": victim.key,
                    "reason": "Preempted",
                    "message": f"Preempted by pod {pod.uid or pod.key} on node {node_name}",
                    "type": "Normal",
                }
            )
        return deletes, events

    def _drop_lower_nominations(self, pod: Pod, node_name: str) -> list[str]:
        """Lower-priority pods nominated to the node lose their nomination in the
        nominator; returns their keys (their status is cleared in the store)."""
        keys: list[str] = []
        for nominated in self.nominator.pods_nominated_to(node_name):
            if nominated.priority < pod.priority and nominated.key != pod.key:
                self.nominator.delete_nominated_pod_if_exists(nominated.key)
                keys.append(nominated.key)
        return keys
