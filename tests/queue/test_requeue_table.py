"""Upstream's requeue rules as one table, through the real Redis queue, at batch 1 and 5.

Each row is one failed attempt of a pod, ``target``, scheduled third among five pods
(``f1``, ``f2``, target, ``f3``, ``f4``, in the order they were queued). The loop below is the
coordinator's (``Coordinator.step``): pop up to ``batch`` pods in one round trip, then
schedule them one at a time with ``cycle_in_progress`` set to the pod's cycle; the
fillers are placed (``done_later``), the target is rejected. One cluster event fires
at a chosen moment: during ``f2``'s cycle (*before* the target's: at batch 1 the target
still sits in activeQ, at batch 5 it sits in the popped batch), during the target's
own cycle (*during*: the in-flight-event rule), or during ``f3``'s (*after*: the target
waits in the pool). The event's object either helps (the rejecting plugin's
QueueingHintFn says Queue) or does not (QueueSkip). The clock is fake and moves only
where a row says so, so every destination is certain. Upstream (v1.35,
pkg/scheduler/backend/queue/scheduling_queue.go):

- AddUnschedulableIfNotPresent refreshes the pod's timestamp, then
  determineSchedulingHintForInFlightPod replays the events received since the pod's
  cycle began: no rejector plugin (an error) → queueAfterBackoff; a Pending plugin's
  Queue → queueImmediately; an Unschedulable plugin's Queue → queueAfterBackoff; else
  queueSkip. An event from before the pod's cycle is not among them.
- requeuePodWithQueueingStrategy: queueSkip → unschedulablePods; queueAfterBackoff and
  isPodBackingoff → backoffQ; otherwise activeQ. A failed attempt's backoff (1 s after
  the first attempt) starts at the refreshed timestamp, so the in-flight rule always
  lands in backoffQ, however long the cycle took.
- movePodsToActiveOrBackoffQueue (the *after* events): the same strategy per pod; a pod
  whose rejectors registered no matching event is not asked at all.
- SchedulerPopFromBackoffQ (on by default): an empty activeQ pops the head of backoffQ,
  backoff owed or not, but only of pods a plugin rejected (``popBackoff`` leaves
  podErrorBackoffQ alone); off, a backoffQ pod waits for its backoff to be flushed.

Both batch sizes must give every row its expected destination and the same next pop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.queue import Location, SchedulingQueue
from tests.queue.queue_helpers import FIT, NODE_ADD, VOLUME, info

PV_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD)
HELPS, USELESS = "helps", "useless"


def _hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if new == HELPS else QueueingHint.QUEUE_SKIP


#: NodeResourcesFit wakes on node adds, VolumeBinding on PV adds; both ask the hint.
HINTED = {
    FIT: (ClusterEventWithHint(NODE_ADD, _hint),),
    VOLUME: (ClusterEventWithHint(PV_ADD, _hint),),
}
ORDER = ("f1", "f2", "target", "f3", "f4")
#: during whose cycle the event fires
WHEN = {"before": "f2", "during": "target", "after": "f3"}


@dataclass(frozen=True, slots=True)
class Row:
    #: rejecting plugins: unschedulable ones, pending ones (none at all: an error)
    unschedulable: tuple[str, ...] = (FIT,)
    pending: tuple[str, ...] = ()
    #: before / during / after the target's cycle; None: no event
    when: str | None = "during"
    event: ClusterEvent = NODE_ADD
    new: str = HELPS
    #: seconds the fake clock moves just before the event fires
    step: float = 0.0
    pop_from_backoff_q: bool = True
    #: where the target waits once the five cycles are over
    expected: Location = Location.BACKOFF
    #: whether the next pop (activeQ now empty) hands the target out
    popped_next: bool = True


ROWS = {
    "no event: the pool": Row(when=None, expected=Location.UNSCHEDULABLE, popped_next=False),
    # upstream popBackoff takes podBackoffQ only, never podErrorBackoffQ
    "error, no rejector: backoffQ, never popped early": Row(
        unschedulable=(), when=None, popped_next=False
    ),
    "Queue before its cycle: ignored, the pool": Row(
        when="before", expected=Location.UNSCHEDULABLE, popped_next=False
    ),
    "Queue during its cycle: backoffQ": Row(when="during"),
    "Queue during its cycle, slow cycle: still backoffQ": Row(when="during", step=30.0),
    "QueueSkip during its cycle: the pool": Row(
        when="during", new=USELESS, expected=Location.UNSCHEDULABLE, popped_next=False
    ),
    "event its rejector did not register, during: the pool": Row(
        when="during", event=PV_ADD, expected=Location.UNSCHEDULABLE, popped_next=False
    ),
    "Pending plugin's Queue during its cycle: activeQ": Row(
        unschedulable=(), pending=(VOLUME,), event=PV_ADD, expected=Location.ACTIVE
    ),
    "Queue after, backoff owed: backoffQ": Row(when="after"),
    "Queue after, backoff expired: activeQ": Row(when="after", step=1.0, expected=Location.ACTIVE),
    "QueueSkip after, backoff expired: the pool": Row(
        when="after", new=USELESS, step=5.0, expected=Location.UNSCHEDULABLE, popped_next=False
    ),
    "Pending plugin's Queue after, backoff owed: activeQ": Row(
        unschedulable=(), pending=(VOLUME,), event=PV_ADD, when="after", expected=Location.ACTIVE
    ),
    "PopFromBackoffQ off: a backoffQ pod waits its backoff out": Row(
        pop_from_backoff_q=False, popped_next=False
    ),
}


def _run(queue: SchedulingQueue, row: Row, batch: int) -> tuple[Location | None, list[int], int]:
    """The five cycles in the coordinator's order; the target's destination, the cycles
    and how many pops (round trips) handed the five pods out."""
    # One priority; queued 10 s ago, a second apart: the pop order is ORDER, and a
    # requeued target (timestamp refreshed to now) sorts behind f3 and f4 at any batch.
    start = queue.clock.now() - 10.0
    queue.add_many([info(name, ts=start + i) for i, name in enumerate(ORDER)])
    fire_during = WHEN.get(row.when or "")
    cycles: list[int] = []
    handled = pops = 0
    while handled < len(ORDER):
        popped = queue.pop_many(batch, timeout=0)
        pops += 1
        assert 0 < len(popped) <= batch
        for pod, cycle in popped:
            name = pod.pod_key.removeprefix("default/")
            assert name == ORDER[handled], "pop order is the queueing order"
            queue.cycle_in_progress = cycle
            cycles.append(cycle)
            if name == fire_during:
                queue.clock.step(row.step)
                queue.move_all_to_active_or_backoff_queue(row.event, new=row.new)
            if name == "target":
                rejected = replace(
                    pod,
                    unschedulable_plugins=frozenset(row.unschedulable),
                    pending_plugins=frozenset(row.pending),
                )
                assert queue.add_unschedulable_if_not_present(rejected, cycle) is not None
            else:
                queue.done_later(pod.pod_key)
            handled += 1
        queue.cycle_in_progress = None
    queue.flush_done()
    return queue.location("default/target"), cycles, pops


@pytest.mark.parametrize("batch", [1, 5])
@pytest.mark.parametrize("name", list(ROWS))
def test_requeue_destination(
    name: str, batch: int, make_queue: Callable[..., SchedulingQueue]
) -> None:
    row = ROWS[name]
    queue = make_queue(
        plugin_events=HINTED,
        pod_lookup=lambda key: key,
        pop_from_backoff_q=row.pop_from_backoff_q,
    )
    where, cycles, pops = _run(queue, row, batch)
    assert pops == len(ORDER) // batch, "batch 5: the five pods left activeQ together"
    assert cycles == sorted(cycles) and len(set(cycles)) == len(ORDER)
    assert where is row.expected
    assert queue.counts()[Location.IN_FLIGHT] == 0, "every cycle ended"
    nxt = queue.pop(timeout=0)
    assert (nxt is not None and nxt.pod_key == "default/target") is row.popped_next
    assert queue.pop(timeout=0) is None, "nothing else was queued"


def test_the_table_covers_each_rule() -> None:
    """Every destination, every moment and both hints appear (the table is the spec)."""
    rows = ROWS.values()
    assert {r.expected for r in rows} == {Location.ACTIVE, Location.BACKOFF, Location.UNSCHEDULABLE}
    assert {r.when for r in rows} == {None, "before", "during", "after"}
    assert {r.new for r in rows if r.when} == {HELPS, USELESS}
    assert {r.pop_from_backoff_q for r in rows} == {True, False}
