"""Leader election and fencing: one leader at a time, and a deposed one writes nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.types import LeaderElectionConfiguration
from cluster_sched.errors import StoreError
from cluster_sched.queue import SchedulingQueue
from cluster_sched.scheduler.leader import LOST_TOKEN, LeaderElector, share_fence
from cluster_sched.store import Store
from cluster_sched.store.fence import is_fenced_error, is_fenced_message
from cluster_sched.testing import make_node, make_pod
from cluster_sched.testing.fencing import depose, lead
from tests.queue.queue_helpers import PLUGIN_EVENTS, T0, info
from tests.scheduler.coordinator_harness import PERMIT, PROFILE, Harness, config, node, pod

#: Short enough that a test waits out a lease in well under a second.
FAST = LeaderElectionConfiguration(lease_duration=0.4, renew_deadline=0.3, retry_period=0.05)


@pytest.fixture
def electors(redis_client: redis.Redis) -> Iterator[list[LeaderElector]]:
    made: list[LeaderElector] = []
    yield made
    for e in made:
        e.close()


def candidate(
    client: redis.Redis, made: list[LeaderElector], config: LeaderElectionConfiguration = FAST
) -> tuple[LeaderElector, Store]:
    store = Store(client)
    elector = LeaderElector(client, store, config, identity=f"c{len(made)}")
    made.append(elector)
    return elector, store


def test_one_holder_at_a_time_and_tokens_grow_with_each_holder(
    redis_client: redis.Redis, electors: list[LeaderElector]
) -> None:
    a, _ = candidate(redis_client, electors)
    b, _ = candidate(redis_client, electors)
    assert a.try_acquire_or_renew() and a.token == 1
    assert not b.try_acquire_or_renew() and b.token == LOST_TOKEN
    assert a.try_acquire_or_renew() and a.token == 1  # renewing keeps the token
    a.close()  # ReleaseOnCancel: the standby need not wait out the lease
    assert b.try_acquire_or_renew() and b.token == 2
    assert a.lease()["holder"] == "c1" and a.lease()["leaseTransitions"] == "2"


def test_a_paused_leader_is_fenced_out_after_takeover(
    redis_client: redis.Redis, electors: list[LeaderElector]
) -> None:
    """The old leader never renews (it is 'paused'); after the lease expires the standby
    takes over, and every write the old one still attempts is refused whole."""
    old, old_store = candidate(redis_client, electors)
    new, new_store = candidate(redis_client, electors)
    admin = Store(redis_client)  # kubectl: leader election off, unfenced
    admin.apply_many(
        [make_node("n1").capacity(cpu="4", pods=10).manifest(), make_pod("p").manifest()]
    )
    assert old.try_acquire_or_renew()
    assert new.acquire()  # blocks as a standby until the lease expired
    assert new.token == old.token + 1
    writes = {
        "bind": lambda: old_store.bind("default/p", "n1"),
        "delete": lambda: old_store.delete("Pod", "default/p"),
        "status": lambda: old_store.set_nominated_node_name("default/p", "n1"),
        "event": lambda: old_store.record_event("Pod", "default/p", "Scheduled", "x"),
        "apply": lambda: old_store.apply(make_pod("q").manifest()),
    }
    for name, write in writes.items():
        with pytest.raises(StoreError) as err:
            write()
        assert is_fenced_error(err.value), name
    assert new_store.get("Pod", "default/q") is None
    assert (new_store.get("Pod", "default/p") or {}).get("spec", {}).get("nodeName") is None
    assert new_store.events() == []
    assert new_store.bind("default/p", "n1").ok  # the new leader's token passes


def test_queue_writes_carry_the_token(
    redis_client: redis.Redis, electors: list[LeaderElector]
) -> None:
    old, old_store = candidate(redis_client, electors)
    queue = SchedulingQueue(redis_client, clock=FakeClock(T0), plugin_events=PLUGIN_EVENTS)
    try:
        share_fence(old_store, redis_client)
        assert old.try_acquire_or_renew()
        queue.add(info("default/a"))
        old.fence.token += 7  # what a deposed leader's token looks like
        with pytest.raises(Exception) as err:
            queue.add(info("default/b"))
        assert is_fenced_error(err.value)
        assert queue.location("default/b") is None and queue.location("default/a") is not None
    finally:
        queue.close()


def test_unfenced_writes_pass_when_leader_election_is_off(redis_client: redis.Redis) -> None:
    store = Store(redis_client)
    assert store.fence.token == 0
    store.apply_many([make_node("n1").manifest(), make_pod("p").manifest()])
    assert store.bind("default/p", "n1").ok


def test_losing_the_lease_stops_leading_and_fences_locally(
    redis_client: redis.Redis, electors: list[LeaderElector]
) -> None:
    stopped = threading.Event()
    store = Store(redis_client)
    leader = LeaderElector(
        redis_client, store, FAST, identity="leader", on_stopped_leading=stopped.set
    )
    electors.append(leader)
    assert leader.acquire()
    # Someone else holds the lease now (as after this process was paused too long).
    redis_client.hset(leader.lease_key, mapping={"holder": "intruder"})
    redis_client.hincrby(leader.lease_key, "token", 1)
    assert stopped.wait(10)
    assert leader.lost and not leader.is_leader and leader.token == LOST_TOKEN
    with pytest.raises(StoreError) as err:
        store.record_event("Pod", "default/p", "Scheduled", "x")
    assert is_fenced_error(err.value)


def test_a_paused_leaders_binding_comes_back_fenced_and_it_steps_down(
    make_harness: Any, redis_client: redis.Redis
) -> None:
    """A real coordinator leads, assumes a pod and hands its binding over (held in
    Permit: in flight); the process then 'pauses' past its lease and a standby takes
    over. When it wakes, the binding it still had in flight comes back FENCED (counted),
    nothing is bound or recorded, and requeueing the pod is refused too: the coordinator
    can only stop (``serve`` exits 1). The standby then binds the pod."""
    h: Harness = make_harness(config(PERMIT))
    old = lead(redis_client, h.store)
    h.apply(node("n1"), pod("p").label("permit", "wait"))
    h.start()
    h.cycle()
    waiting = h.coord.frameworks[PROFILE].handle.waiting_pods.get("default/p")
    assert waiting is not None and h.coord.binder.pending() == 1
    takeover = depose(old, redis_client)
    try:
        waiting.allow(PERMIT)  # the paused leader wakes up; its binding cycle goes on
        assert h.coord.binder.wait_idle(h.patience)
        (outcome,) = h.coord.binder.poll()
        assert is_fenced_message(outcome.status.message()), outcome.status
        assert dict(h.store.fence.refused) == {"store.bind": 1}
        assert h.node_of("default/p") is None
        assert h.store.events(key="default/p") == []
        with pytest.raises(StoreError) as err:
            h.coord.cycle.finish_binding(outcome)  # Unreserve, forget, requeue: refused
        assert is_fenced_error(err.value)
        # the requeue, its FailedScheduling Event and the status go to Redis in one
        # pipeline (the failure handler's ScriptBatch): each is refused, nothing written
        assert dict(h.store.fence.refused) == {
            "store.bind": 1,
            "queue.add_unschedulable": 1,
            "store.events": 1,
            "store.apply": 1,
        }
        assert takeover.new_store.bind("default/p", "n1", scheduled_event=True).ok
    finally:
        takeover.close()
