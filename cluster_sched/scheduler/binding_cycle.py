"""The binding cycle, written once: WaitOnPermit → PreBind → Bind → PostBind.

Both binding executors run their jobs through ``bind_jobs``: LocalBindingExecutor on its
threads (binding.py) and the Ray binding task in a worker (workers/ray_binding.py). The
error handling is upstream's bindingCycle:

- WaitOnPermit rejecting or timing out, and PreBind or Bind failing (an error or
  rejection Status, or a plugin raising) give a failed outcome; the coordinator then runs
  Unreserve, forgets the assumed pod and requeues it (``Coordinator._finish_binding``).
- PostBind's outcome is ignored, as upstream's PostBind returns nothing: the pod counts
  as bound (``Framework.run_post_bind`` logs a plugin that raises).

So no plugin can raise out of ``bind_jobs``: every job gets an outcome, no binder thread
or task dies, and no pod stays assumed for want of one.

Jobs of profiles that bind with DefaultBinder alone are bound together with one
``Store.bind_many``, each binding's outcome still its own (a conflict on one pod fails
only that pod); every other job runs its Bind plugins on its own, and a job an
extender binder is interested in is bound by that extender instead (upstream
extendersBinding; the extender writes the binding itself). Each job gets a
``bindingCycle`` span linked to the scheduling cycle that assumed the pod (its trace
carrier), the extension points as its children. A pod's Scheduled event is written by
the store's bind script together with its binding (a binder dying in between cannot
lose it); only pods a Bind plugin bound outside the store get theirs afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cluster_sched.api.objects import Pod
from cluster_sched.errors import ClusterSchedError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.extender import extenders_binding
from cluster_sched.framework.instrumentation import record_batched_bind
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.plugins.names import DEFAULT_BINDER, NODE_RESOURCES_FIT
from cluster_sched.plugins.noderesources.resources import is_extended_resource
from cluster_sched.store.accounting import bound_by_store
from cluster_sched.store.results import BindOutcome, BindResult
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

__all__ = [
    "Confirm",
    "CycleJob",
    "StoreBinder",
    "bind_jobs",
    "bind_status",
    "fit_skips",
    "nominate",
    "scheduled_event",
    "statuses_from_store",
    "store_binder",
    "wait_on_permit",
]

log = logging.getLogger(__name__)

#: Told the store's replies of a shared ``bind_many`` (an observer's hook).
Confirm = Callable[[Sequence[BindResult]], None]


class CycleJob(Protocol):
    """What a binding cycle reads of a job: a BindingJob, or a Ray worker's decoded one."""

    @property
    def pod(self) -> Pod: ...

    @property
    def node_name(self) -> str: ...

    @property
    def profile(self) -> str: ...

    @property
    def state(self) -> CycleState: ...

    @property
    def scheduling_cycle(self) -> int: ...

    @property
    def trace_carrier(self) -> Mapping[str, str]:
        """W3C trace context of the scheduling cycle, for the linked bindingCycle span."""
        ...

    @property
    def waiting(self) -> bool:
        """Permit parked the pod in the waiting-pods map: WaitOnPermit first."""
        ...

    @property
    def nominate(self) -> bool:
        """Set status.nominatedNodeName = node_name before PreBind (``nominate``)."""
        ...


def wait_on_permit(fwk: Framework, job: CycleJob) -> Status:
    """WaitOnPermit: blocks while Permit plugins keep the pod waiting; must run where the
    waiting-pods map is (the coordinator's process). A plugin raising is an Error."""
    if not job.waiting:
        return SUCCESS
    return _guarded("WaitOnPermit", job, lambda: fwk.wait_on_permit(job.pod))


