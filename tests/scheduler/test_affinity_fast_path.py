"""Pods with pod (anti-)affinity on the compiled path (shared PreFilter/PreScore of the
other plugins, InterPodAffinity's run again per pod, its Filter applied over the shape's
columns per pod and kept by pattern of positive domains) get exactly the placements of
the plain numpy path: random nodes (zones, racks, some missing), random required and
preferred terms, and pods bound, forgotten and removed between cycles."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.scheduler.algorithm import FitError, Scheduler
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import ZONE_LABEL
from tests.scheduler.affinity_specs import (
    AffinitySpec,
    TermSpec,
    affinity_pod,
    affinity_specs,
    cluster,
)

#: ("pod", spec) schedule and assume; ("bound", spec, node) a bound pod arrives;
#: ("forget", i) the i-th assumed pod is forgotten; ("remove", i) the i-th bound one leaves
events = st.one_of(
    st.tuples(st.just("pod"), st.integers(0, 2)),
    st.tuples(st.just("pod"), st.integers(0, 2)),
    st.tuples(st.just("pod"), st.integers(0, 2)),
    st.tuples(st.just("bound"), st.integers(0, 2), st.integers(0, 9)),
    st.tuples(st.just("forget"), st.integers(0, 20)),
    st.tuples(st.just("remove"), st.integers(0, 20)),
)


def run(
    fast: FastPath | None,
    n_nodes: int,
    layout: int,
    specs: list[AffinitySpec],
    steps: list[tuple[object, ...]],
) -> list[tuple[str | None, int, tuple[int, ...]]]:
    """Each attempt's (host or None, next start index, the feasible nodes' totals)."""
    cache = Cache()
    cache.load(cluster(n_nodes, layout))
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    sched = Scheduler(0, random.Random(7), fast=fast)
    table = cache.sink.table  # type: ignore[attr-defined]
    assumed: list[Pod] = []
    bound: list[Pod] = []
    out: list[tuple[str | None, int, tuple[int, ...]]] = []
    for i, step in enumerate(steps):
        what, which = step[0], int(step[1])  # type: ignore[call-overload]
        if what == "pod":
            pod = affinity_pod(f"p{i}", specs[which % len(specs)])
            try:
                result = sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
            except FitError:
                out.append((None, sched.next_start_node_index, ()))
                continue
            host = result.suggested_host
            assert host is not None
            cache.assume_pod(pod, host)
            assumed.append(pod)
            totals = () if result.total_scores is None else tuple(result.total_scores.tolist())
            out.append((host, sched.next_start_node_index, totals))
        elif what == "bound":
            node = f"n{int(step[2]) % n_nodes}"  # type: ignore[call-overload]
            pod = affinity_pod(f"b{i}", specs[which % len(specs)], node)
            cache.add_pod(pod)
            bound.append(pod)
        elif what == "forget" and assumed:
            cache.forget_pod(assumed.pop(which % len(assumed)))
        elif what == "remove" and bound:
            cache.remove_pod(bound.pop(which % len(bound)))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    n_nodes=st.integers(2, 10),
    layout=st.integers(0, 2**16),
    specs=st.lists(affinity_specs, min_size=1, max_size=3),
    steps=st.lists(events, min_size=4, max_size=30),
)
def test_affinity_pods_place_as_on_the_numpy_path(
    n_nodes: int, layout: int, specs: list[AffinitySpec], steps: list[tuple[object, ...]]
) -> None:
    expected = run(None, n_nodes, layout, specs, steps)
    assert run(FastPath(share_pre_cycle=True), n_nodes, layout, specs, steps) == expected


def test_a_self_affine_deployment_keeps_its_verdicts_by_pattern() -> None:
    """scheduler_perf's SchedulingPodAffinity in small: after the first pod, every pod
    takes the shape's columns and its InterPodAffinity verdict from the pattern kept
    (one zone holds the pods: the counts grow, the positive domains stay), and they all
    land in the first pod's zone, as on the numpy path."""
    spec = AffinitySpec("a", (TermSpec("affinity", ZONE_LABEL, "a"),))
    steps: list[tuple[object, ...]] = [("pod", 0)] * 12
    fast = FastPath(share_pre_cycle=True)
    placed = run(fast, 10, 3, [spec], steps)
    assert placed == run(None, 10, 3, [spec], steps)
    assert fast.shape_hits == 11 and fast.shape_misses == 1
    zones = {n.labels.get(ZONE_LABEL) for n in cluster(10, 3) if n.name in {p[0] for p in placed}}
    assert len(zones) == 1 and None not in zones
