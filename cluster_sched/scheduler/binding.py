"""Binding executors: where binding cycles run, off the coordinator's thread.

The coordinator hands each assumed pod over as a BindingJob and never waits for it; it
collects BindingOutcomes at the top of its loop and only then touches the cache
(finish_binding, or Unreserve + Forget + requeue), so the cache stays single-threaded.

The cycle itself is ``binding_cycle.bind_jobs``, shared by both executors: this module's
LocalBindingExecutor (threads of this process) and ``workers.ray_binding``'s
RayBindingExecutor (Ray tasks). The local one binds in batches: a job wakes an idle
binder thread at once, the jobs submitted while it is busy reach it in one piece (at the
loop's next poll), and jobs waiting for it are handed to ``bind_jobs`` together (DefaultBinder-only profiles then
share one ``bind_many``). Pods a Permit plugin parked wait on their own thread so a slow
permit never holds up other bindings.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Status
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.binding_cycle import Confirm, bind_jobs, statuses_from_store
from cluster_sched.store.store import Store
from cluster_sched.telemetry.tracing import DISABLED, Tracing

log = logging.getLogger(__name__)

#: How long the in-process binder waits for more jobs to bind them together (seconds).
BATCH_LINGER = 0.002


@dataclass(slots=True)
class BindingJob:
    pod: Pod
    node_name: str
    profile: str
    state: CycleState
    info: QueuedPodInfo
    scheduling_cycle: int
    #: the pod parked in Permit's waiting-pods map
    waiting: bool = False
    #: W3C trace context of the scheduling cycle, for the linked binding span
    trace_carrier: dict[str, str] = field(default_factory=dict)
    #: the binding cycle first sets status.nominatedNodeName = node_name
    #: (NominatedNodeNameForExpectation; a waiting pod's is written by its cycle)
    nominate: bool = False


@dataclass(slots=True)
class BindingOutcome:
    job: BindingJob
    status: Status


class BindingExecutor(Protocol):
    def submit(self, job: BindingJob) -> None: ...

    def poll(self) -> list[BindingOutcome]:
        """Finished binding cycles since the last poll (never blocks)."""
        ...

    def pending(self) -> int: ...

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted job's outcome is ready for ``poll``; False if
        ``timeout`` seconds pass first."""
        ...

    def close(self) -> None: ...


class _Outcomes:
    """Finished binding cycles waiting for ``poll``: a batch of cycles is added in one
    locked step and ``poll`` takes them all in another (a ``queue.Queue`` took a lock
    and a notify per pod on each side). ``qsize``: how many are waiting."""

    __slots__ = ("_items", "_lock")

    def __init__(self) -> None:
        self._items: list[BindingOutcome] = []
        self._lock = threading.Lock()

    def put_many(self, outcomes: list[BindingOutcome]) -> None:
        with self._lock:
            self._items.extend(outcomes)

    def take(self) -> list[BindingOutcome]:
        if not self._items:
            return []
        with self._lock:
            out, self._items = self._items, []
        return out

    def qsize(self) -> int:
        return len(self._items)


