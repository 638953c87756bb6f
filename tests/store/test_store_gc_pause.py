"""Batch decoding pauses the cyclic collector and always restores its previous state."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from cluster_sched.errors import StoreError
from cluster_sched.store import Store
from cluster_sched.store.codec import gc_paused
from cluster_sched.testing import make_pod


@pytest.fixture
def gc_state() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("gc_state")
@pytest.mark.parametrize("enabled", [True, False], ids=["enabled", "disabled"])
def test_read_events_leaves_the_collector_as_it_found_it(store: Store, enabled: bool) -> None:
    store.apply_many([make_pod(f"p{i}").manifest() for i in range(5)])
    seen: list[bool] = []
    if enabled:
        gc.enable()
    else:
        gc.disable()
    with gc_paused():
        seen.append(gc.isenabled())
    assert len(store.read_events()) == 5
    assert len(list(store.list_and_watch(["Pod"])[0]["Pod"])) == 5
    assert seen == [False] and gc.isenabled() is enabled


@pytest.mark.usefixtures("gc_state")
def test_the_collector_comes_back_when_the_read_fails() -> None:
    gc.enable()
    client = redis.Redis(port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    unreachable = Store(client)
    with pytest.raises(StoreError):
        unreachable.read_events()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a decoding bug")
    assert gc.isenabled()
