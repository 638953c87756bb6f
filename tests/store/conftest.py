"""Fixtures for the store tests: a Store on the session's private real redis-server."""

from __future__ import annotations

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.store import Store

#: 2024-05-01T12:00:00Z: every timestamp the store writes in these tests.
T0 = 1_714_564_800.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def store(redis_client: redis.Redis, clock: FakeClock) -> Store:
    return Store(redis_client, clock=clock)