def bind_jobs(
    store: Store,
    frameworks: Mapping[str, Framework],
    jobs: Sequence[CycleJob],
    tracing: Tracing = DISABLED,
    confirm: Confirm | None = None,
    mark: str = "",
) -> list[Status]:
    """One binding cycle per job, each outcome independent, in the order of ``jobs``
    (see the module docstring). Never raises for a plugin's sake. ``confirm`` is handed
    the store's replies to the shared ``bind_many`` as soon as they arrive. ``mark``: the
    coordinator's informer's (``OwnMark.mark``), written into the watch entries of the
    bindings ``bind_many`` makes, so the informer knows them without decoding them."""
    nominate(store, jobs)
    cycles = [_Cycle(job, frameworks.get(job.profile), _start_span(tracing, job)) for job in jobs]
    together: list[_Cycle] = []
    for c in cycles:
        with tracing.use_span(c.span):
            c.status = _until_bind(c)
        if c.status is None:
            together.append(c)
    if together:
        _bind_together(store, together, tracing, confirm, mark)
    shared = {id(c) for c in together}
    alone = [
        c for c in cycles if id(c) not in shared and c.status is not None and c.status.is_success
    ]
    if alone:
        with contextlib.suppress(Exception):  # events are informational; no pod is lost
            _record_scheduled_events(store, alone)
    out = [c.status or Status(Code.ERROR, ("binding job lost",)) for c in cycles]
    for c, status in zip(cycles, out, strict=True):
        _end_span(tracing, c.span, status)
    return out


def nominate(store: Store, jobs: Sequence[CycleJob]) -> None:
    """NominatedNodeNameForExpectation: upstream bindingCycle's first step, for the jobs
    whose scheduling cycle asked for it (PreBind will do work): status.nominatedNodeName
    = the job's node, in one round trip for the lot (a compare-and-set against the pod
    as its cycle saw it; read only if it changed since), before any of their PreBinds. A
    failed write is logged, never fatal (the binding goes on)."""
    todo = [(j.pod.key, j.node_name, j.pod.uid or None, j.pod.raw) for j in jobs if j.nominate]
    if not todo:
        return
    try:
        store.set_nominated_node_names(todo)
    except ClusterSchedError as exc:
        log.error(
            "could not set the nominated node of %d pods in their binding: %s", len(todo), exc
        )


@dataclass(slots=True)
class _Cycle:
    job: CycleJob
    fwk: Framework | None
    span: Any
    #: None while the job waits for the shared ``bind_many``
    status: Status | None = None


def _binds_with_default_binder_only(fwk: Framework) -> bool:
    return len(fwk.bind) == 1 and fwk.bind[0].name == DEFAULT_BINDER


def _until_bind(c: _Cycle) -> Status | None:
    """WaitOnPermit and PreBind; then Bind and PostBind unless the job is bound with
    the others (None: PreBind passed, bind it together)."""
    fwk, job = c.fwk, c.job
    if fwk is None:
        return Status(Code.ERROR, (f"no framework for profile {job.profile!r}",))
    s = wait_on_permit(fwk, job)
    if s.is_success:
        s = _guarded("PreBind", job, lambda: fwk.run_pre_bind(job.state, job.pod, job.node_name))
    if not s.is_success:
        return s
    # upstream bind(): an interested extender binder binds instead of the Bind plugins
    delegated = extenders_binding(fwk.handle.extenders, job.pod, job.node_name)
    if delegated is not None:
        if delegated.is_success:
            fwk.run_post_bind(job.state, job.pod, job.node_name)
        return delegated
    if _binds_with_default_binder_only(fwk):
        return None
    binder = getattr(fwk.handle, "binder", None)
    if isinstance(binder, StoreBinder) and binder.framework is None:
        binder.framework = fwk  # its profile: the over-commit check mirrors its Fit
    s = _guarded("Bind", job, lambda: fwk.run_bind(job.state, job.pod, job.node_name))
    if s.is_success:
        fwk.run_post_bind(job.state, job.pod, job.node_name)
    return s


def _record_scheduled_events(store: Store, cycles: Sequence[_Cycle]) -> None:
    """Scheduled Events for pods their Bind plugins bound: those bound through the store
    (DefaultBinder's ``store.bind``) already have theirs, written with the binding; the
    others (a plugin that binds elsewhere) get one here."""
    nodes = bound_by_store(store.client, store.keys, [c.job.pod.key for c in cycles])
    events = [
        scheduled_event(c.job.pod, c.job.node_name)
        for c, node in zip(cycles, nodes, strict=True)
        if node != c.job.node_name
    ]
    if events:
        store.record_events(events)


