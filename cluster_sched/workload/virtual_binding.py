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

from cluster_sched.framework.runtime import Framework
from cluster_sched.scheduler.binding import BindingJob, BindingOutcome, ThreadedOutcomes
from cluster_sched.store.store import Store

__all__ = ["InlineBindingExecutor"]


class InlineBindingExecutor(ThreadedOutcomes):
    """BindingExecutor whose ``poll`` binds what was submitted since the last poll."""

    def __init__(self, store: Store, frameworks: dict[str, Framework], *, waiters: int = 8) -> None:
        super().__init__(store, frameworks, waiters=waiters)
        self._jobs: list[BindingJob] = []

    def _enqueue(self, job: BindingJob) -> None:
        self._jobs.append(job)

    def poll(self) -> list[BindingOutcome]:
        if self._jobs:
            jobs, self._jobs = self._jobs, []
            self._bind(jobs)
        return super().poll()

    def wait_idle(self, timeout: float) -> bool:
        """Inline jobs finish at the next poll; only Permit waiters can still be out."""
        return self._done.qsize() + len(self._jobs) >= self.pending()

    def close(self) -> None:
        self._waiters.shutdown(wait=False, cancel_futures=True)
