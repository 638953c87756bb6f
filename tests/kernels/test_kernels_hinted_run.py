"""A run with OpportunisticBatching's hints in one kernel call against the numpy
reference (``hinted_run_reference``): the same hosts, hints, last-node verdicts, kept
lists, windows and draws, on tables where a pod fills its node (hints are taken) or not
(every pod scored), from a kept list of real, missing and unfit rows."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.kernels import PodRequests
from cluster_sched.kernels.run import evaluate_hinted_run
from cluster_sched.kernels.run_reference import hinted_run_reference
from cluster_sched.testing.builders import make_pod
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
def test_hinted_run_equals_reference(data: st.DataObject) -> None:
    table = data.draw(st.one_of(tables(), wide_tables()))
    profile = data.draw(profiles())
    if data.draw(st.booleans()):  # room for one pod or a few: the previous host fills up
        table.allowed_pods[:] = table.pod_count + data.draw(st.sampled_from([1, 1, 2, 0]))
    query = data.draw(queries(table, profile))
    n = len(table.order())
    query = dataclasses.replace(query, start=data.draw(st.integers(0, 3 * n)))
    if data.draw(st.booleans()):  # a pod without requests: most nodes feasible, lists long
        query = dataclasses.replace(
            query, requests=PodRequests.of_pod(make_pod("p").obj(), profile)
        )
    to_find = data.draw(st.integers(1, n + 3))
    count = data.draw(st.integers(1, 12))
    vector = data.draw(pod_vectors(table))
    rows = st.integers(-1, n - 1)
    kept = np.asarray(data.draw(st.lists(rows, max_size=8)), dtype=np.int64)
    last = data.draw(rows)
    seed = data.draw(st.integers(0, 2**32))
    rng, ref_rng = random.Random(seed), random.Random(seed)
    before = (table.requested.copy(), table.free.copy(), table.pod_count.copy())
    got = evaluate_hinted_run(table, profile, query, to_find, count, vector, rng, kept, last)
    want = hinted_run_reference(table, profile, query, to_find, count, vector, ref_rng, kept, last)
    for field in ("hosts", "evaluated", "found", "ties", "starts"):
        assert getattr(got.run, field).tolist() == getattr(want.run, field).tolist(), field
    assert got.hints.tolist() == want.hints.tolist()
    assert got.rejects.tolist() == want.rejects.tolist()
    assert [got.kept(i).tolist() for i in range(len(got))] == [
        want.kept(i).tolist() for i in range(len(want))
    ]
    assert rng.getstate() == ref_rng.getstate()
    assert np.array_equal(table.requested, before[0]) and np.array_equal(table.free, before[1])
    assert np.array_equal(table.pod_count, before[2])