def _bind_together(
    store: Store,
    cycles: Sequence[_Cycle],
    tracing: Tracing,
    confirm: Confirm | None = None,
    mark: str = "",
) -> None:
    """DefaultBinder's write for several pods in one round trip, then their PostBind;
    each pod's Scheduled Event is written by the same script as its binding."""
    start, start_ns = time.perf_counter(), time.time_ns()
    skips = _FitSkips()
    try:
        results = store.bind_many(
            [
                (
                    c.job.pod.key,
                    c.job.node_name,
                    c.job.pod.uid or None,
                    c.job.pod.requests,
                    skips(c.fwk, c.job.pod),
                )
                for c in cycles
            ],
            scheduled_events=True,
            check_fit=True,
            mark=mark,
        )
    except Exception as exc:
        for c in cycles:
            c.status = Status(Code.ERROR, (f"binding failed: {exc}",), DEFAULT_BINDER)
        _record_bind(cycles, (time.perf_counter() - start, start_ns, time.time_ns()))
        return
    if confirm is not None:
        confirm(results)
    for c, res in zip(cycles, results, strict=True):
        c.status = bind_status(res.outcome, c.job.pod.key, c.job.node_name)
    _record_bind(cycles, (time.perf_counter() - start, start_ns, time.time_ns()))
    for c in cycles:
        if c.status is not None and c.status.is_success and c.fwk is not None:
            with tracing.use_span(c.span):
                c.fwk.run_post_bind(c.job.state, c.job.pod, c.job.node_name)


def _record_bind(cycles: Sequence[_Cycle], window: tuple[float, int, int]) -> None:
    """The shared round trip as each pod's Bind extension point (metrics and span)."""
    for c in cycles:
        if c.fwk is not None and c.status is not None:
            record_batched_bind(c.fwk, c.job.state, DEFAULT_BINDER, c.status, window, c.span)


class _FitSkips:
    """``fit_skips`` for the pods of one shared ``bind_many``, the profile's
    NodeResourcesFit args read once per profile: a profile that ignores no resource
    (the usual case) gives every pod one empty list (read-only: it is only packed)."""

    __slots__ = ("_by_profile", "_none")

    def __init__(self) -> None:
        self._by_profile: dict[int, _FitArgs | None] = {}
        self._none: list[str] = []

    def __call__(self, fwk: Framework | None, pod: Pod) -> list[str] | None:
        key = id(fwk)
        if key in self._by_profile:
            args = self._by_profile[key]
        else:
            args = self._by_profile[key] = _fit_args(fwk)
        if args is None:
            return None
        if not args[0] and not args[1]:
            return self._none
        return _skipped(pod, *args)


#: NodeResourcesFit's ignored resources and resource groups
_FitArgs = tuple[frozenset[str], frozenset[str]]


def _fit_args(fwk: Framework | None) -> _FitArgs | None:
    """The profile's NodeResourcesFit ignored resources and groups; None without Fit."""
    fit = next((p for p in fwk.filter if p.name == NODE_RESOURCES_FIT), None) if fwk else None
    if fit is None:
        return None
    args = getattr(fit, "args", None)
    return (
        frozenset(getattr(args, "ignored_resources", ())),
        frozenset(getattr(args, "ignored_resource_groups", ())),
    )


def _skipped(pod: Pod, ignored: frozenset[str], groups: frozenset[str]) -> list[str]:
    return [
        r
        for r in pod.requests
        if is_extended_resource(r) and (r in ignored or r.split("/", 1)[0] in groups)
    ]


def fit_skips(fwk: Framework | None, pod: Pod) -> list[str] | None:
    """What the store's over-commit check skips for ``pod`` so that it refuses exactly
    what the profile's NodeResourcesFit Filter would: None (no check) when the profile
    filters without it, else the pod's extended resources its args ignore."""
    args = _fit_args(fwk)
    if args is None:
        return None
    if not args[0] and not args[1]:
        return []
    return _skipped(pod, *args)


