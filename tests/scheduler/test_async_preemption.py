"""SchedulerAsyncPreemption on and off (upstream KEP-4832).

On: PostFilter returns at once and the victims are deleted by the executor's worker;
until the watch shows them gone the preemptor is held by DefaultPreemption's PreEnqueue
("waiting for the preemption for this pod to be finished") in the unschedulable pool.
The victims' Pod/Delete events (registered by DefaultPreemption) release it.
Off: the victims are deleted inside the cycle and the preemptor waits ungated for the
events its Filter rejectors registered.
"""

from __future__ import annotations

from typing import Any

import redis as redis_lib

from cluster_sched.features import ASYNC_PREEMPTION, FeatureGates
from cluster_sched.plugins import names
from cluster_sched.plugins.defaultpreemption.plugin import ERR_WAITING_FOR_PREEMPTION
from cluster_sched.queue.types import Location
from cluster_sched.store.store import Store
from tests.scheduler.coordinator_harness import Harness, config, node, pod


def _preempting_harness(make_harness: Any, async_on: bool) -> Harness:
    gates = FeatureGates({ASYNC_PREEMPTION: async_on})
    h: Harness = make_harness(config(disable_cross_node=False), features=gates)
    h.apply(node("n1", cpu="2"))
    h.apply(pod("low", cpu="2").priority(1))
    h.start()
    h.cycle()
    h.settle()
    assert h.node_of("default/low") == "n1"
    h.apply(pod("high", cpu="2").priority(100))
    h.cycle()  # Filter fails everywhere; PostFilter preempts "low" on n1
    return h


def test_async_preemptor_is_gated_until_the_watch_sees_its_victims_go(make_harness: Any) -> None:
    h = _preempting_harness(make_harness, async_on=True)
    fwk = h.coord.frameworks["default-scheduler"]
    high = h.coord.informer.pods["default/high"]
    info = h.queue.get("default/high")
    assert info is not None and info.gated and info.gating_plugin == names.DEFAULT_PREEMPTION
    assert h.queue.location("default/high") is Location.UNSCHEDULABLE
    status = fwk.run_pre_enqueue(high)
    assert status.message() == ERR_WAITING_FOR_PREEMPTION
    assert status.plugin == names.DEFAULT_PREEMPTION
    # The nomination is recorded while the deletion runs (upstream: the failure handler).
    assert h.queue.nominator.has_nomination("default/high")

    h.settle()  # deletions done, the watch read: the Pod/Delete event releases it
    assert h.store.get("Pod", "default/low") is None
    assert fwk.run_pre_enqueue(high).is_success
    # The Pod/Delete hint says Queue and the pod failed at T0 (1 s backoff, the clock has
    # not moved): upstream requeuePodWithQueueingStrategy puts it in backoffQ.
    assert h.queue.location("default/high") is Location.BACKOFF
    h.clock.step(30.0)
    h.queue.flush_backoff_q_completed()
    h.cycle()
    h.settle()
    assert h.node_of("default/high") == "n1"


def test_sync_preemption_deletes_in_the_cycle_and_never_gates(make_harness: Any) -> None:
    h = _preempting_harness(make_harness, async_on=False)
    fwk = h.coord.frameworks["default-scheduler"]
    # The victim is gone from the store before the cycle returned.
    assert h.store.get("Pod", "default/low") is None
    info = h.queue.get("default/high")
    assert info is not None and not info.gated
    assert h.queue.location("default/high") is Location.UNSCHEDULABLE
    assert fwk.run_pre_enqueue(h.coord.informer.pods["default/high"]).is_success
    assert h.preemption.preempting() == []
    h.settle()
    h.clock.step(30.0)
    h.queue.flush_backoff_q_completed()
    h.cycle()
    h.settle()
    assert h.node_of("default/high") == "n1"


def test_default_preemption_registers_pod_delete_only_when_async(make_harness: Any) -> None:
    on = make_harness(config(disable_cross_node=False))
    off = make_harness(
        config(disable_cross_node=False), features=FeatureGates({ASYNC_PREEMPTION: False})
    )
    events_on = on.coord.frameworks["default-scheduler"].events_to_register()
    events_off = off.coord.frameworks["default-scheduler"].events_to_register()
    assert [e.label for e in events_on[names.DEFAULT_PREEMPTION]] == ["PodDelete"]
    assert events_off[names.DEFAULT_PREEMPTION] == ()


def test_failed_async_preemption_releases_and_activates_the_preemptor(make_harness: Any) -> None:
    """The worker's store writes fail (a Redis nobody listens on): upstream activates
    the preemptor; here its gate opens and the next cycle moves it to activeQ."""
    gates = FeatureGates({ASYNC_PREEMPTION: True})
    h: Harness = make_harness(config(disable_cross_node=False), features=gates)
    h.apply(node("n1", cpu="2"), pod("low", cpu="2").priority(1))
    h.start()
    h.cycle()
    h.settle()
    dead = redis_lib.Redis(port=1, socket_connect_timeout=0.2)
    h.preemption.store = Store(dead, prefix="{dead}")
    h.apply(pod("high", cpu="2").priority(100), pod("other", cpu="1").priority(0))
    h.cycle()  # "high" preempts; the deletion fails on the worker
    assert h.preemption.wait_idle(h.patience)
    assert h.queue.get("default/high").gated
    high = h.coord.informer.pods["default/high"]
    fwk = h.coord.frameworks["default-scheduler"]
    assert fwk.run_pre_enqueue(high).is_success, "a failed preemption opens the gate"
    h.cycle()  # any cycle activates it
    assert h.queue.location("default/high") is Location.ACTIVE
    assert h.store.get("Pod", "default/low") is not None


def test_a_deleted_preemptors_entry_is_dropped(make_harness: Any) -> None:
    h: Harness = make_harness(config(disable_cross_node=False))
    h.apply(node("n1", cpu="2"), node("n2", cpu="2"))
    h.apply(pod("low1", cpu="2").priority(1), pod("low2", cpu="2").priority(1))
    h.start()
    h.cycle()
    h.cycle()
    h.settle()
    h.apply(pod("high1", cpu="2").priority(100))
    h.cycle()
    first = h.coord.informer.pods["default/high1"].uid
    assert h.preemption.preempting() == [first]
    assert h.preemption.wait_idle(h.patience)
    h.store.delete("Pod", "default/high1")
    h.apply(pod("filler", cpu="2").priority(1))  # takes the node high1's victim freed
    h.cycle()
    h.settle()
    h.apply(pod("high2", cpu="2").priority(100))
    h.cycle()
    assert h.preemption.preempting() == [h.coord.informer.pods["default/high2"].uid]
