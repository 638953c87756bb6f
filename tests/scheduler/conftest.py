"""Scheduler fixtures: a Store on the test's Redis and coordinator harnesses
(``coordinator_harness.Harness``), each closed after its test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.store.store import Store
from tests.scheduler.coordinator_harness import Harness, config


@pytest.fixture
def store(redis_client: redis.Redis) -> Store:
    return Store(redis_client)


@pytest.fixture
def make_harness(store: Store, redis_client: redis.Redis) -> Iterator[Any]:
    made: list[Harness] = []

    def make(cfg: SchedulerConfiguration | None = None, **kw: Any) -> Harness:
        h = Harness(store, redis_client, cfg or config(), **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


@pytest.fixture
def h(make_harness: Any) -> Harness:
    return make_harness()
