"""One call per shard per popped batch, the batch's first pods on the replica meanwhile
(``DispatchRule.lead``, ``shards.pipeline``): the serial loop's outcome, through
in-process shards and real Ray shard actors alike (without pipelining: pipelined, a batch
sent fresh waits for the shards instead, ``test_pipeline``)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from cluster_sched.scheduler.shards.router import weight
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.shards.shard_runs import reducible_workload, run_outcome

_slow = settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _one_call_per_batch(counters: dict[str, float]) -> None:
    """Every payload (a batch of at most 64 pods) went to each shard in one call, and the
    replica took its lead."""
    assert counters["reduced_payloads"] >= 1, counters
    assert counters["reduced_calls_per_shard"] == counters["reduced_payloads"], counters
    assert counters["lead_on_replica"] >= 1, counters


def test_the_lead_is_an_eighth_of_what_the_shards_are_given() -> None:
    rule = DispatchRule("shards")
    assert [rule.leading(n) for n in (1, 7, 8, 15, 16, 64)] == [0, 0, 1, 1, 2, 8]


@_slow
@given(seed=st.integers(0, 10_000), shards=st.integers(1, 3), batch=st.integers(8, 64))
def test_lead_and_one_call_give_the_serial_outcome(
    redis_client: redis.Redis, seed: int, shards: int, batch: int
) -> None:
    docs = reducible_workload(seed, n_pods=60)
    serial = run_outcome(redis_client, docs, ExecutorOptions("local", compiled=False), 1)
    options = ExecutorOptions(
        "shards", shards=shards, shard_dispatch="shards", shard_pipeline=False
    )
    placements, counts, counters = run_outcome(redis_client, docs, options, batch)
    assert (placements, counts) == serial[:2]
    _one_call_per_batch(counters)


@settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000), batch=st.integers(8, 64))
def test_ray_shards_answer_as_in_process_shards(
    ray_session: None, redis_client: redis.Redis, redis_url: str, seed: int, batch: int
) -> None:
    """Real actors and in-process shards: the same placements, counts, answered attempts
    and lead, one Ray call per shard per batch."""
    docs = reducible_workload(seed, n_pods=60)
    local = run_outcome(
        redis_client,
        docs,
        ExecutorOptions("shards", shards=2, shard_dispatch="shards", shard_pipeline=False),
        batch,
    )
    options = ExecutorOptions(
        "ray", shards=2, redis_url=redis_url, shard_dispatch="shards", shard_pipeline=False
    )
    placements, counts, counters = run_outcome(redis_client, docs, options, batch)
    assert (placements, counts) == local[:2]
    for key in ("reduced_attempts", "lead_on_replica", "reduced_payloads"):
        assert counters[key] == local[2][key], key
    _one_call_per_batch(counters)


def _started(client: redis.Redis, dispatch: str) -> Any:
    store = Store(client, prefix=f"{{preload-{dispatch}}}")
    store.apply_many(reducible_workload(5, n_nodes=40, n_pods=3))
    options = ExecutorOptions("shards", shards=2, shard_dispatch=dispatch)
    coord = new_scheduler(
        store, client, load_config(None), options=options, clock=FakeClock(1.7e9), seed=3,
        prefix=f"{{preload-{dispatch}}}",
    )  # fmt: skip
    coord.start()
    return coord


def test_shards_batches_may_go_to_hold_the_cluster_before_the_first_pop(
    redis_client: redis.Redis,
) -> None:
    """Forced: the first batch's calls carry no node (the shards took them at start);
    replica dispatch: nothing is pushed to shards no batch will go to."""
    forced = _started(redis_client, "shards")
    try:
        src = forced.source
        assert not any(src.router.deltas)
        assert sum(c.core.table.n_nodes for c in src.clients) == 40
    finally:
        forced.close()
    replica = _started(redis_client, "replica")
    try:
        src = replica.source
        # the 40 nodes wait (a "nodes" delta carries many: ``weight``)
        assert sum(weight(d) for q in src.router.deltas for d in q) >= 40
        assert sum(c.core.table.n_nodes for c in src.clients) == 0
    finally:
        replica.close()


@pytest.mark.parametrize("pipeline", [False, True])
def test_pods_the_shards_were_asked_about_are_theirs(
    redis_client: redis.Redis, pipeline: bool
) -> None:
    """Pods of one shape, every node fitting, windows of 142 of 300 nodes (each holds
    rows no earlier pod of the batch changed): the replica takes the lead of each batch
    sent at its pop (its whole-batch run stops at the first pod the shards were asked
    about), the shards answer every other pod. Pipelined, the second batch was asked
    ahead while the first was committed, and the first is waited for: no lead."""
    docs = [make_node(f"n{i:02d}").capacity(cpu="8", memory="16Gi", pods=30).zone(f"z{i % 3}").manifest() for i in range(300)]  # fmt: skip
    docs += [make_pod(f"p{k:03d}").req(cpu="100m", memory="128Mi").manifest() for k in range(100)]
    options = ExecutorOptions("shards", shards=2, shard_dispatch="shards", shard_pipeline=pipeline)
    placements, _, counters = run_outcome(redis_client, docs, options, 64)
    assert all(placements.values())
    lead = 0 if pipeline else 8 + 4  # batches of 64 and 36 pods
    assert counters["lead_on_replica"] == lead
    assert counters["reduced_pipelined"] == int(pipeline)
    assert counters["reduced_attempts"] == 100 - lead, counters
