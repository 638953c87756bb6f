"""Binding records: jobs whose binding cycle reads nothing but the pod's key, uid, node
and requests travel without their manifest and CycleState (``RayBindingExecutor._lean``,
``binding_task.record_job``), against a real Redis (and a real local Ray where an
executor is built)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.instrumentation import RECORD_PLUGIN_METRICS
from cluster_sched.framework.state_codec import decode_value, encode_state, encode_value
from cluster_sched.framework.status import Code
from cluster_sched.plugins.volumebinding import BINDINGS_KEY, _Bindings
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.binding import BindingJob
from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from tests.workers.binding_frameworks import frameworks
from workers.binding_task import MISSING_FENCE, bind_task
from workers.ray_binding import RayBindingExecutor

PROFILE = "default-scheduler"
#: leader election off: the token the coordinator then sends
NO_ELECTION = ["{cs}:lease:kube-system/kube-scheduler", 0]


def pods_on_one_node(store: Store, cpus: list[str]) -> list[Pod]:
    """Node n0 (4 CPUs) and one pending pod per entry of ``cpus`` (its CPU request)."""
    store.apply_many([make_node("n0").capacity(cpu="4", memory="8Gi", pods=110).manifest()])
    store.apply_many([make_pod(f"p{i}").req(cpu=c).manifest() for i, c in enumerate(cpus)])
    out = []
    for i in range(len(cpus)):
        pod = parse_object(store.get("Pod", f"default/p{i}"))  # type: ignore[arg-type]
        assert isinstance(pod, Pod)
        out.append(pod)
    return out


def record(pod: Pod, node: str) -> list[Any]:
    return [pod.namespace, pod.name, pod.uid, node, PROFILE, dict(pod.requests), 7, {}]


def test_a_binding_record_binds_as_its_job_would(redis_client: redis.Redis, redis_url: str) -> None:
    """One task with a full job and two records: replies in that order; a record's pod is
    bound with the same manifest, Scheduled event and over-commit check (its requests
    travel) as a job's."""
    store = Store(redis_client)
    job_pod, record_pod, too_big = pods_on_one_node(store, ["1", "1", "3"])
    request = {
        "config": b"",
        "fence": NO_ELECTION,
        "jobs": [[job_pod.raw, "n0", PROFILE, encode_state(CycleState()), 7, {}]],
        "records": [record(record_pod, "n0"), record(too_big, "n0")],
    }
    informer = Informer(store, InformerHandlers(lambda old, new: None, lambda old, new: None))
    informer.list_and_watch()
    request["mark"] = informer.own.mark
    reply = decode_value(bind_task(encode_value(request), redis_url, store.keys.prefix, ""))
    assert len(reply) == 3
    (code_j, _, _), (code_r, _, _), refused = reply
    assert (code_j, code_r) == (int(Code.SUCCESS), int(Code.SUCCESS))
    assert refused[0] == int(Code.ERROR) and "over" in refused[1][0].lower(), refused
    informer.poll()  # each bound pod from its entry's mark alone (no reply needed)
    assert (informer.own_confirmed, informer.own_decoded) == (2, 0)
    for pod in (job_pod, record_pod):
        stored = store.get("Pod", pod.key)
        assert stored is not None and informer.pods[pod.key].raw == stored
        assert informer.pods[pod.key] == parse_object(stored)
    assert (store.get("Pod", too_big.key) or {}).get("spec", {}).get("nodeName") is None
    scheduled = sorted(e["key"] for e in store.events(reason="Scheduled"))
    assert scheduled == sorted([job_pod.key, record_pod.key])


def test_records_without_a_fencing_token_are_refused(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """A task without ``[lease key, token]`` refuses its records as it refuses its jobs:
    one MISSING_FENCE reply each, nothing bound."""
    store = Store(redis_client)
    pods = pods_on_one_node(store, ["1", "1"])
    request = {"config": b"", "jobs": [], "records": [record(p, "n0") for p in pods]}
    reply = decode_value(bind_task(encode_value(request), redis_url, store.keys.prefix, ""))
    assert reply == [[int(Code.ERROR), [MISSING_FENCE], ""]] * len(pods)
    assert [(store.get("Pod", p.key) or {}).get("spec", {}).get("nodeName") for p in pods] == [
        None,
        None,
    ]
    assert store.events() == []


@pytest.mark.parametrize(
    ("change", "lean"),
    [
        ({}, True),
        ({"nominate": True}, False),
        ({"waiting": True}, False),
        ({"state": {RECORD_PLUGIN_METRICS: True}}, False),
        ({"state": {BINDINGS_KEY: _Bindings(False, "n0", (("pv", "default/c"),))}}, False),
        ({"state": {BINDINGS_KEY: _Bindings(True, "n0")}}, True),
        ({"profile": "other"}, False),
    ],
    ids=[
        "plain",
        "nominated",
        "waited on permit",
        "plugin metrics drawn",
        "volumes to bind in PreBind",
        "volumes all bound",
        "unknown profile",
    ],
)
@pytest.mark.usefixtures("ray_session")
def test_only_cycles_that_read_nothing_more_travel_as_records(
    change: dict[str, Any], lean: bool, redis_client: redis.Redis, redis_url: str
) -> None:
    """A job travels as a record only when no part of its binding cycle in the task reads
    more of it than the record holds; PreBind with work (even with its nomination gate
    off: ``nominate`` False) keeps the whole job."""
    store = Store(redis_client)
    (pod,) = pods_on_one_node(store, ["1"])
    state = CycleState()
    for key, value in change.get("state", {}).items():
        state.write(key, value)
    job = BindingJob(
        pod,
        "n0",
        change.get("profile", PROFILE),
        state,
        QueuedPodInfo(pod.key),
        1,
        waiting=change.get("waiting", False),
        nominate=change.get("nominate", False),
    )
    ex = RayBindingExecutor(store, frameworks(store), redis_url=redis_url, max_in_flight=1)
    try:
        assert ex._lean(job) is lean
    finally:
        ex.close()
