"""Queue fixtures: a FakeClock at T0, a queue factory, a default queue."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.queue import SchedulingQueue
from tests.queue.queue_helpers import PLUGIN_EVENTS, T0

QueueFactory = Callable[..., SchedulingQueue]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def make_queue(redis_client: redis.Redis, clock: FakeClock) -> Iterator[QueueFactory]:
    """Build queues on the test's Redis; every one is closed after the test."""
    made: list[SchedulingQueue] = []

    def make(**kwargs: Any) -> SchedulingQueue:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("plugin_events", PLUGIN_EVENTS)
        queue = SchedulingQueue(redis_client, **kwargs)
        made.append(queue)
        return queue

    yield make
    for queue in made:
        queue.close()


@pytest.fixture
def queue(make_queue: QueueFactory) -> SchedulingQueue:
    return make_queue()
