"""Every queue move of a deposed leader comes back FENCED, is counted, and moves nothing.

The queue shares the leader's fence (``share_fence``, as ``serve`` wires it). While it
led, the old leader queued pods in each sub-queue; then it 'paused' and a standby took
the lease. Each move below would change Redis if it were not fenced (with the check in
``_fence.lua`` switched off, every case fails): the refusal leaves each pod where it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from cluster_sched.queue import Location, QueuedPodInfo, SchedulingQueue
from cluster_sched.store import Store
from cluster_sched.store.fence import is_fenced_error
from cluster_sched.testing.fencing import Takeover, depose, lead, redis_state
from tests.queue.queue_helpers import FIT, NODE_ADD, fail, info

#: name -> (the move, the operation its refusal is counted under)
MOVES: dict[str, tuple[Callable[[SchedulingQueue, dict[str, QueuedPodInfo]], Any], str]] = {
    "add": (lambda q, _: q.add(info("new")), "queue.add"),
    "pop": (lambda q, _: q.pop(timeout=0), "queue.pop_many"),
    "done": (lambda q, _: q.done("default/flying"), "queue.done"),
    "add_unschedulable_if_not_present": (
        lambda q, p: fail(q, p["flying"], FIT, cycle=p["flying"].attempts),
        "queue.add_unschedulable",
    ),
    "move on an event": (
        lambda q, _: q.move_all_to_active_or_backoff_queue(NODE_ADD),
        "queue.requeue",
    ),
    "activate": (lambda q, _: q.activate(["default/parked"]), "queue.requeue"),
    "flush backoffQ": (lambda q, _: q.flush_backoff_q_completed(), "queue.flush_backoff"),
    "delete": (lambda q, _: q.delete("default/ready"), "queue.delete"),
    "requeue in flight": (lambda q, _: q.requeue_in_flight(q.clock.now() + 1), "queue.requeue"),
    "nominate": (
        lambda q, _: q.nominator.add_nominated_pod("default/ready", "n1", 0),
        "queue.nominate",
    ),
}


@pytest.fixture
def deposed(
    redis_client: redis.Redis, make_queue: Callable[..., SchedulingQueue]
) -> Iterator[tuple[SchedulingQueue, Store, dict[str, QueuedPodInfo]]]:
    store = Store(redis_client)
    old = lead(redis_client, store)
    queue = make_queue()
    popped: dict[str, QueuedPodInfo] = {}
    for name in ("parked", "backing-off", "flying", "ready"):
        queue.add(info(name, priority=10 - len(popped), ts=queue.clock.now()))
        if name != "ready":
            p = queue.pop(timeout=0)
            assert p is not None and p.pod_key == f"default/{name}"
            popped[name] = p
    fail(queue, popped["parked"], FIT)
    fail(queue, popped["backing-off"])  # an error: backoffQ
    queue.clock.step(30.0)  # its backoff is over: a flush would move it
    assert queue.location("default/parked") is Location.UNSCHEDULABLE
    assert queue.location("default/backing-off") is Location.BACKOFF
    assert queue.location("default/flying") is Location.IN_FLIGHT
    assert queue.location("default/ready") is Location.ACTIVE
    t: Takeover = depose(old, redis_client)
    yield queue, store, popped
    t.close()


@pytest.mark.parametrize("name", list(MOVES))
def test_a_deposed_leaders_queue_move_is_fenced_and_counted(
    name: str,
    deposed: tuple[SchedulingQueue, Store, dict[str, QueuedPodInfo]],
    redis_client: redis.Redis,
) -> None:
    queue, store, popped = deposed
    move, operation = MOVES[name]
    before = redis_state(redis_client)
    with pytest.raises(Exception) as err:
        move(queue, popped)
    assert is_fenced_error(err.value)
    assert dict(store.fence.refused) == {operation: 1}
    assert redis_state(redis_client) == before, "a refused script moves nothing"
