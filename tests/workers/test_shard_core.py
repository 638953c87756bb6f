"""ShardCore without Ray: deltas, coordinator-chosen rows, the wire format, recovery.

The sharded side runs through ``WireClient`` (shard_scenario.py): a ShardActor called
in-process with the same msgpack bytes a Ray call would carry, so everything but the
transport is exercised here.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from cluster_sched.cache.cache import Cache
from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.state_codec import decode_value, encode_value
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.source import ShardedSource, ShardRouter
from cluster_sched.testing.builders import make_node, make_pod
from tests.workers.shard_scenario import (
    FlakyClient,
    WireClient,
    attempt,
    framework,
    incoming_pods,
    load,
    local_sequence,
    nodes,
    run_sequence,
    summary,
)
from workers.shard_wire import wire_deltas


@pytest.fixture(scope="module")
def expected() -> list[Any]:
    return local_sequence()


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize(
    "shards", [1, 2, 3, 5], ids=["1-shard", "2-shards", "3-shards", "5-shards"]
)
def test_wire_shards_match_a_single_table(expected: list[Any], shards: int) -> None:
    got, src = run_sequence(
        lambda router: ShardedSource(router, [WireClient(i) for i in range(router.n_shards)]),
        shards,
    )
    assert got == expected
    # the sequence really exercised filters, scores and a misfit
    assert any(s[0] == "fit-error" for s in got)
    assert any(s[2] for s in got if s[0] != "fit-error")
    # Scores sent with the Filter answer served the plain pods; once pods with affinity
    # terms exist, InterPodAffinity's PreScore reads them and the Score fan-out is used.
    assert src.speculative.hits >= 4 and src.speculative.misses >= 1


def test_shard_rows_are_the_coordinators_choice() -> None:
    router = ShardRouter(2)
    cores = [ShardCore(i) for i in range(2)]
    ns = nodes()[:6]
    for node in ns:
        router.upsert_node(node)
    router.remove_node("n2")
    router.upsert_node(nodes()[10])  # takes the row n2 freed, on n2's shard
    router.remove_node("n3")
    for i, core in enumerate(cores):
        core.apply(decode_value(encode_value(wire_deltas(router.take_deltas(i)))))
    assert router.node_shard["n10"] == (0, 1)
    for name, (shard, row) in router.node_shard.items():
        assert cores[shard].table.index[name] == row
    assert sorted(n for c in cores for n in c.table.index) == sorted(router.node_shard)


def test_assumed_pod_manifest_lands_on_the_deltas_node() -> None:
    # An assumed pod is the informer's object with node_name set; its raw manifest has no
    # spec.nodeName, so the shard must take the node from the delta.
    router = ShardRouter(1)
    core = ShardCore(0)
    router.upsert_node(nodes()[0])
    pod = make_pod("p").req(cpu="1").obj()
    router.add_pod("n0", replace(pod, node_name="n0"))
    core.apply(decode_value(encode_value(wire_deltas(router.take_deltas(0)))))
    stored = core.table.row_pods[core.table.index["n0"]]["default/p"]
    assert stored.node_name == "n0"
    assert core.table.pod_count[core.table.index["n0"]] == 1


def test_full_state_replay_equals_incremental_state() -> None:
    router = ShardRouter(2)
    cache = Cache(router)
    incremental = [ShardCore(i) for i in range(2)]
    load(cache)
    for i, core in enumerate(incremental):
        core.apply(router.take_deltas(i))
    extra = make_pod("extra").label("app", "web").req(cpu="1", memory="1Gi").obj()
    cache.assume_pod(replace(extra, node_name="n5"), "n5")
    cache.remove_node("n7")
    cache.forget_pod(replace(extra, node_name="n5"))
    cache.assume_pod(replace(extra, node_name="n8"), "n8")
    for i, core in enumerate(incremental):
        core.apply(router.take_deltas(i))
    for i, core in enumerate(incremental):
        fresh = ShardCore(i)
        fresh.apply(decode_value(encode_value(wire_deltas(router.full_state_deltas(i)))))
        assert fresh.table.index == core.table.index
        rows = np.asarray(sorted(core.table.index.values()), dtype=np.int64)
        assert np.array_equal(fresh.table.requested[:, rows], core.table.requested[:, rows])
        assert np.array_equal(fresh.table.pod_count[rows], core.table.pod_count[rows])
        for r in rows.tolist():
            assert fresh.table.row_pods[r].keys() == core.table.row_pods[r].keys()


def test_a_lost_shard_is_rebuilt_from_the_replica_and_the_call_repeated(
    expected: list[Any],
) -> None:
    clients: list[FlakyClient] = []

    def source(router: ShardRouter) -> ShardedSource:
        clients.extend([FlakyClient(0, set()), FlakyClient(1, {3, 9, 20})])
        return ShardedSource(router, list(clients))

    got, src = run_sequence(source, 2)
    assert got == expected
    assert clients[1].rebuilt == 3 and src.rebuilds == 3
    assert clients[0].rebuilt == 0


def test_a_shard_that_cannot_be_rebuilt_fails_the_cycle_clearly(expected: list[Any]) -> None:
    router = ShardRouter(2)
    cache = Cache(router)
    load(cache)
    flaky = FlakyClient(1, {1}, rebuild_fails=1)
    src = ShardedSource(router, [WireClient(0), flaky])
    fwk = framework(cache)
    pod = incoming_pods()[0]
    with pytest.raises(
        SchedulerError, match="shard 1 lost and could not be rebuilt: shard 1 lost: no room"
    ):
        Scheduler(0, random.Random(7)).schedule_pod(
            fwk, CycleState(), pod, router.table, cache.snapshot, None, src
        )
    assert src.lost == {1}
    # the next cycle rebuilds it first, and then answers as a single table would
    res = Scheduler(0, random.Random(7)).schedule_pod(
        fwk, CycleState(), pod, router.table, cache.snapshot, None, src
    )
    assert summary(res) == expected[0]
    assert src.lost == set() and flaky.rebuilt == 1


# ------------------------------------------------------------ what a shard is not sent


def _replica_accounting(table: Any, names: list[str]) -> list[Any]:
    rows = [table.index[n] for n in names]
    return [
        (table.requested[:, r].tolist(), int(table.pod_count[r]), sorted(table.row_pods[r]))
        for r in rows
    ]


def test_waiting_deltas_are_coalesced_and_the_shard_still_matches_the_replica() -> None:
    router = ShardRouter(1)
    core = ShardCore(0)
    for node in nodes()[:2]:
        router.upsert_node(node)
    core.apply(router.take_deltas(0))
    assumed = replace(make_pod("a").req(cpu="1").obj(), node_name="n0")
    confirmed = replace(assumed, meta=replace(assumed.meta, resource_version="7"))
    router.add_pod("n0", assumed)
    router.replace_pod("n0", confirmed)  # the watch confirms it before the shard saw it
    gone = replace(make_pod("b").req(cpu="2").obj(), node_name="n1")
    router.add_pod("n1", gone)
    router.remove_pod("n1", gone)  # forgotten before it left: nothing to send
    waiting = router.take_deltas(0)
    assert waiting == [["pod+", "n0", confirmed]]
    core.apply(waiting)
    assert core.table.row_pods[core.table.index["n0"]]["default/a"] is confirmed
    # once sent, a same-accounting confirmation sends nothing; a removal is sent
    router.replace_pod("n0", replace(confirmed, meta=replace(confirmed.meta, resource_version="8")))
    assert router.take_deltas(0) == []
    router.remove_pod("n0", confirmed)
    assert router.take_deltas(0) == [["pod-", "n0", "default/a"]]


def test_a_shard_whose_deltas_outgrow_its_state_is_reset_and_rebuilt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cluster_sched.scheduler.shards.router as sharding

    monkeypatch.setattr(sharding, "DELTA_BACKLOG", 8)
    router = ShardRouter(2)
    cache = Cache(router)
    load(cache)
    cores = [ShardCore(i) for i in range(2)]
    for i, core in enumerate(cores):
        core.apply(decode_value(encode_value(wire_deltas(router.take_deltas(i)))))
    # churn: pods assumed and confirmed one after another on every node, far more
    # changes than the shards hold
    for k in range(300):
        pod = make_pod(f"churn-{k}").req(cpu="100m").obj()
        node = f"n{k % 12}"
        cache.assume_pod(replace(pod, node_name=node), node)
        if k % 3:
            cache.forget_pod(replace(pod, node_name=node))
    assert router.stale == [True, True]
    assert router.deltas == [[], []]  # nothing collected while stale
    for i, core in enumerate(cores):
        rebuild = router.take_deltas(i)
        assert rebuild[0] == sharding.RESET
        core.apply(decode_value(encode_value(wire_deltas(rebuild))))
        assert not router.stale[i]
        mine = sorted(n for n, (s, _) in router.node_shard.items() if s == i)
        assert sorted(core.table.index) == mine
        for name in mine:
            r, sr = router.table.index[name], core.table.index[name]
            assert np.array_equal(core.table.requested[:, sr], router.table.requested[:, r])
            assert core.table.row_pods[sr].keys() == router.table.row_pods[r].keys()


def test_scheduling_through_stale_shards_matches_a_single_table(
    expected: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import cluster_sched.scheduler.shards.router as sharding

    monkeypatch.setattr(sharding, "DELTA_BACKLOG", 1)
    monkeypatch.setattr(sharding, "STALE_FACTOR", 0)  # every delta makes a shard stale
    got, src = run_sequence(
        lambda router: ShardedSource(router, [WireClient(i) for i in range(router.n_shards)]),
        3,
    )
    assert got == expected
    assert src.rebuilds == 0  # resets travel with calls; no shard was lost


# ------------------------------------------------------------ a prefetched batch


def _plain_pods(n: int) -> list[Any]:
    """Pods whose state is their own (no volumes, no cross-node terms), one per node at
    most, so nodes fill up and earlier assumes change the rows later pods read."""
    return [
        make_pod(f"plain-{i}").req(cpu=("2500m" if i % 4 else "3"), memory="2Gi").obj()
        for i in range(n)
    ]


def _small_pods(n: int) -> list[Any]:
    """Pods many of which fit on one node: the rows earlier pods landed on still pass."""
    return [make_pod(f"small-{i}").req(cpu="300m", memory="1Gi").obj() for i in range(n)]


def _sequence(
    source_for: Any, shards: int, n_nodes: int, n_pods: int, pods_of: Any = _plain_pods
) -> tuple[list[Any], Any]:
    router = ShardRouter(shards) if shards else None
    cache = Cache(router) if router is not None else Cache()
    for i in range(n_nodes):
        cache.add_node(make_node(f"n{i}").capacity(cpu="4", memory="16Gi", pods=20).obj())
    source = source_for(router) if router is not None else None
    table = router.table if router is not None else cache.sink.table  # type: ignore[attr-defined]
    fwk = framework(cache)
    sched = Scheduler(0, random.Random(7))
    pods = pods_of(n_pods)
    if source is not None:
        source.prefetch_batch(
            {fwk.profile_name: fwk},
            pods,
            cache.snapshot,
            sched.next_start_node_index,
            sched.percentage_of_nodes_to_score,
            False,
        )
    out = []
    for pod in pods:
        res = attempt(sched, fwk, cache, table, source, pod)
        out.append(summary(res))
        if hasattr(res, "suggested_host"):
            cache.assume_pod(replace(pod, node_name=res.suggested_host), res.suggested_host)
    if source is not None:
        source.end_batch()
    return out, source


@pytest.mark.parametrize("shards", [1, 2, 3])
@pytest.mark.parametrize(
    ("n_nodes", "n_pods"), [(24, 30), (300, 200)], ids=["full-scan", "windows"]
)
def test_a_prefetched_batch_gives_the_single_table_sequence(
    shards: int, n_nodes: int, n_pods: int
) -> None:
    want, _ = _sequence(None, 0, n_nodes, n_pods)
    got, src = _sequence(
        lambda router: ShardedSource(router, [WireClient(i) for i in range(router.n_shards)]),
        shards,
        n_nodes,
        n_pods,
    )
    assert got == want
    hits, misses = src.prefetch.hits, src.prefetch.misses
    if n_nodes == 24:
        # every first Filter question was the predicted full scan, answered from the
        # batch call with the rows earlier pods filled recomputed; then nodes ran out
        assert any(s[0] == "fit-error" for s in got)
        assert (hits, misses) == (n_pods, 0)
    else:
        # windows of 143 rows: predicted while every row passes, then an earlier pod's
        # node is in the window, it moves, and the prediction is not used
        assert hits >= 2 and misses >= 1


@pytest.mark.parametrize("shards", [1, 2])
def test_rows_changed_in_the_batch_are_scored_on_the_replica_with_the_cycles_state(
    shards: int,
) -> None:
    """Small pods on a full scan: from the second pod on, rows earlier pods of the batch
    landed on are stale and still pass. They are filtered again and scored on the
    replica (``keep_local``), the others keep the shards' scores: every Score phase is
    served without a second call, and the placements are the single table's."""
    want, _ = _sequence(None, 0, 24, 60, _small_pods)
    got, src = _sequence(
        lambda router: ShardedSource(router, [WireClient(i) for i in range(router.n_shards)]),
        shards,
        24,
        60,
        _small_pods,
    )
    assert got == want
    assert (src.prefetch.hits, src.prefetch.misses) == (60, 0)
    counts = src.speculative.counters()
    assert counts["speculative_score_hits"] == 60 and counts["speculative_score_misses"] == 0
    assert counts["speculative_score_local_rows"] >= 60 - 1


def test_a_shard_lost_on_its_batch_call_is_rebuilt_and_the_sequence_unchanged() -> None:
    want, _ = _sequence(None, 0, 300, 60)
    flaky: list[FlakyClient] = []

    def source(router: ShardRouter) -> ShardedSource:
        flaky.append(FlakyClient(1, {1}))  # its first call is the batch's
        return ShardedSource(router, [WireClient(0), flaky[0]])

    got, src = _sequence(source, 2, 300, 60)
    assert got == want
    assert flaky[0].rebuilt == 1 and src.rebuilds == 1
    assert src.prefetch.hits == 0  # the batch was dropped; every pod asked again
