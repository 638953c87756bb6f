"""Binding cycles: WaitOnPermit → PreBind → Bind → PostBind, off the coordinator's thread.

The coordinator hands each assumed pod over as a BindingJob and never waits for it; it
collects BindingOutcomes at the top of its loop and only then touches the cache
(finish_binding, or Unreserve + Forget + requeue), so the cache stays single-threaded.

The in-process executor binds in batches: jobs whose profile binds with DefaultBinder
alone are written with one ``bind_many`` round trip, each binding's outcome still its
own (a conflict on one pod fails only that pod). Pods a Permit plugin parked wait on
their own thread so a slow permit never holds up other bindings.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.plugins.defaultbinder import DefaultBinder
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.store.results import BindOutcome
from cluster_sched.store.store import Store
from cluster_sched.telemetry.spans import (
    ATTR_CYCLE,
    ATTR_NODE_NAME,
    ATTR_POD_NAME,
    ATTR_POD_NAMESPACE,
    ATTR_POD_UID,
    ATTR_PROFILE,
    ATTR_RESULT,
    BINDING_CYCLE,
    RESULT_ERROR,
    RESULT_SCHEDULED,
)
from cluster_sched.telemetry.tracing import DISABLED, Tracing

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

    def close(self) -> None: ...


def run_binding_cycle(
    fwk: Framework, job: BindingJob, bind: Callable[[], Status] | None = None
) -> Status:
    """One binding cycle; ``bind`` overrides the Bind extension point (batched binds)."""
    pod, node = job.pod, job.node_name
    if job.waiting:
        s = fwk.wait_on_permit(pod)
        if not s.is_success:
            return s
    s = fwk.run_pre_bind(job.state, pod, node)
    if not s.is_success:
        return s
    s = bind() if bind is not None else fwk.run_bind(job.state, pod, node)
    if not s.is_success:
        return s
    fwk.run_post_bind(job.state, pod, node)
    return SUCCESS


def bind_status(outcome: BindOutcome | int, pod_key: str, node: str) -> Status:
    if outcome == BindOutcome.BOUND:
        return SUCCESS
    name = BindOutcome(outcome).name.lower().replace("_", " ")
    return Status(
        Code.ERROR, (f"binding pod {pod_key} to node {node}: conflict ({name})",), "DefaultBinder"
    )


def store_binder(store: Store) -> Callable[[Pod, str], Status]:
    """The DefaultBinder's write: the pods/binding subresource of the store."""

    def bind(pod: Pod, node: str) -> Status:
        result = store.bind(pod.key, node, pod.uid or None)
        return bind_status(result.outcome, pod.key, node)

    return bind


def _binds_with_default_binder_only(fwk: Framework) -> bool:
    return len(fwk.bind) == 1 and isinstance(fwk.bind[0], DefaultBinder)


