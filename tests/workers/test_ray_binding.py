"""Binding cycles as Ray tasks against a real Redis and a real local Ray."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.state_codec import decode_value, encode_state, encode_value
from cluster_sched.framework.status import Code
from cluster_sched.framework.waiting_pods import new_waiting_pod
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.binding import BindingJob, BindingOutcome
from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.store.fence import is_fenced_message
from cluster_sched.store.store import Store
from cluster_sched.telemetry.spans import BINDING_CYCLE
from cluster_sched.telemetry.tracing import setup_tracing
from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.testing.fencing import depose, lead
from cluster_sched.testing.otlp_receiver import OtlpReceiver
from tests.workers.binding_frameworks import frameworks
from workers.ray_binding import MISSING_FENCE, RayBindingExecutor, bind_task, ray_binding_executor

pytestmark = pytest.mark.usefixtures("ray_session")

#: liveness bound for outcomes to come back (never a timing assertion)
PATIENCE = 60.0


def cluster(store: Store, pods: int) -> list[Pod]:
    store.apply_many(
        [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).manifest() for i in range(3)]
    )
    store.apply_many([make_pod(f"p{i}").req(cpu="100m").manifest() for i in range(pods)])
    out = []
    for i in range(pods):
        pod = parse_object(store.get("Pod", f"default/p{i}"))  # type: ignore[arg-type]
        assert isinstance(pod, Pod)
        out.append(pod)
    return out


def job(pod: Pod, node: str, cycle: int = 1, **kw: Any) -> BindingJob:
    state = CycleState()
    state.write("PreFilterExample", (1, "two"))
    return BindingJob(pod, node, "default-scheduler", state, QueuedPodInfo(pod.key), cycle, **kw)


def drain(
    ex: RayBindingExecutor, n: int, until: Callable[[], None] | None = None
) -> list[BindingOutcome]:
    out: list[BindingOutcome] = []
    deadline = time.monotonic() + PATIENCE
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {len(out)} of {n} binding outcomes arrived"
        out.extend(ex.poll())
        time.sleep(0.005)
    assert ex.pending() == 0
    return out


def bind_round_robin(ex: RayBindingExecutor, pods: list[Pod]) -> dict[str, Any]:
    """Pod i bound to node n{i % 3} through ``ex`` (closed after): each pod's status."""
    try:
        for i, pod in enumerate(pods):
            ex.submit(job(pod, f"n{i % 3}", cycle=i))
        return {o.job.pod.key: o.status for o in drain(ex, len(pods))}
    finally:
        ex.close()


def bound_node(store: Store, key: str) -> str | None:
    return ((store.get("Pod", key) or {}).get("spec") or {}).get("nodeName")


def test_batches_bind_each_pod_once_and_report_each_outcome(
    redis_client: redis.Redis, redis_url: str
) -> None:
    store = Store(redis_client)
    pods = cluster(store, 12)
    taken = pods[11]
    store.bind(taken.key, "n0")  # bound by someone else meanwhile: a conflict, alone
    ex = ray_binding_executor(redis_url=redis_url, batch=4, max_in_flight=1)(
        store, frameworks(store)
    )
    outcomes = bind_round_robin(ex, pods)
    assert all(outcomes[p.key].is_success for p in pods[:11])
    assert outcomes[taken.key].code == Code.ERROR
    assert "already bound" in outcomes[taken.key].message()
    for i, pod in enumerate(pods[:11]):
        assert bound_node(store, pod.key) == f"n{i % 3}"
    assert bound_node(store, taken.key) == "n0"
    scheduled = [e["key"] for e in store.events(reason="Scheduled")]
    assert sorted(scheduled) == sorted(p.key for p in pods[:11])


