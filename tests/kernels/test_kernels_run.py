"""A run of pods in one kernel call against the numpy reference (``run_reference``):
the same hosts, evaluated counts, feasible counts, tie sets and window starts, the same
draws left in the scheduler's ``random.Random``; and CPython's Mersenne Twister drawn in
compiled code against ``randrange``."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.kernels import mt19937
from cluster_sched.kernels.run import evaluate_run
from cluster_sched.kernels.run_reference import run_reference
from tests.kernels.strategies import (
    EXAMPLES,
    pod_vectors,
    profiles,
    queries,
    tables,
    wide_tables,
)


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_run_equals_reference(data: st.DataObject) -> None:
    table = data.draw(st.one_of(tables(), wide_tables()))
    profile = data.draw(profiles())
    if data.draw(st.booleans()):  # room for a few pods only: the assumed counts decide
        table.allowed_pods[:] = table.pod_count + data.draw(st.integers(0, 3))
    query = data.draw(queries(table, profile))
    n = len(table.order())
    query = dataclasses.replace(query, start=data.draw(st.integers(0, 3 * n)))
    to_find = data.draw(st.integers(1, n + 3))
    count = data.draw(st.integers(1, 12))
    vector = data.draw(pod_vectors(table))
    seed = data.draw(st.integers(0, 2**32))
    rng, ref_rng = random.Random(seed), random.Random(seed)
    before = (table.requested.copy(), table.free.copy(), table.pod_count.copy())
    got = evaluate_run(table, profile, query, to_find, count, vector, rng)
    want = run_reference(table, profile, query, to_find, count, vector, ref_rng)
    for field in ("hosts", "evaluated", "found", "ties", "starts"):
        assert getattr(got, field).tolist() == getattr(want, field).tolist(), field
    assert rng.getstate() == ref_rng.getstate()
    # the table itself is not written: the cache assumes each decided pod
    assert np.array_equal(table.requested, before[0]) and np.array_equal(table.free, before[1])
    assert np.array_equal(table.pod_count, before[2])


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.integers(0, 2**32), st.lists(st.integers(2, mt19937.MAX_DRAW - 1), min_size=1, max_size=700)
)
def test_randbelow_draws_as_randrange(seed: int, bounds: list[int]) -> None:
    rng, ref = random.Random(seed), random.Random(seed)
    mt, pos = mt19937.state_of(rng)
    got = [int(mt19937.randbelow(mt, pos, n)) for n in bounds]
    assert got == [ref.randrange(n) for n in bounds]
    mt19937.restore(rng, mt, pos)
    assert rng.getstate() == ref.getstate()