def _guarded(point: str, job: CycleJob, run: Callable[[], Status]) -> Status:
    """An extension point whose plugin raised fails its pod, never the binder."""
    try:
        return run()
    except Exception as exc:
        log.warning("%s raised for pod %s", point, job.pod.key, exc_info=True)
        return Status(Code.ERROR, (f"{point} failed: {type(exc).__name__}: {exc}",))


def _start_span(tracing: Tracing, job: CycleJob) -> Any:
    """The bindingCycle span, linked to the scheduling cycle that assumed the pod."""
    if not tracing.enabled:
        return tracing.start_span(BINDING_CYCLE)  # the shared no-op span
    attributes: dict[str, str | int] = {
        ATTR_POD_NAMESPACE: job.pod.namespace,
        ATTR_POD_NAME: job.pod.name,
        ATTR_POD_UID: job.pod.uid,
        ATTR_NODE_NAME: job.node_name,
        ATTR_PROFILE: job.profile,
        ATTR_CYCLE: job.scheduling_cycle,
    }
    link = tracing.link_from_carrier(job.trace_carrier)
    return tracing.start_span(BINDING_CYCLE, attributes, links=[link])


def _end_span(tracing: Tracing, span: Any, status: Status) -> None:
    if not tracing.enabled:
        return
    span.set_attribute(ATTR_RESULT, RESULT_SCHEDULED if status.is_success else RESULT_ERROR)
    if not status.is_success:
        tracing.set_error(span, status.message())
    tracing.end(span)


def bind_status(outcome: BindOutcome | int, pod_key: str, node: str) -> Status:
    """A store binding's outcome as DefaultBinder's Status (a conflict is an Error)."""
    if outcome == BindOutcome.BOUND:
        return SUCCESS
    name = BindOutcome(outcome).name.lower().replace("_", " ")
    return Status(
        Code.ERROR, (f"binding pod {pod_key} to node {node}: conflict ({name})",), DEFAULT_BINDER
    )


class StoreBinder:
    """The DefaultBinder's write (``Handle.binder``): the pods/binding subresource.

    It is the handle's one write path to the store, so it also carries the ``store``
    for the other binding-cycle writes (VolumeBinding's PreBind binds claims there)."""

    __slots__ = ("framework", "store")

    def __init__(self, store: Store) -> None:
        self.store = store
        #: the profile's Framework, set by the first binding cycle that binds through
        #: this binder; until then (a plugin binding outside bind_jobs) no fit check
        self.framework: Framework | None = None

    def __call__(self, pod: Pod, node: str) -> Status:
        skips = fit_skips(self.framework, pod) if self.framework is not None else None
        result = self.store.bind(
            pod.key,
            node,
            pod.uid or None,
            pod.requests,
            scheduled_event=True,
            check_fit=skips is not None,
            fit_skips=skips or (),
        )
        return bind_status(result.outcome, pod.key, node)


def store_binder(store: Store) -> Callable[[Pod, str], Status]:
    """A StoreBinder for ``store``."""
    return StoreBinder(store)


def statuses_from_store(store: Store, jobs: Sequence[CycleJob], why: str) -> list[Status]:
    """Outcomes for jobs whose binding cycles died as a whole (a lost Ray task, a bug),
    from what the store holds now: a pod already bound to its job's node succeeded, the
    others fail with ``why`` (and go back to the queue)."""
    try:
        docs = store.get_many("Pod", [j.pod.key for j in jobs])
    except Exception:
        docs = [None] * len(jobs)
    out = []
    for job, doc in zip(jobs, docs, strict=True):
        spec = (doc or {}).get("spec") or {}
        uid = ((doc or {}).get("metadata") or {}).get("uid") or ""
        landed = spec.get("nodeName") == job.node_name and (not job.pod.uid or uid == job.pod.uid)
        out.append(SUCCESS if landed else Status(Code.ERROR, (why,)))
    return out


def scheduled_event(pod: Pod, node: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "key": pod.key,
        "reason": "Scheduled",
        "message": f"Successfully assigned {pod.key} to {node}",
        "type": "Normal",
    }
