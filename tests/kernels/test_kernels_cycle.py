"""The kernel driven as the cycle will drive it reproduces Scheduler.schedule_pod: same
feasible nodes, evaluated count (next start index), total scores and chosen host for
the same RNG seed, pod after pod as the cluster fills up. The profile has
NodeResourcesFit, BalancedAllocation and TaintToleration (Filter as a mask column, Score
as a reverse DefaultNormalizeScore column)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FitError
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.kernels import (
    KernelProfile,
    NormalizedScore,
    PodQuery,
    PodRequests,
    evaluate_pod,
)
from cluster_sched.plugins import names
from cluster_sched.scheduler.algorithm import Scheduler, num_feasible_nodes_to_find
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import make_node, make_pod

PLUGINS = (
    names.NODE_RESOURCES_FIT,
    names.NODE_RESOURCES_BALANCED_ALLOCATION,
    names.TAINT_TOLERATION,
)


def _framework(cache: Cache, plugins: tuple[str, ...] = PLUGINS) -> Framework:
    enabled = [{"name": "PrioritySort"}, {"name": "DefaultBinder"}, *({"name": n} for n in plugins)]
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}},
            }
        ],
    }
    return new_framework(parse_config(doc).profiles[0], Handle(snapshot=cache.snapshot))


def _cluster(rng: random.Random, n: int) -> Cache:
    nodes = []
    for i in range(n):
        b = (
            make_node(f"n{i:03d}")
            .zone(f"z{i % 3}")
            .capacity(cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([4, 8, 16])}Gi", pods=20)
        )
        if i % 7 == 3:
            b = b.taint("dedicated", "db", "NoSchedule")
        if i % 5 == 1:
            b = b.taint("spot", "", "PreferNoSchedule")
        nodes.append(b.obj())
    cache = Cache()
    cache.load(nodes)
    return cache


def _query(fwk: Framework, table, pod, profile: KernelProfile, start: int) -> PodQuery:  # type: ignore[no-untyped-def]
    """Masks and columns as the integration computes them: the taint plugin's own
    Filter and Score over every row."""
    taint = fwk.plugins[names.TAINT_TOLERATION]
    every = NodeSlice(table, np.arange(table.size, dtype=np.int64), prefix=True)
    state = CycleState()
    taint.pre_score(state, pod, None, None)
    return PodQuery(
        PodRequests.of_pod(pod, profile),
        start,
        masks=(taint.filter(state, pod, every).codes == 0,),
        normalized=(
            NormalizedScore(
                taint.score(state, pod, every), True, fwk.score_weights[names.TAINT_TOLERATION]
            ),
        ),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_reproduces_schedule_pod(seed: int) -> None:
    rng = random.Random(seed)
    cache = _cluster(rng, 130)  # > 100 nodes: numFeasibleNodesToFind stops early
    table = cache.sink.table  # type: ignore[attr-defined]
    fwk = _framework(cache)
    profile = KernelProfile.from_framework(fwk)
    assert profile is not None and profile.balanced is not None
    sched = Scheduler(0, random.Random(seed))
    kernel_rng = random.Random(seed)
    start = 0
    placed = 0
    for i in range(400):  # until the cluster is full
        b = make_pod(f"p{i}").req(
            cpu=f"{rng.choice([500, 1500, 3000])}m", memory=f"{rng.choice([128, 1024, 4096])}Mi"
        )
        if i % 4 == 0:
            b = b.tolerate("dedicated", "Equal", "db", "NoSchedule")
        if i % 9 == 0:
            b = b.tolerate("spot", effect="PreferNoSchedule")
        pod = b.obj()
        query = _query(fwk, table, pod, profile, start)
        to_find = num_feasible_nodes_to_find(0, table.n_nodes)
        ev = evaluate_pod(table, profile, query, to_find)
        try:
            result = sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
        except FitError:
            assert len(ev.feasible_rows) == 0
            start = (start + ev.evaluated) % table.n_nodes
            assert start == sched.next_start_node_index
            continue
        assert [table.names[r] for r in ev.feasible_rows] == result.feasible_nodes
        assert ev.evaluated == result.evaluated_nodes
        if result.total_scores is not None:
            assert ev.totals.tolist() == result.total_scores.tolist()
        host = table.names[ev.select_row(kernel_rng)]
        assert host == result.suggested_host
        start = (start + ev.evaluated) % table.n_nodes
        assert start == sched.next_start_node_index
        cache.assume_pod(pod, host)
        placed += 1
    assert 100 < placed < 400  # the cluster filled up along the way


def test_profile_without_fit_filter_declines() -> None:
    fwk = _framework(Cache(), (names.TAINT_TOLERATION, names.NODE_RESOURCES_BALANCED_ALLOCATION))
    assert KernelProfile.from_framework(fwk) is None


def test_profile_weights_come_from_the_framework() -> None:
    fwk = _framework(Cache(), (names.NODE_RESOURCES_FIT,))
    profile = KernelProfile.from_framework(fwk)
    assert profile is not None
    assert (profile.balanced, profile.balanced_weight) == (None, 0)
    assert profile.fit_weight == fwk.score_weights[names.NODE_RESOURCES_FIT]


def test_added_scores_redo_best_and_ties() -> None:
    """PodTopologySpread / InterPodAffinity scores added after the kernel move the best."""
    cache = _cluster(random.Random(0), 4)
    table = cache.sink.table  # type: ignore[attr-defined]
    profile = KernelProfile.from_framework(_framework(cache))
    assert profile is not None
    pod = make_pod("p").req(cpu="100m").tolerate("dedicated", "Equal", "db", "NoSchedule").obj()
    ev = evaluate_pod(table, profile, PodQuery(PodRequests.of_pod(pod, profile)), 4)
    assert len(ev.feasible_rows) == 4
    bonus = np.zeros(4, dtype=np.int64)
    bonus[2] = 1000
    moved = ev.add_scores(bonus)
    assert moved.best == int(ev.totals[2]) + 1000
    assert moved.ties.tolist() == [2]
    assert moved.select_row(random.Random(0)) == int(ev.feasible_rows[2])
