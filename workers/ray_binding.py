"""Binding cycles as Ray tasks: ``RayBindingExecutor`` (the task it runs, as a worker
runs it, is ``workers/binding_task.py``).

The coordinator hands each assumed pod over as a BindingJob and never waits for it
(cluster_sched/scheduler/binding.py). This executor ships jobs to Ray tasks in batches:
one task runs the binding cycles of several pods through the same ``bind_jobs`` the
in-process executor runs (cluster_sched/scheduler/binding_cycle.py), each outcome still
its own (``Store.bind_many`` refuses a second binding of any pod, so a pod is never bound
twice whatever happens to a task). This module is only the Ray wrapping: job encoding,
the worker's caches, the remote function, and the coordinator's bookkeeping of tasks.

Where each phase runs:

- **WaitOnPermit** runs in the coordinator process, on a small thread pool: the
  waiting-pods map Permit plugins park pods in lives in the coordinator's Framework
  handle, and the plugins that allow or reject them run there. A job whose Permit said
  Wait is held on one of those threads and sent to Ray only once it is allowed; a
  rejected or timed-out one comes back as a failed outcome without touching Ray.
- **PreBind, Bind, PostBind** run in the Ray task (``bind_jobs``), through Frameworks
  the worker builds from the same configuration (cached per worker process, as is its
  Redis client); DefaultBinder's ``handle.binder`` writes through ``Store.bind``. The
  task returns ``[code, reasons, plugin]`` per job as msgpack. The bindings it makes
  through the store carry the coordinator's informer's ``mark`` (sent with the task) in
  their watch entries, so the informer knows them as ours without decoding them, whether
  the task's reply has arrived or not (``scheduler/own_bindings.py``).
- A job whose cycle in the task reads nothing but the pod's key, uid, node and requests
  (the common case: no WaitOnPermit, every PreBind preflight Skips, DefaultBinder alone,
  no PostBind; ``_lean``) travels as a binding record: the task neither re-parses its
  manifest nor decodes its CycleState. Records are replied to after the whole jobs.

Batching is adaptive: a batch leaves when ``batch`` jobs wait, or when fewer than
``max_in_flight`` tasks run and the previous batch left ``BATCH_WAIT`` (250 ms) ago or
more: an idle cluster binds at once, a busy one sends at most one task per slot per
BATCH_WAIT. ``poll`` never blocks and never asks Ray: each task's completion callback
(on Ray's thread) decodes its reply and queues it for ``poll``. The executor's workers start warming
up when it is built, and the first job waits for them (``_warm_up``).

Every task carries the coordinator's fencing token (``[lease key, token]``, token 0 when
leader election is off); the worker's writes carry it, so a task sent before its leader
was deposed is refused whole (``FENCED``, counted by the coordinator as ``ray.bind``). A
task without a token writes nothing: each job fails with ``MISSING_FENCE``.

A task that fails as a whole (its worker was killed, Ray lost it) turns into outcomes per
job from what the store holds (``statuses_from_store``): a pod already bound to the job's
node (the binding landed before the crash) succeeds; every other job fails with an
error, and the coordinator runs Unreserve + Forget and requeues it. Tasks are never
retried by Ray, so no binding can land after its job was reported failed.

The worker exports the bindingCycle spans to the coordinator's OTLP endpoint, sent with
the task (``worker_tracing``: one exporter per endpoint per worker process, else
``process_tracing``'s environment).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

from cluster_sched.framework.instrumentation import RECORD_PLUGIN_METRICS
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.state_codec import (
    StateCodecError,
    decode_value,
    encode_state,
    encode_value,
)
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.plugins.names import DEFAULT_BINDER
from cluster_sched.scheduler.binding import BindingJob, BindingOutcome
from cluster_sched.scheduler.binding_cycle import statuses_from_store, wait_on_permit
from cluster_sched.scheduler.schedule_one import pre_bind_pre_flights
from cluster_sched.store.fence import is_fenced_message
from cluster_sched.store.store import Store
from cluster_sched.telemetry.tracing import DISABLED, Tracing
from workers.binding_task import MISSING_FENCE, bind_task, remote_bind_task
from workers.ray_runtime import config_document, ensure_ray

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_MAX_IN_FLIGHT",
    "MISSING_FENCE",
    "RayBindingExecutor",
    "bind_task",
    "ray_binding_executor",
    "redis_url_of",
]

DEFAULT_BATCH: Final = 256
"""Most jobs one binding task carries."""
DEFAULT_MAX_IN_FLIGHT: Final = 2
"""Binding tasks running at once before jobs wait for the next batch."""
BATCH_WAIT: Final = 0.25
"""Seconds between two batches sent into a free slot. A task costs this machine ~4 ms of
CPU over all its processes (the coordinator's submission, the raylet's lease, the
worker's call and reply: ``benchmarks/ray_binding_bench.py``) against ~40-65 µs per job
in the worker: at 2,500 pods/s a task every 20 ms cost ~80 µs per pod, a full batch
(``DEFAULT_BATCH``, every ~100 ms) ~16. At 100,000 nodes (~1,000 pods/s) a task every
100 ms carried ~100 jobs (~40 µs per pod): every 250 ms it carries a full batch again.
A binding waits at most this long longer to leave; an idle loop sends at once
(``wait_idle``)."""
WARM_UP_TIMEOUT: Final = 120.0
"""Seconds the executor waits, when built, for its workers to have imported the binding
code and built their store and Frameworks (a new worker takes seconds: the first
bindings of a run would otherwise wait for it)."""
DEFAULT_WAITERS: Final = 8
"""Coordinator threads holding pods parked by Permit (WaitOnPermit)."""


# ---------------------------------------------------------------------------- coordinator side


def redis_url_of(store: Store) -> str:
    """A redis:// URL for the store's own client (TCP or unix socket)."""
    kw = store.client.connection_pool.connection_kwargs
    auth = ""
    if kw.get("password"):
        from urllib.parse import quote

        auth = f"{quote(str(kw.get('username') or ''))}:{quote(str(kw['password']))}@"
    if kw.get("path"):
        return f"unix://{auth}{kw['path']}?db={kw.get('db', 0)}"
    return f"redis://{auth}{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"


class RayBindingExecutor:
    """BindingExecutor running binding cycles as Ray tasks (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        frameworks: dict[str, Framework],
        *,
        redis_url: str | None = None,
        config: bytes = b"",
        tracing: Tracing | None = None,
        batch: int = DEFAULT_BATCH,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        waiters: int = DEFAULT_WAITERS,
        address: str | None = None,
        mark: str = "",
    ) -> None:
        ensure_ray(address)
        self._store = store
        self._frameworks = frameworks
        self._redis_url = redis_url or redis_url_of(store)
        self._prefix = store.keys.prefix
        self._config = config
        self._tracing = tracing or DISABLED
        self._endpoint = getattr(self._tracing, "endpoint", "") if self._tracing.enabled else ""
        self._batch = max(1, batch)
        self._max_in_flight = max(1, max_in_flight)
        self._buffer: list[BindingJob] = []
        #: object ref -> the jobs its task carries
        self._in_flight: dict[Any, list[BindingJob]] = {}
        #: finished tasks (ref, decoded reply or the task's error), queued by Ray's
        #: completion callbacks: ``poll`` reads this queue, it never asks Ray
        self._finished: queue.Queue[tuple[Any, Any]] = queue.Queue()
        #: the informer's mark, which the tasks' bindings write into their watch
        #: entries (the informer then knows them without decoding them)
        self._mark = mark
        #: outcomes decided on waiter threads (rejected in WaitOnPermit)
        self._done: queue.Queue[BindingOutcome] = queue.Queue()
        #: jobs allowed by WaitOnPermit, to be sent by the coordinator's thread
        self._allowed: queue.Queue[BindingJob] = queue.Queue()
        self._pending = 0
        #: jobs on waiter threads (in WaitOnPermit)
        self._held = 0
        self._lock = threading.Lock()
        self._waiters = ThreadPoolExecutor(
            max_workers=max(1, waiters), thread_name_prefix="wait-on-permit"
        )
        #: binding tasks that failed as a whole (fault tests, metrics)
        self.failed_tasks = 0
        #: when the last batch left
        self._last_send = 0.0
        #: profile -> whether its jobs may travel as binding records (``_lean``)
        self._lean_profiles: dict[str, bool] = {}
        #: the warm-up tasks, waited for at the first job (``_warm_up``)
        self._warming: list[Any] = self._warm_up()

    # -- BindingExecutor

    def submit(self, job: BindingJob) -> None:
        if self._warming:
            self._warmed()
        self._pending += 1
        if job.waiting:
            with self._lock:
                self._held += 1
            self._waiters.submit(self._wait_on_permit, job)
            return
        self._buffer.append(job)
        self._flush()

    def poll(self) -> list[BindingOutcome]:
        out: list[BindingOutcome] = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                break
        self._take_allowed()
        while True:
            try:
                ref, reply = self._finished.get_nowait()
            except queue.Empty:
                break
            out.extend(self._collect(reply, self._in_flight.pop(ref)))
        self._flush()
        self._pending -= len(out)
        return out

    def pending(self) -> int:
        return self._pending

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted job's outcome is ready for ``poll``: no job held
        in WaitOnPermit, every job sent, every task's reply queued. False after
        ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                held = self._held
            if not held:
                self._take_allowed()
                self._flush(force=True)
                if self._finished.qsize() >= len(self._in_flight) and self._allowed.empty():
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)

    def _take_allowed(self) -> None:
        while True:
            try:
                self._buffer.append(self._allowed.get_nowait())
            except queue.Empty:
                break

    def close(self, timeout: float = 30.0) -> None:
        """Send what is buffered and wait (up to ``timeout``) for running tasks, so no
        binding is still being written after the coordinator stops."""
        import ray

        self._waiters.shutdown(wait=False, cancel_futures=True)
        self._flush(force=True)
        if self._in_flight:
            ray.wait(list(self._in_flight), num_returns=len(self._in_flight), timeout=timeout)

    # -- internals

    def _wait_on_permit(self, job: BindingJob) -> None:
        """On a coordinator thread: the pod waits in the coordinator's waiting-pods map."""
        s = wait_on_permit(self._frameworks[job.profile], job)
        if s.is_success:
            self._allowed.put(job)
        else:
            self._done.put(BindingOutcome(job, s))
        with self._lock:
            self._held -= 1

    def _flush(self, force: bool = False) -> None:
        """Send a batch when it is full, or when a slot is free and the last batch left
        BATCH_WAIT ago or more (so a pod arriving at an idle cluster is sent at once)."""
        while self._buffer and (
            force
            or len(self._buffer) >= self._batch
            or (
                len(self._in_flight) < self._max_in_flight
                and time.monotonic() - self._last_send >= BATCH_WAIT
            )
        ):
            jobs, self._buffer = self._buffer[: self._batch], self._buffer[self._batch :]
            self._last_send = time.monotonic()
            self._send(jobs)

    def _send(self, jobs: list[BindingJob]) -> None:
        wire: list[list[Any]] = []
        sendable: list[BindingJob] = []
        records: list[list[Any]] = []
        lean: list[BindingJob] = []
        for job in jobs:
            if self._lean(job):
                pod = job.pod
                records.append(
                    [
                        pod.namespace,
                        pod.name,
                        pod.uid,
                        job.node_name,
                        job.profile,
                        pod.requests,
                        job.scheduling_cycle,
                        job.trace_carrier,
                    ]
                )
                lean.append(job)
                continue
            try:
                state = encode_state(job.state)
            except StateCodecError as exc:
                self._done.put(
                    BindingOutcome(job, Status(Code.ERROR, (f"binding job cannot travel: {exc}",)))
                )
                continue
            raw = job.pod.raw
            wire.append(
                [
                    raw if raw is not None else job.pod,
                    job.node_name,
                    job.profile,
                    state,
                    job.scheduling_cycle,
                    job.trace_carrier,
                    job.nominate,
                ]
            )
            sendable.append(job)
        if not sendable and not lean:
            return
        fence = self._store.fence  # the term's token: a deposed leader's tasks are refused
        payload = encode_value(
            {
                "config": self._config,
                "jobs": wire,
                "records": records,
                "fence": [fence.key, fence.token],
                "mark": self._mark,
            }
        )
        ref = remote_bind_task().remote(payload, self._redis_url, self._prefix, self._endpoint)
        self._in_flight[ref] = sendable + lean  # the reply's order: jobs, then records
        ref.future().add_done_callback(lambda done, ref=ref: self._on_finished(ref, done))

    def _lean(self, job: BindingJob) -> bool:
        """Whether the task can bind ``job`` from a binding record (``binding_task.
        record_job``) instead of its pod and CycleState, because nothing of its cycle reads
        more: no WaitOnPermit, no nomination, every PreBind plugin's preflight Skips (its
        PreBind then succeeds from an empty state as from the cycle's), no plugin metrics
        drawn for the cycle, and a profile that binds with DefaultBinder alone, runs no
        PostBind and has no binder extender. Re-parsing a pod and decoding its CycleState
        (~1.2 KB of the job's ~1.3) were most of a task's CPU per pod."""
        if job.waiting or job.nominate or job.state.get(RECORD_PLUGIN_METRICS):
            return False
        fwk = self._frameworks.get(job.profile)
        if fwk is None:
            return False
        lean = self._lean_profiles.get(job.profile)
        if lean is None:
            lean = self._lean_profiles[job.profile] = (
                len(fwk.bind) == 1
                and fwk.bind[0].name == DEFAULT_BINDER
                and not fwk.post_bind
                and not any(getattr(e, "is_binder", True) for e in fwk.handle.extenders)
            )
        # asked again: ``nominate`` is False whatever PreBind will do when its gate is off
        return lean and (
            not fwk.pre_bind
            or pre_bind_pre_flights(fwk, job.state, job.pod, job.node_name).code == Code.SKIP
        )

    def _on_finished(self, ref: Any, done: Future[bytes]) -> None:
        """On Ray's thread, as a task finishes: its reply decoded and queued for
        ``poll``. Never raises: Ray would only log it."""
        try:
            reply: Any = decode_value(done.result())
        except Exception as exc:  # the task failed as a whole (worker died, bad reply)
            reply = exc
        self._finished.put((ref, reply))

    def _warm_up(self) -> list[Any]:
        """One empty task per slot, so each worker imports the binding code and builds
        its store and Frameworks before the first pod. They run while the coordinator
        goes on (a run loads the store meanwhile); the first job waits for them
        (``_warmed``)."""
        fence = self._store.fence
        payload = encode_value(
            {"config": self._config, "jobs": [], "fence": [fence.key, fence.token]}
        )
        return [
            remote_bind_task().remote(payload, self._redis_url, self._prefix, self._endpoint)
            for _ in range(self._max_in_flight)
        ]

    def _warmed(self) -> None:
        """Wait for the warm-up tasks (at most ``WARM_UP_TIMEOUT``), once."""
        import ray

        refs, self._warming = self._warming, []
        ray.wait(refs, num_returns=len(refs), timeout=WARM_UP_TIMEOUT)

    def _collect(self, reply: Any, jobs: list[BindingJob]) -> list[BindingOutcome]:
        """Outcomes from a task's decoded reply, or from the store when it failed."""
        try:
            if isinstance(reply, BaseException):
                raise reply
            out = [
                BindingOutcome(
                    job,
                    SUCCESS if code == Code.SUCCESS else Status(Code(code), tuple(reasons), plugin),
                )
                for job, (code, reasons, plugin, *_) in zip(jobs, reply, strict=True)
            ]
        except Exception as exc:  # the task failed as a whole (worker died, bad reply)
            self.failed_tasks += 1
            return self._recover(jobs, exc)
        # The task's refusals were counted in the worker; count them where they matter.
        fenced = sum(1 for o in out if is_fenced_message(o.status.message()))
        if fenced:
            self._store.fence.note_refused("ray.bind", fenced)
        return out

    def _recover(self, jobs: list[BindingJob], exc: BaseException) -> list[BindingOutcome]:
        """Outcomes for the jobs of a failed task, from what the store says now."""
        lines = str(exc).strip().splitlines()
        why = f"binding task failed: {type(exc).__name__}: {lines[-1] if lines else ''}"
        statuses = statuses_from_store(self._store, jobs, why)
        return [BindingOutcome(job, s) for job, s in zip(jobs, statuses, strict=True)]


def ray_binding_executor(
    *,
    redis_url: str | None = None,
    config_path: str | None = None,
    tracing: Tracing | None = None,
    address: str | None = None,
    batch: int = DEFAULT_BATCH,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    mark: str = "",
) -> Callable[[Store, dict[str, Framework]], RayBindingExecutor]:
    """The ``binding_executor`` factory for Coordinator: binding cycles as Ray tasks whose
    Frameworks come from the configuration file at ``config_path`` (None: defaults);
    ``mark``: the informer's (``RayBindingExecutor``)."""
    config = config_document(config_path)

    def factory(store: Store, frameworks: dict[str, Framework]) -> RayBindingExecutor:
        return RayBindingExecutor(
            store,
            frameworks,
            redis_url=redis_url,
            config=config,
            tracing=tracing,
            batch=batch,
            max_in_flight=max_in_flight,
            address=address,
            mark=mark,
        )

    return factory
