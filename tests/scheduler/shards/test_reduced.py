"""The reduced shard protocol (``shard_merge``, ``shard_reduce``): the compiled path's
attempts answered from the shards' reductions give the serial loop's placements,
attempts and FailedScheduling counts, and they are actually answered that way."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.plugins._helpers import default_normalize_score
from cluster_sched.scheduler.assembly import ExecutorOptions
from cluster_sched.scheduler.shards.reduce import ShardWindows
from cluster_sched.scheduler.shards.rescore import _normalized, normalized_ints
from tests.scheduler.shards.shard_runs import reducible_workload, run_outcome


def _serial_and_reduced(client: redis.Redis, seed: int) -> list[int]:
    """Runs ``reducible_workload(seed)`` serially and through 2 and 3 reduced shards;
    asserts equal placements and counts; returns each shard run's reduced attempts."""
    docs = reducible_workload(seed)
    serial = run_outcome(client, docs, ExecutorOptions("local", compiled=False), 1)
    assert any(serial[0].values()) and not all(serial[0].values()), "some fit, some do not"
    reduced = []
    for shards, batch in ((2, 64), (3, 5)):
        options = ExecutorOptions("shards", shards=shards, shard_dispatch="shards")
        placements, counts, counters = run_outcome(client, docs, options, batch)
        assert (placements, counts) == serial[:2], (shards, batch)
        reduced.append(counters["reduced_attempts"])
    return reduced


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000))
def test_reduced_shards_give_the_serialrun_outcome(redis_client: redis.Redis, seed: int) -> None:
    # the shards answered some attempts (the others: windows with failing rows, maxima
    # that differ between shards, pods that fail; how many varies with the seed)
    assert sum(_serial_and_reduced(redis_client, seed)) > 0


#: Workload seeds whose runs the shards answer at least 5 attempts of, in both modes
#: (of 24 seeds checked, 0-23, every one gave the serial outcome).
REACHING_SEEDS = (0, 3, 9)


@pytest.mark.parametrize("seed", REACHING_SEEDS)
def test_reduced_shards_answer_most_attempts(redis_client: redis.Redis, seed: int) -> None:
    assert min(_serial_and_reduced(redis_client, seed)) >= 5


def test_replica_dispatch_sends_nothing(redis_client: redis.Redis) -> None:
    docs = reducible_workload(1, n_pods=20)
    options = ExecutorOptions("shards", shards=2, shard_dispatch="replica")
    _, _, counters = run_outcome(redis_client, docs, options, 64)
    assert counters.get("reduced_batches", 0) == 0 and counters["reduced_attempts"] == 0


@pytest.mark.parametrize("relay", ["off", "on"])
@pytest.mark.parametrize("inline", [True, False])
def test_ray_reduced_shards_report_traffic(
    ray_session: None,
    redis_client: redis.Redis,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    inline: bool,
    relay: str,
) -> None:
    """Real actors: the serial outcome, and bytes and utilisation in the counters; with
    the chunks in each call (small) and, forced, through the object store (big);
    directly or through the shard relay (summary.json says which)."""
    if not inline:
        import workers.ray_shard

        monkeypatch.setattr(workers.ray_shard, "INLINE_PAYLOAD", -1)
    docs = reducible_workload(REACHING_SEEDS[0])
    serial = run_outcome(redis_client, docs, ExecutorOptions("local", compiled=False), 1)
    options = ExecutorOptions(
        "ray", shards=2, redis_url=redis_url, shard_dispatch="shards", shard_relay=relay
    )
    placements, counts, counters = run_outcome(redis_client, docs, options, 64)
    assert (placements, counts) == serial[:2]
    assert counters["reduced_attempts"] >= 5, counters
    assert (counters["reduced_relayed_payloads"] > 0) == (relay == "on"), counters
    assert counters["bytes_sent_per_pod_per_shard"] > 0
    assert counters["bytes_received_per_pod_per_shard"] > 0
    assert 0 < counters["shard_utilisation"] <= 1


@given(
    n=st.integers(1, 300),
    mine=st.integers(0, 2**32),
    start=st.integers(0, 10_000),
    width=st.integers(1, 300),
)
def test_a_shards_window_is_its_rows_of_the_rotation(
    n: int, mine: int, start: int, width: int
) -> None:
    rng = np.random.default_rng(mine)
    order = rng.permutation(n + 5)[:n].astype(np.int64)  # replica rows, some unused
    windows = ShardWindows()
    local = {}
    for replica_row in order:
        if rng.random() < 0.5:
            local[int(replica_row)] = len(local)
            windows.place(local[int(replica_row)], int(replica_row))
    windows.set_order(order, 1)
    start, width = start % n, min(width, n)
    rows, pos = windows.window(start, width)
    rotated = np.concatenate((order[start:], order[:start]))[:width]
    expect = [(local[int(r)], p) for p, r in enumerate(rotated) if int(r) in local]
    assert list(zip(rows.tolist(), pos.tolist(), strict=True)) == expect


@given(
    raw=st.lists(st.integers(0, 10_000), min_size=1, max_size=40),
    extra=st.integers(0, 10_000),
    reverse=st.booleans(),
)
def test_normalising_under_the_global_maximum_is_default_normalize_score(
    raw: list[int], extra: int, reverse: bool
) -> None:
    """Rows normalised alone under the feasible set's maximum get the scores they get
    within the whole set (the touched rows the coordinator rescores)."""
    whole = np.asarray([*raw, extra], dtype=np.int64)
    expect = default_normalize_score(whole, reverse)
    got = _normalized(whole[: len(raw)], int(whole.max()), reverse)
    assert got.tolist() == expect[: len(raw)].tolist()


@given(
    raw=st.lists(st.integers(-10_000, 10_000), max_size=12),
    maximum=st.integers(-5, 10_000),
    reverse=st.booleans(),
)
def test_normalising_few_rows_in_python_ints_is_the_numpy_path(
    raw: list[int], maximum: int, reverse: bool
) -> None:
    """The rescoring of a pod's few changed rows (``normalized_ints``) gives what the
    numpy path (``_normalized``: div_trunc, truncating toward zero) gives."""
    expect = _normalized(np.asarray(raw, dtype=np.int64), maximum, reverse)
    assert normalized_ints(raw, maximum, reverse) == expect.tolist()
