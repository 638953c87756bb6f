"""Whole batches with OpportunisticBatching on and signed pods (``whole_batch_hints``,
issue 26 finding 4) take the serial decisions: with runs on and off, the same
placements, attempts per pod, FailedScheduling events and the profile's batching
counters (attempts by result, flushes by reason, pods placed on a hint), on random
clusters where some nodes take one pod (hints are used) and others many (the last node
still fits: no hint), shapes interleaved, pods that fit nowhere, windows smaller than
the cluster, and a clock that moves with every commit (the kept list expires inside a
run); and hinted runs do happen."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import parse_config
from cluster_sched.features import OPPORTUNISTIC_BATCHING, FeatureGates
from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.scheduler import whole_batch
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.schedule_one import SchedulingCycle
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.round_driver import LIST_DEFAULTING, decisions, drive_rounds

_runs = itertools.count()
#: pod shapes: (cpu, memory); "1" fills a 1-cpu node, the last fits no node
SHAPES = [("1", "1Gi"), ("1", "1Gi"), ("500m", "1Gi"), ("64", "1Gi")]


def _docs(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    docs = []
    # past 100 nodes a window is a part of the cluster: the rotation decides
    for i in range(rng.choice([rng.randint(3, 40), rng.randint(101, 220)])):
        size = rng.choice(["1", "1", "1", "1", "1", "2", "4"])  # 1-cpu: one pod each
        docs.append(make_node(f"n{i:03d}").capacity(cpu=size, memory="8Gi", pods=110).manifest())
    k = 0
    for _ in range(rng.randint(2, 5)):
        cpu, memory = rng.choice(SHAPES)
        for _ in range(rng.randint(1, 60)):
            docs.append(make_pod(f"p{k:03d}").req(cpu=cpu, memory=memory).manifest())
            k += 1
    return docs


def _outcome(
    client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    on: bool,
    batch: int,
    tick: float,
) -> tuple[dict[str, Any], int]:
    prefix = f"{{wbh{next(_runs)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(_docs(seed))
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        parse_config(LIST_DEFAULTING, "<test>"),
        options=ExecutorOptions("local"),
        clock=clock,
        seed=seed,
        prefix=prefix,
        batch_size=batch,
        features=FeatureGates({OPPORTUNISTIC_BATCHING: True}),
    )
    coord.whole_batch = on
    runs = 0
    real_run, real_commit = whole_batch.schedule_run, SchedulingCycle.commit

    def counting(sc: Any, b: Any) -> int:
        nonlocal runs
        handled = real_run(sc, b)
        runs += handled
        return handled

    def ticking(self: SchedulingCycle, *args: Any, **kwargs: Any) -> bool:
        # both modes read the clock for a pod after the previous pod's commit
        clock.step(tick)
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(whole_batch, "schedule_run", counting)
    monkeypatch.setattr(SchedulingCycle, "commit", ticking)
    try:
        drive_rounds(coord, clock)
        return decisions(coord, store), runs
    finally:
        monkeypatch.undo()
        coord.close()


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Watch events read only between rounds, never inside a batch (as a serial loop
    with the same timing would see them)."""
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**16),
    batch=st.sampled_from([8, 64]),
    tick=st.sampled_from([0.0, 0.0, 0.11]),
)
def test_hinted_runs_on_and_off_take_the_same_decisions(
    redis_client: redis.Redis, settled: None, seed: int, batch: int, tick: float
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        off, _ = _outcome(redis_client, mp, seed, False, batch, tick)
    with pytest.MonkeyPatch.context() as mp:
        on, _ = _outcome(redis_client, mp, seed, True, batch, tick)
    assert on == off


@pytest.mark.parametrize("tick", [0.0, 0.11], ids=["fixed-clock", "expiring"])
def test_hinted_runs_happen(redis_client: redis.Redis, settled: None, tick: float) -> None:
    with pytest.MonkeyPatch.context() as mp:
        off, none = _outcome(redis_client, mp, 3, False, 64, tick)
    with pytest.MonkeyPatch.context() as mp:
        on, pods = _outcome(redis_client, mp, 3, True, 64, tick)
    assert on == off and none == 0
    assert on["batch_attempts"].get("hint_used", 0) > 0, on["batch_attempts"]
    assert pods > on["batch_attempts"]["hint_used"] // 2, (pods, on["batch_attempts"])
    if tick:
        assert on["flushes"].get("expired", 0) > 0, on["flushes"]
