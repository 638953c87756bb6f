"""The binding task itself, as a Ray worker runs it: the jobs decoded, their binding
cycles run through ``bind_jobs`` (cluster_sched/scheduler/binding_cycle.py) with the
worker's cached store and Frameworks, one reply per job. The coordinator's side, which
batches jobs into these tasks and reads their replies, is ``workers/ray_binding.py``
(its module docstring describes the protocol: fencing, failures, tracing).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Final

from cluster_sched.api.evolve import evolve
from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import ObjectMeta, Pod
from cluster_sched.config.load import default_config, parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.state_codec import (
    StateCodecError,
    decode_state,
    decode_value,
    encode_value,
)
from cluster_sched.framework.status import Code, Status
from cluster_sched.scheduler.binding_cycle import bind_jobs, store_binder
from cluster_sched.scheduler.profile import new_frameworks
from cluster_sched.store.fence import Fence
from cluster_sched.store.store import Store
from cluster_sched.telemetry.tracing import Tracing
from workers.ray_runtime import worker_tracing

__all__ = ["BINDING_TASK_CPUS", "MISSING_FENCE", "bind_task", "record_job", "remote_bind_task"]

BINDING_TASK_CPUS: Final = 1.0
"""Logical CPUs one binding task reserves."""


@dataclass(slots=True)
class _WorkerJob:
    """A BindingJob as a task decodes it (a ``CycleJob``); never waiting, as WaitOnPermit
    ran in the coordinator before the job was sent."""

    pod: Pod
    node_name: str
    profile: str
    state: CycleState
    scheduling_cycle: int
    trace_carrier: dict[str, str] = field(default_factory=dict)
    waiting: bool = False
    nominate: bool = False


_worker_lock = threading.Lock()
_STORES: dict[tuple[str, str, str, int], Store] = {}
_FRAMEWORKS: dict[tuple[bytes, str, str, int, int], dict[str, Framework]] = {}


def _worker_store(redis_url: str, prefix: str, fence: Fence) -> Store:
    """The worker's store for the coordinator's term: its writes carry the fencing token
    the coordinator sent (one store per token; a new term is a new leader)."""
    key = (redis_url, prefix, fence.key, fence.token)
    with _worker_lock:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = Store.from_url(redis_url, prefix, fence=fence)
        return store


def _worker_frameworks(
    config: bytes, store: Store, redis_url: str, prefix: str, tracing: Tracing
) -> dict[str, Framework]:
    key = (config, redis_url, prefix, id(tracing), id(store))
    with _worker_lock:
        hit = _FRAMEWORKS.get(key)
        if hit is not None:
            return hit
        cfg = parse_config(decode_value(config)) if config else default_config()
        frameworks = new_frameworks(
            cfg, lambda p: Handle(profile_name=p.scheduler_name, binder=store_binder(store))
        )
        if tracing.enabled:
            from cluster_sched.telemetry.metrics import Metrics

            for fwk in frameworks.values():
                fwk.instrument(tracing, Metrics.disabled())
        _FRAMEWORKS[key] = frameworks
        return frameworks


def _decode_pod(obj: Any, node: str) -> Pod:
    pod = obj if isinstance(obj, Pod) else parse_object(obj)
    if not isinstance(pod, Pod):
        raise StateCodecError(f"binding job holds a {type(pod).__name__}, not a Pod")
    if pod.node_name != node:
        pod = evolve(pod, node_name=node)
    return pod


def record_job(record: Any) -> _WorkerJob:
    """A job from a binding record ``[namespace, name, uid, node, profile, requests,
    scheduling cycle, trace carrier]`` (``RayBindingExecutor._lean``: the coordinator
    sends one only for a cycle that reads nothing more): its pod is what PreBind (all
    Skipping), DefaultBinder's ``bind_many``, the events and the spans read of it, built
    without parsing a manifest; its CycleState is empty."""
    namespace, name, uid, node, profile, requests, cycle, carrier = record
    if not isinstance(requests, dict):
        raise StateCodecError(f"binding record's requests are a {type(requests).__name__}")
    meta = ObjectMeta(name=str(name), namespace=str(namespace), uid=str(uid))
    pod = Pod(meta, (), node_name=str(node), requests=requests)
    return _WorkerJob(pod, pod.node_name, str(profile), CycleState(), int(cycle), dict(carrier))


#: The outcome of every job of a task that carries no fencing token (a payload from a
#: coordinator that forgot it, or from another program): refused, nothing written.
MISSING_FENCE: Final = "binding task carries no fencing token: refused, nothing written"


def _task_fence(wire: Any) -> Fence | None:
    """The task's ``[lease key, token]`` as a Fence; None when absent or malformed. Token
    0 is the coordinator saying "leader election is off", never a default."""
    if not isinstance(wire, (list, tuple)) or len(wire) != 2:
        return None
    key, token = wire
    if not isinstance(key, str) or not isinstance(token, int) or isinstance(token, bool):
        return None
    return Fence(key, token)


def bind_task(payload: bytes, redis_url: str, prefix: str, trace_endpoint: str) -> bytes:
    """The body of one binding task (plain function; ``remote_bind_task`` wraps it)."""
    req = decode_value(payload)
    fence = _task_fence(req.get("fence"))
    if fence is None:
        # No token, no write: an unfenced write from a deposed leader's task would land.
        refused = [int(Code.ERROR), [MISSING_FENCE], ""]
        count = len(req.get("jobs") or ()) + len(req.get("records") or ())
        return encode_value([refused] * count)
    tracing = worker_tracing(trace_endpoint)
    store = _worker_store(redis_url, prefix, fence)
    frameworks = _worker_frameworks(req["config"], store, redis_url, prefix, tracing)
    jobs: list[_WorkerJob | None] = []
    decode_errors: dict[int, Status] = {}
    for i, (pod_doc, node, profile, state, cycle, carrier, *nominate) in enumerate(req["jobs"]):
        try:
            jobs.append(
                _WorkerJob(
                    _decode_pod(pod_doc, node),
                    node,
                    profile,
                    decode_state(state),
                    cycle,
                    dict(carrier),
                    nominate=bool(nominate and nominate[0]),
                )
            )
        except Exception as exc:  # a job that cannot be read fails alone
            jobs.append(None)
            decode_errors[i] = Status(Code.ERROR, (f"binding job unreadable: {exc}",))
    for record in req.get("records") or ():  # replied to after the jobs, in their order
        try:
            jobs.append(record_job(record))
        except Exception as exc:
            decode_errors[len(jobs)] = Status(Code.ERROR, (f"binding record unreadable: {exc}",))
            jobs.append(None)
    runnable = [j for j in jobs if j is not None]
    mark = req.get("mark") or ""
    done = iter(bind_jobs(store, frameworks, runnable, tracing, mark=str(mark)))
    out = []
    for i, job in enumerate(jobs):
        s = decode_errors[i] if job is None else next(done)
        out.append([int(s.code), list(s.reasons), s.plugin])
    return encode_value(out)


_REMOTE: Any = None


def remote_bind_task() -> Any:
    """The one place ``bind_task`` becomes a Ray task. No retries: a retried task could
    land a binding after its job was already reported failed and requeued."""
    import ray

    global _REMOTE
    if _REMOTE is None:
        _REMOTE = ray.remote(bind_task).options(
            num_cpus=BINDING_TASK_CPUS, max_retries=0, retry_exceptions=False
        )
    return _REMOTE
