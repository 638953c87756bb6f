"""The host's search over the shards' tie bits (``ties``) finds, for every rank, the
member of the tie set a bool mask over the window gives (its numpy reference), with rows
changed since the question leaving the set and the best of them coming back."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.scheduler.shards.ties import TieBits


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    shards=st.integers(1, 4),
    width=st.integers(1, 300),
    density=st.sampled_from([0.0, 0.02, 0.5, 1.0]),
    n_changed=st.integers(0, 12),
    drop=st.booleans(),
)
def test_select_finds_every_rank_of_the_mask(
    seed: int, shards: int, width: int, density: float, n_changed: int, drop: bool
) -> None:
    rng = random.Random(seed)
    owner = [rng.randrange(shards) for _ in range(width)]
    parts = [
        np.array([p for p in range(width) if owner[p] == s], dtype=np.int64) for s in range(shards)
    ]
    bounds = np.zeros(shards + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=bounds[1:])
    holders = [s for s in range(shards) if len(parts[s]) and rng.random() < 0.8]
    byte_off = np.full(shards, -1, dtype=np.int64)
    rows = np.zeros(shards, dtype=np.int64)

    # as in a merged chunk (``replies.MergedChunk``): the holders' bytes for this pod sit
    # in any order among other pods' and shards' bytes (random here), back to back or not
    def other_bytes() -> np.ndarray:
        return np.array([rng.randrange(256) for _ in range(rng.choice([0, 0, 1, 7]))], np.uint8)

    chunks = [other_bytes()]
    at = len(chunks[0])
    want = np.zeros(width, dtype=np.bool_)
    for s in rng.sample(holders, len(holders)):
        mask = np.array([rng.random() < density for _ in parts[s]], dtype=np.bool_)
        packed = np.packbits(mask)
        byte_off[s], rows[s] = at, len(mask)
        chunks += [packed, other_bytes()]
        at += len(packed) + len(chunks[-1])
        want[parts[s]] = mask
    bits = np.concatenate(chunks)
    changed = np.array(sorted(rng.sample(range(width), min(n_changed, width))), dtype=np.int64)
    added = np.array([q for q in changed if rng.random() < 0.4], dtype=np.int64)
    if drop:
        want[:] = False
    want[changed] = False
    want[added] = True
    ties = TieBits(bits, byte_off, rows, np.concatenate(parts), bounds, width)
    t = ties.settle(changed, added, drop)
    expect = np.flatnonzero(want).tolist()
    assert t == len(expect)
    assert [ties.select(r) for r in range(t)] == expect
    assert np.flatnonzero(ties.mask()).tolist() == expect
