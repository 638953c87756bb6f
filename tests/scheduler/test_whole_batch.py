"""Whole batches in one kernel call (``whole_batch``) take the serial decisions: with
runs on and off, the same placements, attempts per pod and FailedScheduling events, on
random clusters (windows smaller than the cluster: the rotation) with ties (identical nodes: RNG draws), full nodes, pods that fit
nowhere and several shapes interleaved; and runs do happen."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.round_driver import run_outcome

_runs = itertools.count()
#: pod shapes: (cpu, memory); the last fits no node
SHAPES = [("100m", "128Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("64", "1Gi")]


def _docs(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    docs = []
    # past 100 nodes a window is a part of the cluster: the rotation decides
    for i in range(rng.choice([rng.randint(3, 40), rng.randint(101, 260)])):
        size = rng.choice(["2", "2", "4", "8"])  # many identical nodes: ties
        pods = rng.choice([3, 110])
        docs.append(make_node(f"n{i:02d}").capacity(cpu=size, memory="8Gi", pods=pods).manifest())
    # runs of one shape, broken by others (a template's pods share parsed objects)
    k = 0
    for _ in range(rng.randint(2, 6)):
        cpu, memory = rng.choice(SHAPES)
        for _ in range(rng.randint(1, 30)):
            docs.append(make_pod(f"p{k:03d}").req(cpu=cpu, memory=memory).manifest())
            k += 1
    return docs


def _outcome(
    client: redis.Redis, seed: int, on: bool, gate: bool, batch: int
) -> tuple[dict[str, Any], int]:
    # with the gate on every pod is unsignable here (System defaulting): the batching
    # counters are those of unsignable pods
    out = run_outcome(client, _docs(seed), seed, on, batch, gate=gate)
    return out.decisions, out.runs


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Watch events read only between rounds, never inside a batch (as a serial loop
    with the same timing would see them)."""
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), gate=st.booleans(), batch=st.sampled_from([8, 64]))
def test_runs_on_and_off_take_the_same_decisions(
    redis_client: redis.Redis, settled: None, seed: int, gate: bool, batch: int
) -> None:
    off, _ = _outcome(redis_client, seed, False, gate, batch)
    on, _runs_taken = _outcome(redis_client, seed, True, gate, batch)
    assert on == off


def test_runs_happen(redis_client: redis.Redis, settled: None) -> None:
    for seed in range(5):
        off, none = _outcome(redis_client, seed, False, True, 64)
        on, runs = _outcome(redis_client, seed, True, True, 64)
        assert on == off and none == 0
        if runs:
            return
    raise AssertionError("no run was taken")