def test_bindings_the_tasks_make_are_known_to_the_informer_by_its_mark(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """The tasks' bindings carry the informer's mark in their watch entries, so the
    informer applies them without decoding, and holds exactly the parse of what the store
    wrote. A binding refused (already bound) writes nothing; the foreign binding that
    got there first is decoded."""
    store = Store(redis_client)
    pods = cluster(store, 5)
    informer = Informer(store, InformerHandlers(lambda old, new: None, lambda old, new: None))
    informer.list_and_watch()
    store.bind(pods[4].key, "n0")
    ex = ray_binding_executor(redis_url=redis_url, batch=3, mark=informer.own.mark)(
        store, frameworks(store)
    )
    outcomes = bind_round_robin(ex, pods)
    assert [outcomes[p.key].is_success for p in pods] == [True] * 4 + [False]
    while informer.poll():
        pass
    assert (informer.own_confirmed, informer.own_decoded) == (4, 0)
    for i, pod in enumerate(pods):
        stored = store.get("Pod", pod.key)
        assert stored is not None and informer.pods[pod.key] == parse_object(stored)
        assert informer.pods[pod.key].raw == stored
        assert informer.pods[pod.key].node_name == (f"n{i % 3}" if i < 4 else "n0")


def test_wait_on_permit_runs_in_the_coordinator(redis_client: redis.Redis, redis_url: str) -> None:
    store = Store(redis_client)
    allowed, rejected = cluster(store, 2)
    fwks = frameworks(store)
    waiting = fwks["default-scheduler"].handle.waiting_pods
    waiting.add(new_waiting_pod(allowed.key, "n1", {"Gate": 300}))
    waiting.add(new_waiting_pod(rejected.key, "n2", {"Gate": 300}))
    ex = RayBindingExecutor(store, fwks, redis_url=redis_url)
    try:
        ex.submit(job(allowed, "n1", waiting=True))
        ex.submit(job(rejected, "n2", waiting=True))
        assert ex.poll() == [] and ex.pending() == 2 and not ex._in_flight
        threading.Timer(0.05, lambda: waiting.get(allowed.key).allow("Gate")).start()  # type: ignore[union-attr]
        threading.Timer(0.05, lambda: waiting.reject(rejected.key, "Gate", "no")).start()
        outcomes = {o.job.pod.key: o.status for o in drain(ex, 2)}
    finally:
        ex.close()
    assert outcomes[allowed.key].is_success and bound_node(store, allowed.key) == "n1"
    assert (
        outcomes[rejected.key].code == Code.UNSCHEDULABLE
        and outcomes[rejected.key].plugin == "Gate"
    )
    assert bound_node(store, rejected.key) is None


@contextmanager
def every_cpu_held(redis_url: str) -> Iterator[None]:
    """Ray tasks holding every CPU of the cluster until the block exits, so a binding task
    submitted meanwhile stays queued: the test, not a race, decides that it never runs."""
    import ray

    def hold(url: str) -> None:
        client = redis.Redis.from_url(url)
        client.rpush("test:held", 1)
        client.blpop(["test:release"])

    n = int(ray.cluster_resources()["CPU"])
    holders = [ray.remote(num_cpus=1)(hold).remote(redis_url) for _ in range(n)]
    client = redis.Redis.from_url(redis_url)
    try:
        for _ in range(n):
            assert client.blpop(["test:held"], timeout=PATIENCE), "a CPU holder never started"
        yield
    finally:
        client.rpush("test:release", *[1] * n)
        ray.get(holders, timeout=PATIENCE)
        client.close()


def test_a_failed_task_reports_what_the_store_holds(
    redis_client: redis.Redis, redis_url: str
) -> None:
    import ray

    store = Store(redis_client)
    pods = cluster(store, 3)
    ex = RayBindingExecutor(store, frameworks(store), redis_url=redis_url, batch=8, max_in_flight=1)
    try:
        # The task is cancelled while it waits for a CPU: it never binds anything.
        with every_cpu_held(redis_url):
            ex.submit(job(pods[0], "n0"))
            (ref,) = ex._in_flight
            ray.cancel(ref, force=True)
        (outcome,) = drain(ex, 1)
        assert ex.failed_tasks == 1
        assert outcome.status.code == Code.ERROR
        assert outcome.status.message().startswith("binding task failed: TaskCancelledError")
        assert bound_node(store, pods[0].key) is None
        # A binding that landed before its task died is a success, others fail.
        store.bind(pods[1].key, "n1")
        got = ex._recover(
            [job(pods[1], "n1"), job(pods[2], "n2")], RuntimeError("worker died\nfor good")
        )
        assert got[0].status.is_success
        assert got[1].status.code == Code.ERROR
        assert got[1].status.message() == "binding task failed: RuntimeError: for good"
    finally:
        ex.close()


def test_binding_spans_are_linked_to_their_scheduling_cycle(
    redis_client: redis.Redis, redis_url: str
) -> None:
    store = Store(redis_client)
    (pod,) = cluster(store, 1)
    with OtlpReceiver() as rx:
        tracing = setup_tracing(rx.endpoint)
        try:
            with tracing.span("schedulingCycle") as cycle_span:
                carrier = tracing.current_context_carrier()
                cycle_id = format(cycle_span.get_span_context().span_id, "016x")
            ex = ray_binding_executor(redis_url=redis_url, tracing=tracing)(
                store, frameworks(store)
            )
            try:
                ex.submit(job(pod, "n2", cycle=42, trace_carrier=carrier))
                (outcome,) = drain(ex, 1)
            finally:
                ex.close()
            assert outcome.status.is_success
            spans = rx.wait_for(lambda spans: any(s.name == BINDING_CYCLE for s in spans))
            (binding,) = [s for s in spans if s.name == BINDING_CYCLE]
            children = rx.wait_for(
                lambda spans: (
                    {"preBind", "postBind"}
                    <= {s.name for s in spans if s.parent_span_id == binding.span_id}
                )
            )
        finally:
            tracing.shutdown()
    assert binding.is_root
    assert [sid for _, sid in binding.links] == [cycle_id]
    assert binding.attributes["k8s.pod.name"] == "p0"
    assert binding.attributes["scheduler.cycle"] == 42
    assert all(
        s.trace_id == binding.trace_id for s in children if s.parent_span_id == binding.span_id
    )


def test_binding_tasks_in_flight_when_the_leader_is_deposed_are_fenced_and_counted(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """The leader sends a task with its token; before a worker runs it, the leader
    'pauses' and a standby takes the lease: the task's bind_many is refused whole, each
    job's outcome says FENCED, the coordinator counts them, and no pod is bound."""
    store = Store(redis_client)
    pods = cluster(store, 3)
    old = lead(redis_client, store)
    ex = RayBindingExecutor(store, frameworks(store), redis_url=redis_url, batch=8, max_in_flight=1)
    takeover = None
    try:
        with every_cpu_held(redis_url):  # the task waits for a CPU: in flight, not run
            for i, pod in enumerate(pods):
                ex.submit(job(pod, f"n{i}"))
            ex.wait_idle(0)  # sends what is buffered (nothing can run while CPUs are held)
            assert ex._in_flight and not ex._buffer, "every job sent, none run"
            takeover = depose(old, redis_client)
        outcomes = drain(ex, len(pods))
    finally:
        ex.close()
        if takeover is not None:
            takeover.close()
    assert ex.failed_tasks == 0
    assert all(o.status.code == Code.ERROR for o in outcomes)
    assert all(is_fenced_message(o.status.message()) for o in outcomes), outcomes
    assert dict(store.fence.refused) == {"ray.bind": len(pods)}
    assert [bound_node(store, p.key) for p in pods] == [None] * len(pods)
    assert store.events(reason="Scheduled") == []


@pytest.mark.parametrize(
    "fence",
    [None, [], ["{cs}:lease:kube-system/kube-scheduler"], ["k", "7"], ["k", True]],
    ids=["absent", "empty", "no token", "token not an int", "token a bool"],
)
def test_a_task_without_a_fencing_token_writes_nothing(
    fence: Any, redis_client: redis.Redis, redis_url: str
) -> None:
    """A payload without [lease key, token] is refused whole: it used to bind unfenced."""
    store = Store(redis_client)
    pods = cluster(store, 2)
    wire = [
        [p.raw, f"n{i}", "default-scheduler", encode_state(CycleState()), 1, {}]
        for i, p in enumerate(pods)
    ]
    request: dict[str, Any] = {"config": b"", "jobs": wire}
    if fence is not None:
        request["fence"] = fence
    reply = bind_task(encode_value(request), redis_url, store.keys.prefix, "")
    assert decode_value(reply) == [[int(Code.ERROR), [MISSING_FENCE], ""]] * len(pods)
    assert [bound_node(store, p.key) for p in pods] == [None, None]
    assert store.events() == []
