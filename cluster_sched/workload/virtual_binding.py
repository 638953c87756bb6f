"""The binding executor of virtual-time runs: binding cycles on the coordinator's thread.

A background binder finishes a batch's bindings whenever the OS schedules it, so when
their watch events land relative to the next cycles depends on the machine. On a
virtual clock that would make two runs with one seed differ, and the 2 ms batching
linger would cost more than the cycles themselves. So here ``poll`` runs the waiting
jobs' binding cycles (the same ``binding_cycle.bind_jobs`` both real executors run) on
the caller's thread, at the point of the loop where outcomes are collected anyway.
Pods a Permit plugin parked still wait on their own threads: they wait for simulated
time (``WaitingPods.expire``) or for another cycle to allow them.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from cluster_sched.framework.runtime import Framework
from cluster_sched.scheduler.binding import BindingJob, BindingOutcome
from cluster_sched.scheduler.binding_cycle import bind_jobs, statuses_from_store
from cluster_sched.store.store import Store

__all__ = ["InlineBindingExecutor"]

log = logging.getLogger(__name__)


class InlineBindingExecutor:
    """BindingExecutor whose ``poll`` binds what was submitted since the last poll."""

    def __init__(self, store: Store, frameworks: dict[str, Framework], *, waiters: int = 8) -> None:
        self._store = store
        self._frameworks = frameworks
        self._jobs: list[BindingJob] = []
        self._done: queue.Queue[BindingOutcome] = queue.Queue()
        self._pending = 0
        self._lock = threading.Lock()
        self._waiters = ThreadPoolExecutor(max_workers=waiters, thread_name_prefix="wait-on-permit")

    def submit(self, job: BindingJob) -> None:
        with self._lock:
            self._pending += 1
        if job.waiting:
            self._waiters.submit(self._bind, [job])
        else:
            self._jobs.append(job)

    def _bind(self, jobs: Sequence[BindingJob]) -> None:
        try:
            statuses = bind_jobs(self._store, self._frameworks, jobs)
        except Exception as exc:  # a bug in the cycle itself: ask the store what landed
            log.exception("binding cycles of %d pods failed", len(jobs))
            statuses = statuses_from_store(self._store, jobs, f"binding cycle failed: {exc}")
        for job, status in zip(jobs, statuses, strict=True):
            self._done.put(BindingOutcome(job, status))

    def poll(self) -> list[BindingOutcome]:
        if self._jobs:
            jobs, self._jobs = self._jobs, []
            self._bind(jobs)
        out: list[BindingOutcome] = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                break
        if out:
            with self._lock:
                self._pending -= len(out)
        return out

    def pending(self) -> int:
        with self._lock:
            return self._pending

    def wait_idle(self, timeout: float) -> bool:
        """Inline jobs finish at the next poll; only Permit waiters can still be out."""
        return self._done.qsize() + len(self._jobs) >= self.pending()

    def close(self) -> None:
        self._waiters.shutdown(wait=False, cancel_futures=True)
