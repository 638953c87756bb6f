"""The rows changed since a flight was sent (``rescore.TouchedRows``): the window
positions it finds, asked between arrivals as pods are answered, are those a pass over
every changed row gives (the numpy reference below, what ``merge`` computed per pod),
for windows that wrap, rows changed twice and rows that left the order."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.scheduler.shards.rescore import TouchedRows


def _reference(
    touched: set[int], position: np.ndarray, n: int, start: int, width: int
) -> list[int]:
    if not touched:
        return []
    marks = np.fromiter(touched, dtype=np.int64, count=len(touched))
    marks = marks[marks < len(position)]
    pos = position[marks]
    pos = (pos[pos >= 0] - start) % n
    return np.unique(pos[pos < width]).tolist()


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    n=st.integers(1, 60),
    holes=st.integers(0, 10),
    steps=st.integers(1, 12),
    remap=st.booleans(),
)
def test_in_window_is_the_pass_over_every_changed_row(
    seed: int, n: int, holes: int, steps: int, remap: bool
) -> None:
    rng = random.Random(seed)
    cap = n + holes
    orders = []
    for _ in range(2):
        order = np.array(rng.sample(range(cap), n), dtype=np.int64)
        position = np.full(cap, -1, dtype=np.int64)
        position[order] = np.arange(n, dtype=np.int64)
        orders.append(position)
    touched = TouchedRows()
    seen: set[int] = set()
    position = orders[0]
    for step in range(steps):
        for _ in range(rng.randrange(4)):
            row = rng.randrange(cap + 3)  # beyond the map too: a row added since
            touched.add(row)
            seen.add(row)
        if remap and step == steps // 2:
            position = orders[1]
        start, width = rng.randrange(n), rng.randint(1, n)
        got = touched.in_window(position, n, start, width)
        assert got.dtype == np.int64
        assert got.tolist() == _reference(seen, position, n, start, width)
    assert len(touched) == sum(1 for _ in touched) and bool(touched) == bool(seen)