class ThreadedOutcomes:
    """What the in-process executors share: jobs counted at submit, Permit-parked pods
    bound on waiter threads, outcomes queued for ``poll`` (which never blocks).
    ``_enqueue`` decides where the other jobs wait."""

    def __init__(
        self,
        store: Store,
        frameworks: dict[str, Framework],
        *,
        waiters: int = 8,
        tracing: Tracing | None = None,
        confirm: Confirm | None = None,
        mark: str = "",
    ) -> None:
        self._store = store
        self._confirm = confirm
        #: the informer's mark, written into our bindings' watch entries (own_bindings.py)
        self._mark = mark
        self._tracing = tracing or DISABLED
        self._frameworks = frameworks
        self._done = _Outcomes()
        self._pending = 0
        self._lock = threading.Lock()
        self._waiters = ThreadPoolExecutor(max_workers=waiters, thread_name_prefix="wait-on-permit")

    def submit(self, job: BindingJob) -> None:
        with self._lock:
            self._pending += 1
        if job.waiting:
            self._waiters.submit(self._bind, [job])
        else:
            self._enqueue(job)

    def _enqueue(self, job: BindingJob) -> None:
        raise NotImplementedError

    def poll(self) -> list[BindingOutcome]:
        out = self._done.take()
        if out:
            with self._lock:
                self._pending -= len(out)
        return out

    def pending(self) -> int:
        with self._lock:
            return self._pending

    def _bind(self, jobs: Sequence[BindingJob]) -> None:
        """Binding cycles for ``jobs``, on a binder or waiter thread; every job gets its
        outcome, whatever the plugins do, so the thread lives on."""
        try:
            statuses = bind_jobs(
                self._store, self._frameworks, jobs, self._tracing, self._confirm, self._mark
            )
        except Exception as exc:  # a bug in the cycle itself: ask the store what landed
            log.exception("binding cycles of %d pods failed", len(jobs))
            statuses = statuses_from_store(self._store, jobs, f"binding cycle failed: {exc}")
        self._done.put_many(
            [BindingOutcome(job, status) for job, status in zip(jobs, statuses, strict=True)]
        )


class LocalBindingExecutor(ThreadedOutcomes):
    """Binding cycles on background threads of this process."""

    def __init__(
        self,
        store: Store,
        frameworks: dict[str, Framework],
        *,
        batch: int = 512,
        waiters: int = 8,
        tracing: Tracing | None = None,
        confirm: Confirm | None = None,
        mark: str = "",
    ) -> None:
        super().__init__(
            store, frameworks, waiters=waiters, tracing=tracing, confirm=confirm, mark=mark
        )
        self._batch = batch
        self._jobs: queue.Queue[list[BindingJob] | None] = queue.Queue()
        #: jobs submitted while the binder was busy, since the last hand-over: the
        #: binder gets them as one batch (one queue put and one wake-up per batch of
        #: cycles, not per pod)
        self._submitted: list[BindingJob] = []
        #: the binder thread waits for jobs with none handed over: the next job goes
        #: to it at once (a lone pod's binding never waits for the next poll)
        self._binder_waiting = False
        self._thread = threading.Thread(target=self._run, name="binder", daemon=True)
        self._thread.start()

    def _enqueue(self, job: BindingJob) -> None:
        if self._binder_waiting and not self._submitted:
            self._binder_waiting = False  # a race here costs one more put at most
            self._jobs.put([job])
        else:
            self._submitted.append(job)

    def _hand_over(self) -> None:
        """Give the jobs submitted so far to the binder thread, in one piece."""
        if self._submitted:
            jobs, self._submitted = self._submitted, []
            self._jobs.put(jobs)

    def poll(self) -> list[BindingOutcome]:
        """Hand the jobs submitted while the binder was busy over (the loop polls
        between batches of cycles, so they wait at most one batch), then collect
        finished ones."""
        self._hand_over()
        return super().poll()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted job has an outcome waiting in poll()."""
        self._hand_over()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._done.qsize() >= self.pending():
                return True
            time.sleep(0.001)
        return False

    def close(self) -> None:
        self._hand_over()
        self._jobs.put(None)
        self._thread.join(timeout=10)
        self._waiters.shutdown(wait=False, cancel_futures=True)

    # -- worker side

    def _run(self) -> None:
        while True:
            self._binder_waiting = self._jobs.empty()
            first = self._jobs.get()
            self._binder_waiting = False
            if first is None:
                return
            jobs = list(first)
            # Linger so a burst of cycles shares one bind_many and one events write: the
            # pods' bindings wait BATCH_LINGER after the first batch. Slept out rather
            # than waited on the queue: a timed get wakes this thread (and takes the GIL
            # from the scheduling loop) on every batch handed over meanwhile.
            time.sleep(BATCH_LINGER)
            while len(jobs) < self._batch:
                try:
                    nxt = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._bind_in_batches(jobs)
                    return
                jobs.extend(nxt)
            self._bind_in_batches(jobs)

    def _bind_in_batches(self, jobs: list[BindingJob]) -> None:
        for start in range(0, len(jobs), self._batch):
            self._bind(jobs[start : start + self._batch])
