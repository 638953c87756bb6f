"""A whole-batch run hands its pods' binding jobs to the binder when it ends
(``SchedulingCycle.hold_bindings``): the jobs, their content and their order must be
those of the per-pod cycles (runs off, each job submitted by its own commit), and none
may stay held once a loop turn is over."""

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
from cluster_sched.scheduler.binding import BindingJob
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.round_driver import decisions, drive_rounds, round_coordinator

_runs = itertools.count()
#: pod shapes (cpu, memory); the last fits no node, so its pods break runs
SHAPES = [("100m", "128Mi"), ("1", "2Gi"), ("64", "1Gi")]


def _docs(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    docs = []
    for i in range(rng.randint(3, 30)):
        size = rng.choice(["2", "4"])
        docs.append(make_node(f"n{i:02d}").capacity(cpu=size, memory="8Gi", pods=10).manifest())
    k = 0
    for _ in range(rng.randint(2, 5)):
        cpu, memory = rng.choice(SHAPES)
        for _ in range(rng.randint(1, 25)):
            docs.append(make_pod(f"p{k:03d}").req(cpu=cpu, memory=memory).manifest())
            k += 1
    return docs


def _job(job: BindingJob) -> tuple[object, ...]:
    return (
        job.pod.key,
        job.pod.node_name,
        job.node_name,
        job.profile,
        job.scheduling_cycle,
        job.info.attempts,
        job.waiting,
        job.nominate,
    )


def _submitted(
    client: redis.Redis, seed: int, on: bool, gate: bool, batch: int
) -> tuple[list[tuple[object, ...]], dict[str, Any]]:
    coord, store, clock = round_coordinator(client, _docs(seed), seed, on, batch, gate=gate)
    jobs: list[tuple[object, ...]] = []
    submit = coord.binder.submit

    def recording(job: BindingJob) -> None:
        jobs.append(_job(job))
        submit(job)

    coord.binder.submit = recording  # type: ignore[method-assign]
    step = coord.step

    def checked_step(pop_timeout: float = 0.05) -> bool:
        busy = step(pop_timeout)
        assert coord.cycle._held is None, "binding jobs still held after a loop turn"
        return busy

    coord.step = checked_step  # type: ignore[method-assign]
    try:
        drive_rounds(coord, clock)
        return jobs, decisions(coord, store)
    finally:
        coord.close()


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Watch events read only between rounds (as in the other whole-batch tests)."""
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), gate=st.booleans(), batch=st.sampled_from([8, 64]))
def test_a_run_submits_the_per_pod_jobs_in_order(
    redis_client: redis.Redis, settled: None, seed: int, gate: bool, batch: int
) -> None:
    off_jobs, off = _submitted(redis_client, seed, False, gate, batch)
    on_jobs, on = _submitted(redis_client, seed, True, gate, batch)
    assert on_jobs == off_jobs
    assert on == off