class LocalBindingExecutor:
    """Binding cycles on background threads of this process."""

    def __init__(
        self,
        store: Store,
        frameworks: dict[str, Framework],
        *,
        batch: int = 512,
        waiters: int = 8,
        tracing: Tracing | None = None,
    ) -> None:
        self._store = store
        self._tracing = tracing or DISABLED
        self._frameworks = frameworks
        self._batch = batch
        self._jobs: queue.Queue[BindingJob | None] = queue.Queue()
        self._done: queue.Queue[BindingOutcome] = queue.Queue()
        self._pending = 0
        self._lock = threading.Lock()
        self._waiters = ThreadPoolExecutor(max_workers=waiters, thread_name_prefix="wait-on-permit")
        self._thread = threading.Thread(target=self._run, name="binder", daemon=True)
        self._thread.start()

    def submit(self, job: BindingJob) -> None:
        with self._lock:
            self._pending += 1
        if job.waiting:
            self._waiters.submit(self._run_one, job)
        else:
            self._jobs.put(job)

    def poll(self) -> list[BindingOutcome]:
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
        """Block until every submitted job has an outcome waiting in poll()."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._done.qsize() >= self.pending():
                return True
            time.sleep(0.001)
        return False

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=10)
        self._waiters.shutdown(wait=False, cancel_futures=True)

    # -- worker side

    def _run_one(self, job: BindingJob) -> None:
        fwk = self._frameworks[job.profile]
        span = self._start_span(job)
        try:
            with self._tracing.use_span(span):
                status = run_binding_cycle(fwk, job)
        except Exception as exc:  # a plugin crashed: the pod goes back, nothing is lost
            status = Status(Code.ERROR, (f"binding cycle failed: {exc}",))
        self._end_span(span, status)
        if status.is_success:
            # events are informational; a failed write loses no pod
            with contextlib.suppress(Exception):
                self._store.record_events([scheduled_event(job.pod, job.node_name)])
        self._done.put(BindingOutcome(job, status))

    def _start_span(self, job: BindingJob) -> Any:
        """The bindingCycle span, linked to the scheduling cycle that assumed the pod."""
        if not self._tracing.enabled:
            return None
        return self._tracing.start_span(
            BINDING_CYCLE,
            binding_span_attributes(job),
            links=[self._tracing.link_from_carrier(job.trace_carrier)],
        )

    def _end_span(self, span: Any, status: Status) -> None:
        if span is None:
            return
        span.set_attribute(ATTR_RESULT, RESULT_SCHEDULED if status.is_success else RESULT_ERROR)
        if not status.is_success:
            self._tracing.set_error(span, status.message())
        self._tracing.end(span)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            jobs = [job]
            # Linger briefly so a burst of cycles shares one bind_many and one events
            # write: at most BATCH_LINGER after the first job, the pods' bindings wait.
            deadline = time.monotonic() + BATCH_LINGER
            while len(jobs) < self._batch:
                remaining = deadline - time.monotonic()
                try:
                    nxt = (
                        self._jobs.get(timeout=remaining)
                        if remaining > 0
                        else self._jobs.get_nowait()
                    )
                except queue.Empty:
                    break
                if nxt is None:
                    self._run_batch(jobs)
                    return
                jobs.append(nxt)
            self._run_batch(jobs)

    def _run_batch(self, jobs: Sequence[BindingJob]) -> None:
        batched = [j for j in jobs if _binds_with_default_binder_only(self._frameworks[j.profile])]
        others = [
            j for j in jobs if not _binds_with_default_binder_only(self._frameworks[j.profile])
        ]
        for job in others:
            self._run_one(job)
        if not batched:
            return
        # PreBind for each; those that pass are bound together.
        ready: list[BindingJob] = []
        spans: dict[int, Any] = {}
        for job in batched:
            fwk = self._frameworks[job.profile]
            span = spans[id(job)] = self._start_span(job)
            try:
                with self._tracing.use_span(span):
                    s = fwk.run_pre_bind(job.state, job.pod, job.node_name)
            except Exception as exc:
                s = Status(Code.ERROR, (f"PreBind failed: {exc}",))
            if s.is_success:
                ready.append(job)
            else:
                self._end_span(span, s)
                self._done.put(BindingOutcome(job, s))
        if not ready:
            return
        try:
            results = self._store.bind_many(
                [(j.pod.key, j.node_name, j.pod.uid or None) for j in ready]
            )
        except Exception as exc:
            for job in ready:
                failed = Status(Code.ERROR, (f"binding failed: {exc}",))
                self._end_span(spans[id(job)], failed)
                self._done.put(BindingOutcome(job, failed))
            return
        events: list[dict[str, Any]] = []
        for job, res in zip(ready, results, strict=True):
            s = bind_status(res.outcome, job.pod.key, job.node_name)
            span = spans[id(job)]
            if s.is_success:
                with self._tracing.use_span(span):
                    self._frameworks[job.profile].run_post_bind(job.state, job.pod, job.node_name)
                events.append(scheduled_event(job.pod, job.node_name))
            self._end_span(span, s)
            self._done.put(BindingOutcome(job, s))
        if events:
            # Events are informational: a failed write loses no pod.
            with contextlib.suppress(Exception):
                self._store.record_events(events)


def binding_span_attributes(job: BindingJob) -> dict[str, Any]:
    return {
        ATTR_POD_NAMESPACE: job.pod.namespace,
        ATTR_POD_NAME: job.pod.name,
        ATTR_POD_UID: job.pod.uid,
        ATTR_NODE_NAME: job.node_name,
        ATTR_PROFILE: job.profile,
        ATTR_CYCLE: job.scheduling_cycle,
    }


def scheduled_event(pod: Pod, node: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "key": pod.key,
        "reason": "Scheduled",
        "message": f"Successfully assigned {pod.key} to {node}",
        "type": "Normal",
    }
