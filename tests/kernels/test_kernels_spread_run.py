"""A run carrying PodTopologySpread's DoNotSchedule counts (``kernels.spread``) against
the numpy reference (``run_reference`` with the verdict recomputed from the counts for
every pod): the same hosts, evaluated and feasible counts, tie sets and window starts,
the same draws left in the RNG; random constraints (codes with missing labels, domains
eligible or not, rows counted or not, minDomains above and below the domain count,
maxSkew, self match) over random tables."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.kernels.run import evaluate_run
from cluster_sched.kernels.run_reference import run_reference, spread_mask
from cluster_sched.kernels.spread import (
    SpreadRun,
    spread_assume,
    spread_groups,
    spread_limits,
    spread_run,
    spread_verdicts,
)
from cluster_sched.plugins.podtopologyspread import filtering
from cluster_sched.plugins.podtopologyspread.filtering import PreFilterState
from cluster_sched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY as SPREAD_KEY
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import make_controller
from tests.kernels.strategies import (
    EXAMPLES,
    pod_vectors,
    profiles,
    queries,
    tables,
    wide_tables,
)
from tests.scheduler.spread_specs import (
    NodeSpec,
    PodSpec,
    _node,
    _pod,
    node_specs,
    pod_specs,
)


@st.composite
def spread_runs(draw: st.DrawFn, cap: int) -> SpreadRun:
    k = draw(st.integers(1, 3))
    d = draw(st.integers(1, 6))
    codes = draw(hnp.arrays(np.int64, (k, cap), elements=st.integers(-1, d - 1)))
    counts = draw(hnp.arrays(np.int64, (k, d), elements=st.integers(0, 6)))
    domains = draw(hnp.arrays(np.uint8, (k, d), elements=st.integers(0, 1)))
    counted = draw(hnp.arrays(np.uint8, (k, cap), elements=st.integers(0, 1)))
    counted[codes < 0] = 0  # a counted row is eligible: it holds every key
    params = np.empty((k, 4), dtype=np.int64)
    for c in range(k):
        params[c] = (
            int(domains[c].sum()),
            draw(st.integers(1, d + 1)),
            draw(st.integers(1, 3)),
            draw(st.integers(0, 1)),
        )
    return SpreadRun(codes, counts, domains, counted, params)


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_spread_run_equals_reference(data: st.DataObject) -> None:
    table = data.draw(st.one_of(tables(), wide_tables()))
    profile = data.draw(profiles())
    query = data.draw(queries(table, profile))
    n = len(table.order())
    query = dataclasses.replace(query, start=data.draw(st.integers(0, 3 * n)))
    to_find = data.draw(st.integers(1, n + 3))
    count = data.draw(st.integers(1, 24))
    vector = data.draw(pod_vectors(table))
    spread = data.draw(spread_runs(table.allocatable.shape[1]))
    seed = data.draw(st.integers(0, 2**32))
    rng, ref_rng = random.Random(seed), random.Random(seed)
    counts = spread.counts.copy()
    masks = [m.copy() for m in query.masks]
    got = evaluate_run(table, profile, query, to_find, count, vector, rng, spread)
    want = run_reference(table, profile, query, to_find, count, vector, ref_rng, spread)
    for field in ("hosts", "evaluated", "found", "ties", "starts"):
        assert getattr(got, field).tolist() == getattr(want, field).tolist(), field
    assert rng.getstate() == ref_rng.getstate()
    # neither the caller's counts nor the shape's (cached) mask columns are written
    assert np.array_equal(spread.counts, counts)
    assert all(np.array_equal(a, b) for a, b in zip(query.masks, masks, strict=True))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_verdicts_kept_by_domain_equal_the_reference_after_each_assume(
    data: st.DataObject,
) -> None:
    """``spread_assume`` redoes only the rows of domains that crossed their limit: after
    every assume (hosts drawn anywhere, counted or not, limits moving up as the least
    eligible domain fills), the mask over the order's rows is ``spread_mask`` of the
    counts so far, and rows outside the order keep what they had."""
    cap = data.draw(st.integers(1, 40))
    spread = data.draw(spread_runs(cap))
    order = np.asarray(
        data.draw(st.permutations(range(cap)).map(lambda p: p[: max(1, len(p) - 2)])),
        dtype=np.int64,
    )
    counts = spread.counts.copy()
    limits = np.empty(len(spread.params), dtype=np.int64)
    spread_limits(counts, spread.domains, spread.params, limits)
    mask = np.full(cap, 7, dtype=np.uint8)  # rows outside the order: never written
    spread_verdicts(spread.codes, counts, limits, order, mask)
    passing, starts, members = spread_groups(spread.codes, counts, limits, order)
    outside = np.setdiff1d(np.arange(cap), order)
    for host in data.draw(st.lists(st.sampled_from(order.tolist()), max_size=30)):
        spread_assume(
            spread.codes, counts, spread.domains, spread.counted, spread.params, limits,
            passing, starts, members, host, mask,
        )  # fmt: skip
        want = spread_mask(dataclasses.replace(spread, counts=counts), counts)
        assert mask[order].astype(bool).tolist() == want[order].tolist()
        assert (mask[outside] == 7).all()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    nodes=st.lists(node_specs, min_size=2, max_size=9),
    spec=pod_specs,
    bound=st.lists(st.integers(0, 8), max_size=6),
    seed=st.integers(0, 2**16),
)
def test_spread_run_follows_the_plugins_prefilter_and_filter(
    nodes: list[NodeSpec], spec: PodSpec, bound: list[int], seed: int
) -> None:
    """``spread_run`` from a pod's real PreFilter state, then pods of its spec assumed
    one by one with the kernel's update rule (its host's domains count it): the verdict
    from the carried counts is, on every row, PodTopologySpread's own Filter after the
    plugin's fresh PreFilter for the next pod."""
    cache = Cache()
    cache.load([_node(i, n) for i, n in enumerate(nodes)])
    cache.set_controller(make_controller("ReplicaSet", "rs-a", {"app": "a"}))
    for j, b in enumerate(bound):
        cache.add_pod(_pod(f"b{j}", spec, f"n{b % len(nodes)}"))
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    table = cache.sink.table  # type: ignore[attr-defined]
    rng = random.Random(seed)

    def prefilter(name: str) -> tuple[Pod, PreFilterState | None]:
        pod = _pod(name, spec)
        state = CycleState()
        fwk.run_pre_filter(state, pod, cache.snapshot)
        s = state.get(SPREAD_KEY)
        return pod, s if isinstance(s, PreFilterState) else None

    pod, s = prefilter("p0")
    if s is None:
        return  # no DoNotSchedule constraint: nothing to carry
    carried = spread_run(s, pod, table)
    if carried is None:
        assert any(c.topology_key not in table.labels for c in s.constraints)
        return
    counts = carried.counts.copy()
    rows = table.order()
    for i in range(1, 8):
        want = filtering.filter_rows(s, table, rows).passed
        got = spread_mask(carried, counts)[rows]
        assert got.tolist() == want.tolist()
        if not got.any():
            return
        host = int(rng.choice(rows[got]))
        cache.assume_pod(pod, str(table.names[host]))
        for c in range(len(carried.params)):
            if carried.counted[c, host]:
                counts[c, carried.codes[c, host]] += 1
        pod, s = prefilter(f"p{i}")
        assert s is not None
