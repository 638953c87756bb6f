"""Permit's waiting pods measure their timeouts on the scheduler's clock, so a virtual
clock's driver times them out by jumping to the deadline, not by waiting."""

from __future__ import annotations

import threading

from cluster_sched.clock import VirtualClock
from cluster_sched.framework.status import Code, Status
from cluster_sched.framework.waiting_pods import WaitingPods, new_waiting_pod


def test_a_permit_timeout_fires_when_the_virtual_clock_reaches_it() -> None:
    clock = VirtualClock()
    pods = WaitingPods(clock)
    pods.add(new_waiting_pod("ns/p", "node-1", {"Gang": 30.0, "Quota": 90.0}, pods.clock))
    assert pods.next_deadline() == clock.now() + 30.0
    result: list[Status] = []
    waiter = threading.Thread(target=lambda: result.append(pods.get("ns/p").wait()))  # type: ignore[union-attr]
    waiter.start()
    assert pods.expire(clock.now() + 29.0) == 0  # not yet
    waiter.join(timeout=0.2)
    assert waiter.is_alive()  # simulated time has not passed: still waiting
    clock.advance_to(clock.now() + 30.0)
    assert pods.expire(clock.now()) == 1
    waiter.join(timeout=10)
    (status,) = result
    assert status.code == Code.UNSCHEDULABLE and status.plugin == "Gang"
    assert status.message() == "rejected due to timeout after waiting 30s at plugin Gang"
    assert pods.next_deadline() is None  # decided


def test_an_allowed_pod_has_no_deadline_left() -> None:
    clock = VirtualClock()
    pods = WaitingPods(clock)
    wp = new_waiting_pod("ns/p", "n", {"Gang": 5.0}, clock)
    pods.add(wp)
    wp.allow("Gang")
    assert wp.wait().is_success
    assert pods.next_deadline() is None and pods.expire(clock.now() + 60) == 0
