"""Binding cycles off the coordinator's thread: WaitOnPermit → PreBind → Bind → PostBind.

The binding cycle (``bind_jobs``) and the in-process executor: DefaultBinder-only
bindings are written in batches, each binding's outcome its own; a pod waiting in Permit
never holds up the others; a crashing plugin fails only its pod. Runs against a real
Store. (tests/scheduler/test_binding_faults.py runs faulty plugins through the
coordinator with both executors.)
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.binding import BindingJob, BindingOutcome, LocalBindingExecutor
from cluster_sched.scheduler.binding_cycle import bind_jobs, bind_status, store_binder
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.store.results import BindOutcome
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.coordinator_harness import PERMIT, PREBIND, PROFILE, config


class Recording:
    """Records the order of binding-cycle extension points; ``crash=yes`` pods crash."""

    log: list[str] = []

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if pod.labels.get("crash") == "yes":
            raise RuntimeError("plugin bug")
        self.log.append(f"PreBind {pod.meta.name}")
        return SUCCESS

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.log.append(f"PostBind {pod.meta.name}")


RECORDING = f"{__name__}:Recording"


class Blocking:
    """PreBind holds ``block=yes`` pods until ``release`` is set (a busy binder)."""

    entered = threading.Event()
    release = threading.Event()

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if pod.labels.get("block") == "yes":
            self.entered.set()
            self.release.wait(10.0)
        return SUCCESS


BLOCKING = f"{__name__}:Blocking"


def framework(store: Store, *plugins: str) -> Framework:
    handle = Handle(profile_name=PROFILE, binder=store_binder(store))
    return new_framework(config(*plugins).profiles[0], handle)


def job(
    store: Store, name: str, node: str = "n1", *, waiting: bool = False, **labels: str
) -> BindingJob:
    b = make_pod(name).req(cpu="100m")
    for k, v in labels.items():
        b = b.label(k, v)
    result = store.apply(b.manifest())
    pod = replace(parse_pod(result.obj), node_name=node)
    return BindingJob(pod, node, PROFILE, CycleState(), QueuedPodInfo(pod.key), 1, waiting=waiting)


def drain(executor: LocalBindingExecutor, n: int) -> dict[str, BindingOutcome]:
    assert executor.wait_idle(10.0)
    outcomes = executor.poll()
    assert len(outcomes) == n
    return {o.job.pod.meta.name: o for o in outcomes}


@pytest.fixture
def nodes(store: Store) -> None:
    store.apply_many([make_node("n1").capacity(cpu="4", pods=110).manifest()])


def test_batch_outcomes_are_per_pod(store: Store, nodes: None) -> None:
    fwk = framework(store)
    executor = LocalBindingExecutor(store, {PROFILE: fwk})
    try:
        jobs = [job(store, f"p{i}") for i in range(5)]
        assert store.bind("default/p2", "n1").ok  # someone else got there first
        for j in jobs:
            executor.submit(j)
        out = drain(executor, 5)
    finally:
        executor.close()
    assert {n for n, o in out.items() if o.status.is_success} == {"p0", "p1", "p3", "p4"}
    failed = out["p2"].status
    assert failed.code is Code.ERROR and "conflict (already bound)" in failed.message()
    scheduled = {e["key"] for e in store.events(reason="Scheduled")}
    assert scheduled == {"default/p0", "default/p1", "default/p3", "default/p4"}
    assert executor.pending() == 0


def test_binding_cycle_runs_extension_points_in_order(store: Store, nodes: None) -> None:
    Recording.log = []
    fwk = framework(store, RECORDING)
    (status,) = bind_jobs(store, {PROFILE: fwk}, [job(store, "p")])
    assert status.is_success
    assert Recording.log == ["PreBind p", "PostBind p"]
    assert (store.get("Pod", "default/p") or {})["spec"]["nodeName"] == "n1"


def test_prebind_failure_stops_before_bind(store: Store, nodes: None) -> None:
    fwk = framework(store, PREBIND)
    (status,) = bind_jobs(store, {PROFILE: fwk}, [job(store, "p", prebind="fail")])
    assert status.code is Code.ERROR and "volume not ready" in status.message()
    assert "nodeName" not in (store.get("Pod", "default/p") or {})["spec"]


def test_crashing_plugin_fails_only_its_pod(store: Store, nodes: None) -> None:
    Recording.log = []
    fwk = framework(store, RECORDING)
    executor = LocalBindingExecutor(store, {PROFILE: fwk})
    try:
        executor.submit(job(store, "ok"))
        executor.submit(job(store, "bad", crash="yes"))
        out = drain(executor, 2)
    finally:
        executor.close()
    assert out["ok"].status.is_success
    assert out["bad"].status.code is Code.ERROR and "plugin bug" in out["bad"].status.message()
    assert [e["key"] for e in store.events(reason="Scheduled")] == ["default/ok"]


def test_waiting_pod_does_not_hold_up_others(store: Store, nodes: None) -> None:
    fwk = framework(store, PERMIT)
    executor = LocalBindingExecutor(store, {PROFILE: fwk})
    try:
        waiting = job(store, "slow", waiting=True, permit="wait")
        assert fwk.run_permit(waiting.state, waiting.pod, "n1").code is Code.WAIT
        executor.submit(waiting)
        executor.submit(job(store, "fast"))
        # The fast one finishes while the slow one still waits.
        first: list[BindingOutcome] = []
        while not first:
            first = executor.poll()
            if not first:
                assert executor.pending() == 2
                time.sleep(0.005)
        assert [o.job.pod.meta.name for o in first] == ["fast"]
        assert executor.pending() == 1
        fwk.handle.waiting_pods.get("default/slow").allow(PERMIT)  # type: ignore[union-attr]
        out = drain(executor, 1)
    finally:
        executor.close()
    assert out["slow"].status.is_success
    assert {e["key"] for e in store.events(reason="Scheduled")} == {"default/fast", "default/slow"}


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        (BindOutcome.NOT_FOUND, "conflict (not found)"),
        (BindOutcome.UID_MISMATCH, "conflict (uid mismatch)"),
        (BindOutcome.ALREADY_BOUND, "conflict (already bound)"),
        (BindOutcome.TERMINATING, "conflict (terminating)"),
    ],
    ids=lambda v: str(v),
)
def test_bind_status_names_the_conflict(outcome: BindOutcome, text: str) -> None:
    s = bind_status(outcome, "default/p", "n1")
    assert s.code is Code.ERROR and s.plugin == "DefaultBinder"
    assert s.message() == f"binding pod default/p to node n1: {text}"
    assert bind_status(BindOutcome.BOUND, "default/p", "n1").is_success


def test_jobs_submitted_while_the_binder_is_busy_reach_it_as_one_batch(
    store: Store, nodes: None
) -> None:
    """A job wakes an idle binder at once; the jobs submitted while it binds wait for
    the loop's next poll and reach it in one piece, bound by one ``bind_many`` (its
    replies, handed to ``confirm``, come in one call, registering every bound pod)."""
    calls: list[list[str]] = []
    Blocking.entered.clear()
    Blocking.release.clear()
    executor = LocalBindingExecutor(
        store,
        {PROFILE: framework(store, BLOCKING)},
        confirm=lambda results: calls.append([r.pod_key for r in results if r.ok]),
    )
    try:
        executor.submit(job(store, "first", block="yes"))
        assert Blocking.entered.wait(10.0), "the idle binder took the first job at once"
        for i in range(3):
            executor.submit(job(store, f"p{i}"))
        assert executor.pending() == 4, "submitted jobs count as pending before hand-over"
        Blocking.release.set()
        deadline = time.monotonic() + 10.0
        while not calls and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)  # a binder that had the others would have bound them by now
        assert calls == [["default/first"]]
        assert store.get("Pod", "default/p0")["spec"].get("nodeName") is None
        out = drain(executor, 4)  # wait_idle hands them over, as poll does
    finally:
        Blocking.release.set()
        executor.close()
    assert all(o.status.is_success for o in out.values())
    assert calls == [["default/first"], ["default/p0", "default/p1", "default/p2"]]
