"""The shards' reductions as columns (``shards.replies``): through the wire and merged
across shards they give, per pod, what the per-pod answers say one by one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.framework.state_codec import decode_value, encode_value
from cluster_sched.scheduler.shards.reduce import FAILED, OK, STALE, PodReduction
from cluster_sched.scheduler.shards.replies import (
    ANSWERED,
    FILTER,
    NORMALIZED_NAMES,
    STALE_VERDICT,
    ChunkReduction,
    MergedChunk,
)

_pod = st.builds(
    PodReduction,
    status=st.sampled_from([OK, OK, OK, FAILED, STALE]),
    best=st.sampled_from([-1, -1, 0, 1, 2]),
    ties=st.lists(st.booleans(), max_size=20).map(lambda t: np.array(t, dtype=np.bool_)),
    maxima=st.dictionaries(st.sampled_from(NORMALIZED_NAMES), st.integers(0, 3)),
    skipped=st.frozensets(st.sampled_from(["A", "B"])),
)


def _positions(shard: int, rows: int, shards: int) -> np.ndarray:
    """Where a shard's rows sit in a window in these tests: every shards-th position."""
    return np.arange(rows, dtype=np.int64) * shards + shard


def _tie_positions(
    merged: MergedChunk, i: int, parts: list[np.ndarray], width: int
) -> list[int] | None:
    """Pod ``i``'s tie set in window order (``parts[s]``: shard ``s``'s positions), as
    the mask and as ``select`` of every rank (they must agree)."""
    bounds = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=bounds[1:])
    got = merged.tie_bits(i, np.concatenate(parts).astype(np.int64), bounds, width)
    if got is None:
        return None
    t = got.settle(np.zeros(0, np.int64), np.zeros(0, np.int64), False)
    ties = np.flatnonzero(got.mask()).tolist()
    assert [got.select(r) for r in range(t)] == ties
    return ties


def _expected(
    replies: list[PodReduction],
) -> tuple[int, int, bool, list[int], list[frozenset[str]]]:
    """One pod's merge, answer by answer: the verdict, best, conflicting maxima, tie
    positions and the skip sets of the shards holding rows."""
    relevant = [r for r in replies if r.status != OK or r.best >= 0]
    if any(r.status != OK for r in relevant) or not relevant:
        stale = any(r.status == STALE for r in relevant)
        return (STALE_VERDICT if stale else FILTER), 0, False, [], []
    maxima: dict[str, int] = {}
    conflict = False
    for r in relevant:
        for name, m in (r.maxima or {}).items():
            conflict |= maxima.setdefault(name, m) != m
    best = max(r.best for r in relevant)
    ties = sorted(
        int(p)
        for s, r in enumerate(replies)
        if (r.status != OK or r.best >= 0) and r.best == best and r.ties is not None
        for p in _positions(s, len(r.ties), len(replies))[r.ties]
    )
    return ANSWERED, best, conflict, ties, [r.skipped for r in relevant]


@settings(max_examples=150, deadline=None)
@given(
    shards=st.integers(1, 4).flatmap(
        lambda s: st.integers(1, 5).flatmap(
            lambda n: st.lists(st.lists(_pod, min_size=n, max_size=n), min_size=s, max_size=s)
        )
    )
)
def test_merged_columns_are_the_per_pod_merge(shards: list[list[PodReduction]]) -> None:
    n = len(shards[0])
    wired = [
        ChunkReduction.of_wire(decode_value(encode_value(ChunkReduction.pack(pods).wire())))
        for pods in shards
    ]
    merged = MergedChunk(wired, n)
    for i in range(n):
        verdict, best, conflict, ties, skipped = _expected([pods[i] for pods in shards])
        assert int(merged.verdict[i]) == verdict
        if verdict != ANSWERED:
            continue
        assert int(merged.best[i]) == best
        assert bool(merged.conflict[i]) == conflict
        if not conflict:  # the maxima the coordinator rescores changed rows under
            shown = [pods[i] for pods in shards if pods[i].best >= 0]
            expect = {k: m for r in shown for k, m in (r.maxima or {}).items()}
            assert merged.maxima_of(i) == expect
            assert all(type(m) is int for m in merged.maxima_of(i).values())
        lens = [len(pods[i].ties) for pods in shards]  # type: ignore[arg-type]
        width = max(lens) * len(shards)
        parts = [_positions(s, lens[s], len(shards)) for s in range(len(shards))]
        assert _tie_positions(merged, i, parts, width) == ties
        assert merged.skipped(i) == skipped
        # the per-chunk skip columns say what comparing each shard's set says
        for skip in map(frozenset, ([], ["A"], ["B"], ["A", "B"])):
            assert merged.skips_agree(i, skip) == all(k == skip for k in skipped)


def test_tie_bits_need_the_shards_row_count() -> None:
    """A shard that counts other rows of the window than the coordinator places for it
    is not trusted with the tie positions."""
    ties = np.array([True, False, True])
    merged = MergedChunk([ChunkReduction.pack([PodReduction(OK, 5, ties, {}, frozenset())])], 1)
    assert _tie_positions(merged, 0, [np.array([4, 7, 9])], 12) == [4, 9]
    assert _tie_positions(merged, 0, [np.array([4, 7])], 12) is None


def test_a_lost_shards_chunk_makes_every_pod_stale() -> None:
    ok = ChunkReduction.pack([PodReduction(OK, 5, np.array([True]), {}, frozenset())] * 3)
    merged = MergedChunk([ok, ChunkReduction.stale(3)], 3)
    assert merged.any_stale and merged.verdict.tolist() == [STALE_VERDICT] * 3
