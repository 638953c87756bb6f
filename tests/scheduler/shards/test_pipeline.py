"""The next batch evaluated by the shards while this one is committed (``shards.pipeline``):
answers computed before the commits of the batch popped before them are used only with
every row those commits changed evaluated again on the replica."""

from __future__ import annotations

import pytest
import redis

from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.shards.router import ShardRouter
from cluster_sched.testing.builders import make_node, make_pod
from tests.scheduler.shards.shard_runs import reducible_workload, run_outcome


def _spread_workload() -> list[dict[str, object]]:
    """40 equal nodes (room for 3 pods each), 60 pods of one shape: each pod's window is
    every node, its best score on the nodes holding the fewest pods, so every commit of a
    batch changes the best rows of the next batch's pods, which were asked before it."""
    docs = [make_node(f"n{i:02d}").capacity(cpu="2", memory="8Gi", pods=30).zone(f"z{i % 3}").manifest() for i in range(40)]  # fmt: skip
    docs += [make_pod(f"p{k:03d}").req(cpu="600m", memory="256Mi").manifest() for k in range(60)]
    return docs


SERIAL = ExecutorOptions("local", compiled=False)


def test_pipelined_answers_are_corrected_for_the_batch_committed_before_them(
    redis_client: redis.Redis,
) -> None:
    docs = _spread_workload()
    serial = run_outcome(redis_client, docs, SERIAL, 1)
    options = ExecutorOptions("shards", shards=2, shard_dispatch="shards")
    placements, counts, counters = run_outcome(redis_client, docs, options, 4)
    assert (placements, counts) == serial[:2]
    assert counters["reduced_pipelined"] >= 5, counters
    assert counters["reduced_rows_corrected"] > 0, counters
    assert counters["reduced_attempts"] > 20, counters


def test_pipelined_answers_used_without_that_correction_differ(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same runs with a planted bug: changed rows are recorded for the popped batch
    only, not for the batch sent ahead, so its answers, computed before the popped
    batch's commits, are used as they came. The placements then differ from the serial
    loop's: the test above is load-bearing."""
    docs = _spread_workload()
    serial = run_outcome(redis_client, docs, SERIAL, 1)

    def popped_batch_only(self: ShardRouter, replica_row: int) -> None:
        if self.marks:
            self.marks[0].add(replica_row)

    monkeypatch.setattr(ShardRouter, "_touch", popped_batch_only)
    options = ExecutorOptions("shards", shards=2, shard_dispatch="shards")
    placements, _, counters = run_outcome(redis_client, docs, options, 4)
    assert counters["reduced_pipelined"] >= 5, counters
    assert placements != serial[0]


@pytest.mark.parametrize("seed", [3, 11])
def test_pipelined_and_unpipelined_shards_give_the_serial_outcome(
    redis_client: redis.Redis, seed: int
) -> None:
    """Mixed shapes (failing rows, FitErrors, preferences, taints): pipelined or not, the
    serial outcome; pipelined, batches were taken from those sent ahead."""
    docs = reducible_workload(seed, n_pods=90)
    serial = run_outcome(redis_client, docs, SERIAL, 1)
    pipelined = 0
    for shards, batch in ((2, 8), (3, 5)):
        for pipeline in (False, True):
            options = ExecutorOptions(
                "shards", shards=shards, shard_dispatch="shards", shard_pipeline=pipeline
            )
            placements, counts, counters = run_outcome(redis_client, docs, options, batch)
            assert (placements, counts) == serial[:2], (shards, batch, pipeline)
            if not pipeline:
                assert counters["reduced_pipelined"] == 0
            pipelined += int(counters["reduced_pipelined"])
    assert pipelined > 0


def test_ray_shards_pipelined_give_the_serial_outcome(
    ray_session: None, redis_client: redis.Redis, redis_url: str
) -> None:
    """Real Ray shard actors (2 and 3): batch k+1 runs in the actors while batch k is
    committed; the serial placements and FailedScheduling counts, on the workload above
    and on a mixed one (batches sent ahead dropped when a window moved)."""
    for docs, modes, least in (
        (_spread_workload(), ((2, 4), (3, 4)), 5),
        (reducible_workload(7, n_pods=60), ((2, 4),), 1),
    ):
        serial = run_outcome(redis_client, docs, SERIAL, 1)
        for shards, batch in modes:
            options = ExecutorOptions(
                "ray", shards=shards, redis_url=redis_url, shard_dispatch="shards"
            )
            placements, counts, counters = run_outcome(redis_client, docs, options, batch)
            assert (placements, counts) == serial[:2], shards
            assert counters["reduced_pipelined"] >= least, counters
            assert counters["reduced_rows_corrected"] > 0, counters
