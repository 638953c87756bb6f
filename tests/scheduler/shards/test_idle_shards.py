"""Shards the dispatch rule leaves idle are not kept up to date while idle
(``ShardedSource.sync_when_idle`` pushes only to shards in use): their deltas wait for
their next call, or, once they outgrow the shard, a rebuild from the replica. When
dispatch turns to them mid-run, that call brings them up to date first: the placements
are the serial loop's."""

from __future__ import annotations

import dataclasses

import pytest
import redis

from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.shards.shard_runs import run_outcome

SERIAL = ExecutorOptions("local", compiled=False)


def _compiled_workload() -> list[dict[str, object]]:
    """Every attempt one the compiled path takes (no failing row, no FitError), so the
    shards are called only when dispatch sends them a batch: 40 nodes in 3 zones, 64
    pods of two shapes."""
    docs = [make_node(f"n{i:02d}").capacity(cpu="4", memory="8Gi", pods=30).zone(f"z{i % 3}").manifest() for i in range(40)]  # fmt: skip
    docs += [make_pod(f"p{k:03d}").req(cpu=("600m" if k % 3 else "1"), memory="256Mi").manifest() for k in range(64)]  # fmt: skip
    return docs


@pytest.mark.parametrize("stale", [False, True])
def test_idle_shards_are_synced_by_the_call_that_turns_dispatch_to_them(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, stale: bool
) -> None:
    """Three batches on the replica (the rule's choice), the loop idle in between: the
    shards are sent nothing. Then dispatch turns to them: their first call carries the
    waiting deltas (``stale``: a reset and the replica's full state instead) and every
    placement, attempt and FailedScheduling count is the serial loop's."""
    if stale:
        import cluster_sched.scheduler.shards.router as router

        monkeypatch.setattr(router, "DELTA_BACKLOG", 1)
        monkeypatch.setattr(router, "STALE_FACTOR", 0)  # every delta makes a shard stale
    docs = _compiled_workload()
    serial = run_outcome(redis_client, docs, SERIAL, 1)
    steps: list[int] = []

    def switch_after_three(coord: Coordinator) -> None:
        steps.append(1)
        if len(steps) != 3:
            return
        src = coord.source
        cores = [c.core for c in src.clients]  # type: ignore[attr-defined]
        for _ in range(2):
            src.sync_when_idle()  # what the loop does when idle
        assert [core.table.n_nodes for core in cores] == [0, 0], "idle shards were synced"
        assert any(src.router.stale) if stale else all(src.router.deltas)  # type: ignore[attr-defined]
        reduced = src.reduced  # type: ignore[attr-defined]
        reduced.rule = dataclasses.replace(reduced.rule, mode="shards")

    options = ExecutorOptions("shards", shards=2, shard_dispatch="replica")
    placements, counts, counters = run_outcome(
        redis_client, docs, options, 8, after_step=switch_after_three
    )
    assert len(steps) > 3
    assert (placements, counts) == serial[:2]
    assert counters["dispatched_to_replica"] >= 24, counters
    assert counters["reduced_attempts"] > 20, counters
