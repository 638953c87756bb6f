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
from cluster_sched.scheduler.shard_core import ShardCore
from cluster_sched.scheduler.sharding import ShardedSource, ShardRouter
from cluster_sched.testing.builders import make_pod
from tests.workers.shard_scenario import (
    FlakyClient,
    WireClient,
    framework,
    incoming_pods,
    load,
    local_sequence,
    nodes,
    run_sequence,
    summary,
)
from workers.ray_shard import wire_deltas


@pytest.fixture(scope="module")
def expected() -> list[Any]:
    return local_sequence()


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize(
    "shards", [1, 2, 3, 5], ids=["1-shard", "2-shards", "3-shards", "5-shards"]
)
def test_wire_shards_match_a_single_table(expected: list[Any], shards: int) -> None:
    got, _ = run_sequence(
        lambda router: ShardedSource(router, [WireClient(i) for i in range(router.n_shards)]),
        shards,
    )
    assert got == expected
    # the sequence really exercised filters, scores and a misfit
    assert any(s[0] == "fit-error" for s in got)
    assert any(s[2] for s in got if s[0] != "fit-error")


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
