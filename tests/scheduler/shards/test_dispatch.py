"""The dispatch rule (``scheduler/shards/dispatch.py``): which side the measured parts
pick at the sizes they were measured at, how the choice moves with the cores, the shard
count and where the shards run; and that a run reports where its attempts went."""

from __future__ import annotations

from dataclasses import replace

import pytest
import redis

from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from tests.scheduler.shards.shard_runs import reducible_workload, run_outcome

#: the windows of the two measured sizes (numFeasibleNodesToFind's default percentage)
W_100K = num_feasible_nodes_to_find(0, 100_000)
W_1M = num_feasible_nodes_to_find(0, 1_000_000)


def break_even(rule: DispatchRule, shards: int = 2) -> int | None:
    """The smallest window (in steps of 500 rows) the rule gives to the shards."""
    return next((w for w in range(500, 1_000_001, 500) if rule.use_shards(w, shards, 64)), None)


def test_the_measured_sizes_take_the_side_that_was_faster_there() -> None:
    """On this 2-core machine: 100,000 nodes on the replica (forced shards ran at a
    third of in-process), 1,000,000 nodes on 2 Ray shards (they ran 1.15-1.19x)."""
    rule = DispatchRule(cores=2)
    assert (W_100K, W_1M) == (5_000, 50_000)
    assert not rule.use_shards(W_100K, 2, 64)
    assert rule.use_shards(W_1M, 2, 64)
    assert rule.shard_time_us(W_1M, 2) < rule.replica_time_us(W_1M)


def test_a_lone_pod_and_the_forced_modes() -> None:
    assert not DispatchRule(cores=2).use_shards(W_1M, 2, 1)  # nothing to overlap with
    assert DispatchRule("shards").use_shards(1, 64, 1)
    assert not DispatchRule("replica").use_shards(10**6, 1, 64)
    with pytest.raises(ValueError, match="dispatch mode"):
        DispatchRule("sometimes")


def test_shards_sharing_the_coordinators_cores_need_bigger_windows() -> None:
    """The shards' CPU competes with the coordinator's on the cores they share: the
    fewer the cores, the bigger the window from which the shards pay; with enough cores
    the coordinator's serial parts alone decide (since shards answer from cached row
    scores that is already so on 2 cores: its CPU and waits, not the total, bound it)."""
    one, two, four = (break_even(DispatchRule(cores=c)) for c in (1, 2, 4))
    assert one is not None and two is not None and four is not None
    assert four <= two < one
    assert W_100K < two <= W_1M
    rule = DispatchRule(cores=64)
    serial = next(
        w
        for w in range(500, 1_000_001, 500)
        if rule.serial_bound_us(w, 2) < rule.replica_us + rule.replica_row_us * w + rule.wait_us
    )
    assert break_even(rule) == serial


def test_each_shard_costs_the_coordinator() -> None:
    """Many shards on few cores: each adds its call and reply to the coordinator's serial
    part, so past some count the replica wins again even at 1,000,000 nodes."""
    rule = DispatchRule(cores=2)
    assert rule.use_shards(W_1M, 2, 64)
    assert not rule.use_shards(W_1M, 400, 64)
    assert rule.shard_time_us(W_1M, 400) > rule.shard_time_us(W_1M, 4)


def test_waiting_for_the_shards_counts_against_them() -> None:
    """The coordinator's wait for the shards' replies is on its serial path: a wait
    longer than what the replica's evaluation of the window costs it keeps the window
    on the replica; its time off the CPU on either side moves neither."""
    rule = DispatchRule(cores=2)
    saved = rule.replica_time_us(W_1M) - rule.serial_bound_us(W_1M, 2)
    assert saved > 0
    assert not replace(rule, shard_wait_us=rule.shard_wait_us + saved + 1).use_shards(W_1M, 2, 64)
    assert replace(rule, wait_us=rule.wait_us + 10_000).use_shards(W_1M, 2, 64)
    assert not replace(rule, wait_us=rule.wait_us + 10_000).use_shards(W_100K, 2, 64)


def test_with_a_core_per_shard_the_coordinator_bounds_the_rate() -> None:
    """The scaling model's table (``benchmarks/scaling_model.py``): a shard of its own
    core per shard never makes pods/s exceed the coordinator's serial bound, and each
    shard the coordinator serves lowers that bound."""
    rule = DispatchRule()
    bounds = [rule.serial_bound_us(W_1M, s) for s in (1, 2, 4, 16, 64)]
    assert bounds == sorted(bounds) and bounds[0] < bounds[-1]
    for s, bound in zip((1, 2, 4, 16, 64), bounds, strict=True):
        assert rule.shard_time_us(W_1M, s, cores=s + 2) >= bound


def test_through_the_relay_the_coordinator_bound_falls_less_with_the_shards() -> None:
    """The relay's parts (``shard_time_us(relay=True)``): the coordinator's serial bound
    through the relay falls less from 1 to 64 shards than with direct calls, the relay's
    own bound is one of the terms, and auto never starts one below RELAY_FROM_SHARDS."""
    rule = DispatchRule(cores=128)
    direct = [rule.serial_bound_us(W_1M, s) for s in (1, 64)]
    relayed = [rule.serial_bound_us(W_1M, s, relay=True) for s in (1, 64)]
    assert relayed[1] - relayed[0] < direct[1] - direct[0]
    for s in (1, 2, 4, 16, 64):
        assert rule.shard_time_us(W_1M, s, s + 3, relay=True) >= rule.relay_time_us(s)
    assert not any(rule.use_relay(s) or rule.relay_pays(W_1M, s) for s in (1, 2))
    assert rule.relay_pays(W_1M, 64)  # a core each: the coordinator is the bound
    assert DispatchRule(relay="on").relay_pays(W_1M, 1)
    assert not DispatchRule(relay="off").use_relay(64)


def test_in_process_shards_stay_on_the_replica() -> None:
    """In-process shards run in the coordinator's thread: nothing overlaps."""
    assert break_even(DispatchRule(cores=64, shards_apart=False)) is None
    assert break_even(DispatchRule(cores=64)) is not None


def test_summary_counts_where_the_attempts_went(redis_client: redis.Redis) -> None:
    """Auto dispatch with in-process shards: every attempt the compiled path could give
    the shards is counted as the replica's; forced, the shards answer and none is."""
    docs = reducible_workload(1, n_pods=40)
    auto = ExecutorOptions("shards", shards=2)
    _, _, counters = run_outcome(redis_client, docs, auto, 64)
    assert counters["reduced_attempts"] == 0
    assert counters["dispatched_to_replica"] > 0
    forced = ExecutorOptions("shards", shards=2, shard_dispatch="shards")
    _, _, counters = run_outcome(redis_client, docs, forced, 64)
    assert counters["reduced_attempts"] > 0
    assert counters["dispatched_to_replica"] == 0
