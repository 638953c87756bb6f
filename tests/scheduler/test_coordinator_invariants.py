"""Coordinator invariants that once broke, on the table and on in-process shards.

One nominator: every path that ends a nomination ends the reservation Filter sees.

The bug this guards (issue: "a deleted nominated pod keeps its reservation"): the
coordinator kept its own copy of nominations beside the queue's Redis nominator.
Deleting a nominated pod cleared Redis but not the copy, so Filter's first pass kept
adding the deleted pod to its node and later pods were rejected there for ever.
Run with Filter on the coordinator's table and on in-process shards (the shard code
the Ray executor runs).

No pod lost to a bad queue record: the record is quarantined and the pod requeued.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config
from cluster_sched.queue.nominator import Nominator
from cluster_sched.queue.types import Location
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod

EXECUTORS = [ExecutorOptions("local"), ExecutorOptions("shards", shards=2)]


@pytest.fixture(params=EXECUTORS, ids=lambda o: o.executor)
def coord(request: pytest.FixtureRequest, redis_client: redis.Redis) -> Iterator[Coordinator]:
    c = new_scheduler(
        Store(redis_client),
        redis_client,
        load_config(None),
        options=request.param,
        clock=FakeClock(1_000.0),
        seed=3,
    )
    yield c
    c.close()


def _apply(c: Coordinator, *objs: object) -> None:
    c.store.apply_many([o.manifest() for o in objs])  # type: ignore[attr-defined]
    c.poll_informer()


def _cycle(c: Coordinator, key: str) -> None:
    info = c.queue.pop(timeout=2.0)
    assert info is not None and info.pod_key == key
    c.schedule_one(info, c.queue.last_pop_cycle)
    c.flush_done()


def _settle(c: Coordinator) -> None:
    assert c.binder.wait_idle(10.0)  # type: ignore[attr-defined]
    c.process_binding_outcomes()
    c.poll_informer()


def _preempt_onto_n1(c: Coordinator) -> None:
    """A 4-CPU high-priority pod preempts the pod filling the only 4-CPU node: it is
    nominated there and the victim is deleted."""
    _apply(
        c,
        make_node("n1").capacity(cpu="4", memory="32Gi", pods=110),
        make_pod("low").req(cpu="4").node("n1"),
        make_pod("hi").req(cpu="4").priority(100),
    )
    c.start()
    _cycle(c, "default/hi")
    assert c.queue.nominator.nominated_node_for_pod("default/hi") == "n1"
    assert [p.key for p in c.nominated_pods()["n1"]] == ["default/hi"]
    # Async preemption deletes the victim on the executor's thread: wait for it (a loaded
    # machine used to read the store before the deletion).
    for fwk in c.frameworks.values():
        assert fwk.handle.preemption_executor.wait_idle(10.0)  # type: ignore[union-attr]
    c.poll_informer()  # the victim's deletion
    assert c.store.get("Pod", "default/low") is None


def test_deleted_nominated_pod_releases_its_node(coord: Coordinator) -> None:
    _preempt_onto_n1(coord)
    coord.store.delete("Pod", "default/hi")
    coord.poll_informer()
    assert coord.queue.nominator.nominated_node_for_pod("default/hi") is None
    assert "n1" not in coord.nominated_pods()

    _apply(coord, make_pod("later").req(cpu="4"))
    _cycle(coord, "default/later")
    _settle(coord)
    assert (coord.store.get("Pod", "default/later") or {})["spec"]["nodeName"] == "n1"
    assert coord.store.events(key="default/later", reason="FailedScheduling") == []


def test_lower_priority_pod_still_sees_a_live_nomination(coord: Coordinator) -> None:
    """The control: while the nominated pod exists, its reservation holds."""
    _preempt_onto_n1(coord)
    _apply(coord, make_pod("later").req(cpu="4"))
    _cycle(coord, "default/later")
    (event,) = coord.store.events(key="default/later", reason="FailedScheduling")
    assert "Insufficient cpu" in event["message"]
    # No event NodeResourcesFit registered arrived during its cycle: the pool (upstream's
    # determineSchedulingHintForInFlightPod says QueueSkip).
    assert coord.queue.location("default/later") is Location.UNSCHEDULABLE


def test_a_new_coordinator_rebuilds_the_view_from_redis(
    coord: Coordinator, redis_client: redis.Redis
) -> None:
    _preempt_onto_n1(coord)
    fresh = Nominator(redis_client, pod_lookup=coord.informer.pods.get)
    assert fresh.load() == 1
    assert [p.key for p in fresh.nominated_pods()["n1"]] == ["default/hi"]
    assert fresh.has_nomination("default/hi")


def test_a_quarantined_queue_record_does_not_lose_the_pod(
    coord: Coordinator, redis_client: redis.Redis
) -> None:
    """An unreadable queue record is set aside at pop; the coordinator puts the pod it
    knows back through the queue, and it is scheduled in the same run."""
    _apply(coord, make_node("n1").capacity(cpu="4", memory="8Gi", pods=10))
    coord.start()
    _apply(coord, make_pod("a").req(cpu="1"))
    redis_client.hset(coord.queue.keys.info, "default/a", b"\xc1 not msgpack")
    for _ in range(5):
        coord.step(pop_timeout=0.1)
        if (coord.store.get("Pod", "default/a") or {}).get("spec", {}).get("nodeName"):
            break
        _settle(coord)
    assert coord.queue.quarantined == 1
    _settle(coord)
    assert (coord.store.get("Pod", "default/a") or {})["spec"]["nodeName"] == "n1"
