"""A batched coordinator pops many pods at once; while it works on pod k, move requests
must be recorded at pod k's cycle, as the serial scheduler's counter would read, so every
pod's moveRequestCycle decision (backoff vs unschedulable) is the serial one."""

from __future__ import annotations

from cluster_sched.queue import Location, SchedulingQueue
from tests.queue.queue_helpers import FIT, NODE_ADD, fail, info


def _three(queue: SchedulingQueue) -> None:
    queue.add_many([info("a", priority=3), info("b", priority=2), info("c", priority=1)])


def test_serial_reference(queue: SchedulingQueue) -> None:
    """Pop a; a node is added while a is scheduled; a fails -> backoff (the event may
    have helped it). Pop b (after the event); b fails -> unschedulable."""
    _three(queue)
    a = queue.pop(timeout=0)
    assert a is not None
    ca = queue.last_pop_cycle
    queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert fail(queue, a, FIT, cycle=ca) is Location.BACKOFF
    b = queue.pop(timeout=0)
    assert b is not None
    assert fail(queue, b, FIT, cycle=queue.last_pop_cycle) is Location.UNSCHEDULABLE


def test_batch_with_cycle_in_progress_matches_serial(queue: SchedulingQueue) -> None:
    _three(queue)
    (a, ca), (b, cb), _c = queue.pop_many(3, timeout=0)
    queue.cycle_in_progress = ca
    queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert fail(queue, a, FIT, cycle=ca) is Location.BACKOFF
    queue.cycle_in_progress = cb
    assert fail(queue, b, FIT, cycle=cb) is Location.UNSCHEDULABLE


def test_batch_without_it_would_send_b_to_backoff(queue: SchedulingQueue) -> None:
    """The control: recording the move at the counter (the batch's last cycle) would
    judge b as if the event happened during its cycle."""
    _three(queue)
    (a, ca), (b, cb), _c = queue.pop_many(3, timeout=0)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert fail(queue, a, FIT, cycle=ca) is Location.BACKOFF
    assert fail(queue, b, FIT, cycle=cb) is Location.BACKOFF
