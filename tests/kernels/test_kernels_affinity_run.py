"""A run carrying InterPodAffinity's required terms (``kernels.affinity``) against the
numpy reference (``run_reference`` with the verdict recomputed from the counts for every
pod), on random tables (AFF and BLOCK tables, codes with missing labels, zero and
positive counts, deltas of 0..2, the first-of-group exception on and off); and
``affinity_run`` built from a pod's real PreFilter state, assumed pod after pod with the
kernel's update rule, against the plugin's own PreFilter and Filter on every row."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.kernels.affinity import AffinityRun, affinity_run
from cluster_sched.kernels.run import evaluate_run
from cluster_sched.kernels.run_reference import affinity_mask, run_reference
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.interpodaffinity import filtering
from cluster_sched.plugins.interpodaffinity.filtering import PreFilterState
from cluster_sched.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY as IPA_KEY
from cluster_sched.scheduler.profile import new_framework
from tests.kernels.strategies import EXAMPLES, pod_vectors, profiles, queries, tables, wide_tables
from tests.scheduler.affinity_specs import AffinitySpec, affinity_pod, affinity_specs, cluster


def _codes(seed: int, k: int, cap: int, d: int) -> np.ndarray:
    """int64[k, cap] label codes in -1..d-1, drawn row by row (hypothesis' arrays fill
    wide ones with one value: every row in one domain)."""
    return np.random.default_rng(seed).integers(-1, d, (k, cap)).astype(np.int64)


@st.composite
def affinity_runs(draw: st.DrawFn, table: NodeTable) -> AffinityRun:
    cap = table.allocatable.shape[1]
    k = draw(st.integers(1, 3))
    d = draw(st.integers(1, 6))
    codes = _codes(draw(st.integers(0, 2**32)), k, cap, d)
    counts = draw(hnp.arrays(np.int64, (k, d), elements=st.sampled_from([0, 0, 0, 1, 2])))
    kinds = draw(hnp.arrays(np.int64, k, elements=st.integers(0, 1)))
    delta = draw(hnp.arrays(np.int64, k, elements=st.integers(0, 2)))
    self_match = np.array([draw(st.integers(0, 1))], dtype=np.int64)
    if draw(st.booleans()):  # no pod matches the affinity terms yet: the first of a group
        counts[kinds == 0] = 0
    return AffinityRun(codes, counts, kinds, delta, self_match)


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_affinity_run_equals_reference(data: st.DataObject) -> None:
    table = data.draw(st.one_of(tables(), wide_tables()))
    profile = data.draw(profiles())
    query = data.draw(queries(table, profile))
    n = len(table.order())
    query = dataclasses.replace(query, start=data.draw(st.integers(0, 3 * n)))
    to_find = data.draw(st.integers(1, n + 3))
    count = data.draw(st.integers(1, 24))
    vector = data.draw(pod_vectors(table))
    aff = data.draw(affinity_runs(table))
    seed = data.draw(st.integers(0, 2**32))
    rng, ref_rng = random.Random(seed), random.Random(seed)
    counts = aff.counts.copy()
    masks = [m.copy() for m in query.masks]
    got = evaluate_run(table, profile, query, to_find, count, vector, rng, affinity=aff)
    want = run_reference(table, profile, query, to_find, count, vector, ref_rng, affinity=aff)
    for field in ("hosts", "evaluated", "found", "ties", "starts"):
        assert getattr(got, field).tolist() == getattr(want, field).tolist(), field
    assert rng.getstate() == ref_rng.getstate()
    # neither the caller's counts nor the shape's (cached) mask columns are written
    assert np.array_equal(aff.counts, counts)
    assert all(np.array_equal(a, b) for a, b in zip(query.masks, masks, strict=True))


@settings(max_examples=EXAMPLES // 3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_first_of_a_group_takes_any_domain_and_the_rest_follow_it(
    data: st.DataObject,
) -> None:
    """Pods affine to themselves, none placed yet: the first goes to any labelled row,
    the later ones only to its domain (the verdicts redone when the count turns
    positive), as the reference."""
    table = data.draw(st.one_of(tables(), wide_tables()))
    profile = data.draw(profiles())
    query = data.draw(queries(table, profile))
    n = len(table.order())
    cap = table.allocatable.shape[1]
    codes = _codes(data.draw(st.integers(0, 2**32)), 1, cap, 3)
    aff = AffinityRun(
        codes, np.zeros((1, 3), np.int64), np.zeros(1, np.int64), np.ones(1, np.int64),
        np.ones(1, np.int64),
    )  # fmt: skip
    vector = data.draw(pod_vectors(table))
    seed = data.draw(st.integers(0, 2**32))
    rng, ref_rng = random.Random(seed), random.Random(seed)
    got = evaluate_run(table, profile, query, n, 12, vector, rng, affinity=aff)
    want = run_reference(table, profile, query, n, 12, vector, ref_rng, affinity=aff)
    assert got.hosts.tolist() == want.hosts.tolist()
    assert got.found.tolist() == want.found.tolist()
    domains = {int(codes[0, h]) for h in got.hosts.tolist()}
    assert len(domains) <= 1 and -1 not in domains


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    spec=affinity_specs,
    others=st.lists(affinity_specs, max_size=3),
    n_nodes=st.integers(2, 10),
    layout=st.integers(0, 2**16),
    bound=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), max_size=8),
    seed=st.integers(0, 2**16),
)
def test_affinity_run_follows_the_plugins_prefilter_and_filter(
    spec: AffinitySpec,
    others: list[AffinitySpec],
    n_nodes: int,
    layout: int,
    bound: list[tuple[int, int]],
    seed: int,
) -> None:
    """``affinity_run`` from a pod's real PreFilter state, then pods of its spec assumed
    one by one with the kernel's update rule (its host's domains take ``delta``): the
    verdict from the carried counts is, on every row, InterPodAffinity's own Filter after
    the plugin's fresh PreFilter for the next pod (existing pods of other specs bound)."""
    cache = Cache()
    cache.load(cluster(n_nodes, layout))
    specs = [spec, *others]
    for j, (which, node) in enumerate(bound):
        s = specs[which % len(specs)]
        cache.add_pod(affinity_pod(f"b{j}", s, f"n{node % n_nodes}"))
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    table = cache.sink.table  # type: ignore[attr-defined]
    rng = random.Random(seed)

    def prefilter(name: str) -> tuple[object, PreFilterState | None]:
        pod = affinity_pod(name, spec)
        state = CycleState()
        fwk.run_pre_filter(state, pod, cache.snapshot)
        s = state.get(IPA_KEY)
        skipped = "InterPodAffinity" in state.skip_filter_plugins
        return pod, None if skipped or not isinstance(s, PreFilterState) else s

    pod, s = prefilter("p0")
    if s is None:
        return  # no term of its own, no existing pod's term matching it: nothing carried
    carried = affinity_run(s, pod, table)  # type: ignore[arg-type]
    counts = carried.counts.copy()
    rows = table.order()
    for i in range(1, 8):
        want = filtering.filter_rows(s, table, rows).passed
        got = affinity_mask(carried, counts)[rows]
        assert got.tolist() == want.tolist(), i
        if not got.any():
            return
        host = int(rng.choice(rows[got]))
        cache.assume_pod(pod, str(table.names[host]))  # type: ignore[arg-type]
        for j in range(len(carried.kinds)):
            if carried.codes[j, host] >= 0:
                counts[j, carried.codes[j, host]] += carried.delta[j]
        pod, s = prefilter(f"p{i}")
        assert s is not None
