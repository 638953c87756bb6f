"""OpportunisticBatching on and off in the scheduling loop (upstream KEP-5598).

A 1-pod-per-node workload of identical pods: with the gate on, the first pod's attempt
runs in full and every later pod is placed on the head of the list the previous attempt
left (``hint_used``), in the order the first attempt sorted the nodes; with it off every
pod runs a full attempt. The batched loop (many pods per pop) takes the same decisions
as batch size 1 with the gate on.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import parse_config
from cluster_sched.features import OPPORTUNISTIC_BATCHING, FeatureGates
from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.batching import batch_of
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.coordinator_harness import PROFILE, Harness

#: PodTopologySpread without default constraints: pods are signable (upstream: System
#: defaulting makes every pod unsignable)
LIST_DEFAULTING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": PROFILE,
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }
    ],
}
N = 12
_runs = itertools.count()


def _cluster() -> list[Any]:
    """N nodes of different sizes, each with room for exactly one 1-cpu pod."""
    nodes = [
        make_node(f"n{i:02d}").capacity(cpu=f"{1000 + 75 * i}m", memory=f"{2 + i % 5}Gi", pods=110)
        for i in range(N)
    ]
    pods = [make_pod(f"p{k:02d}").req(cpu="1", memory="1Gi").label("app", "web") for k in range(N)]
    return nodes + pods


def _run(make_harness: Any, on: bool) -> tuple[Harness, list[str]]:
    metrics = Metrics()
    h: Harness = make_harness(
        parse_config(LIST_DEFAULTING, "<test>"),
        features=FeatureGates({OPPORTUNISTIC_BATCHING: on}),
        metrics=metrics,
    )
    h.apply(*_cluster())
    h.start()
    fwk = h.coord.frameworks[PROFILE]
    order: list[str] = []
    for k in range(N):
        info = h.cycle()
        order.append(info.pod_key)
        if k == 0 and on:
            state = batch_of(h.coord.algorithm, fwk).state
            assert state is not None
            h.first_list = list(state.sorted_nodes)  # type: ignore[attr-defined]
    h.settle()
    return h, order


def _sample(h: Harness, name: str, **labels: str) -> float:
    value = h.coord.metrics.registry.get_sample_value(name, labels)
    return float(value or 0.0)


def test_identical_pods_one_per_node_are_placed_from_the_previous_list(
    make_harness: Any,
) -> None:
    h, order = _run(make_harness, on=True)
    placed = [h.node_of(key) for key in order]
    assert len(set(placed)) == N, "one pod per node"
    assert placed[1:] == h.first_list[: N - 1]  # type: ignore[attr-defined]
    batch = batch_of(h.coord.algorithm, h.coord.frameworks[PROFILE])
    assert batch.batched_pods == N - 1
    assert batch.attempts == {"no_hint": 1, "hint_used": N - 1}
    attempts = "scheduler_batch_attempts_total"
    assert _sample(h, attempts, profile=PROFILE, result="hint_used") == N - 1
    assert _sample(h, attempts, profile=PROFILE, result="no_hint") == 1


def test_gate_off_runs_every_attempt_in_full(make_harness: Any) -> None:
    h, order = _run(make_harness, on=False)
    placed = [h.node_of(key) for key in order]
    assert len(set(placed)) == N
    assert h.coord.algorithm.batches == {}
    assert _sample(h, "scheduler_batch_attempts_total", profile=PROFILE, result="hint_used") == 0


def test_a_pod_that_still_fits_the_last_node_gets_no_hint(make_harness: Any) -> None:
    """Not 1 pod per node (small pods): the kept list is flushed as node_not_full."""
    h: Harness = make_harness(parse_config(LIST_DEFAULTING, "<test>"))
    h.apply(*[make_node(f"n{i}").capacity(cpu="8", memory="8Gi", pods=110) for i in range(4)])
    h.apply(*[make_pod(f"s{k}").req(cpu="100m", memory="100Mi") for k in range(3)])
    h.start()
    for _ in range(3):
        h.cycle()
    batch = batch_of(h.coord.algorithm, h.coord.frameworks[PROFILE])
    assert batch.batched_pods == 0
    assert batch.flushes["node_not_full"] == 2


def _drive(coord: Any, clock: FakeClock) -> None:
    coord.start()
    for _ in range(6):
        while coord.step(pop_timeout=0):
            pass
        assert coord.binder.wait_idle(30.0)
        coord.process_binding_outcomes()
        while coord.poll_informer():
            pass
        coord.flush_done()
        clock.step(30.0)
        coord.queue.flush_backoff_q_completed()


def _placements(client: redis.Redis, batch_size: int, compiled: bool) -> tuple[dict[str, str], int]:
    prefix = f"{{ob{next(_runs)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many([o.manifest() for o in _cluster()])
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        parse_config(LIST_DEFAULTING, "<test>"),
        options=ExecutorOptions("local", compiled=compiled),
        clock=clock,
        seed=3,
        prefix=prefix,
        batch_size=batch_size,
    )
    try:
        _drive(coord, clock)
        placed = {d["metadata"]["name"]: d["spec"].get("nodeName", "") for d in store.list("Pod")}
        return placed, batch_of(coord.algorithm, coord.frameworks[PROFILE]).batched_pods
    finally:
        coord.close()


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_batched_loop_gives_the_serial_placements(
    redis_client: redis.Redis, compiled: bool
) -> None:
    serial, hits = _placements(redis_client, 1, compiled)
    assert hits == N - 1 and all(serial.values())
    for size in (5, 64):
        assert _placements(redis_client, size, compiled) == (serial, hits)


def _mixed_workload(seed: int) -> list[dict[str, Any]]:
    """One-pod-per-node nodes; pods of a few signatures (and unsignable ones) in a
    seeded priority order, more pods than nodes (so some preempt or wait)."""
    rng = random.Random(seed)
    docs = [o.manifest() for o in _cluster()[:N]]
    for k in range(N + 4):
        kind = rng.choice(["web", "web", "web", "db", "anti", "small"])
        b = make_pod(f"m{k:02d}").label("app", kind).priority(rng.choice([0, 10, 20]))
        b = b.req(cpu="100m" if kind == "small" else "1", memory="1Gi")
        if kind == "anti":
            b = b.pod_anti_affinity("kubernetes.io/hostname", {"app": "anti"})
        docs.append(b.manifest())
    return docs


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Watch events read only when activeQ is drained, after async preemption's
    deletions finished (as the batch-exactness drivers do)."""
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)
    poll = Coordinator.poll_informer

    def settled_poll(coord: Coordinator, block_ms: int | None = None) -> int:
        for fwk in coord.frameworks.values():
            executor = fwk.handle.preemption_executor
            assert executor is not None and executor.wait_idle(30.0)  # type: ignore[attr-defined]
        return poll(coord, block_ms)

    monkeypatch.setattr(Coordinator, "poll_informer", settled_poll)


def _random_outcome(
    client: redis.Redis, seed: int, batch_size: int, compiled: bool
) -> tuple[dict[str, str], int]:
    prefix = f"{{ob{next(_runs)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(_mixed_workload(seed))
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        parse_config(LIST_DEFAULTING, "<test>"),
        options=ExecutorOptions("local", compiled=compiled),
        clock=clock,
        seed=seed,
        prefix=prefix,
        batch_size=batch_size,
    )
    try:
        _drive(coord, clock)
        placed = {d["metadata"]["name"]: d["spec"].get("nodeName", "") for d in store.list("Pod")}
        return placed, sum(b.batched_pods for b in coord.algorithm.batches.values())
    finally:
        coord.close()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_mixed_workloads_batched_equal_serial(
    redis_client: redis.Redis, settled: None, seed: int
) -> None:
    """Pods of several signatures, unsignable ones and preemptors, in a seeded order."""
    serial = _random_outcome(redis_client, seed, 1, False)
    assert any(serial[0].values())
    assert serial[1] > 0, "some pods were placed on a hint"
    for size, compiled in ((7, False), (7, True), (1, True)):
        assert _random_outcome(redis_client, seed, size, compiled) == serial
