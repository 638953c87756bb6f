"""The batched dry run answers exactly what the node-by-node SelectVictimsOnNode does:
per node (victims, order, PDB violations, status) and end to end (the chosen node and
victims), on random clusters with priorities, start times, PDBs, host ports, taints and
nominated pods."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FitError
from cluster_sched.plugins.defaultpreemption import plugin as dp
from cluster_sched.plugins.defaultpreemption.batch import (
    nodes_independent,
    select_victims_on_nodes,
)
from cluster_sched.plugins.defaultpreemption.victims import select_victims_on_node
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.testing.builders import make_namespace, make_node, make_pdb, make_pod


def _cluster(seed: int) -> tuple[list[Any], Pod, dict[str, list[Pod]]]:
    rng = random.Random(seed)
    objs: list[Any] = [make_namespace("default")]
    n_nodes = rng.randint(3, 25)
    for i in range(n_nodes):
        b = make_node(f"n{i}").capacity(cpu=str(rng.choice([2, 4])), memory="8Gi", pods=110)
        if rng.random() < 0.1:
            b = b.taint("dedicated", "x")
        objs.append(b.obj())
    k = 0
    for i in range(n_nodes):
        for _ in range(rng.randint(1, 9)):
            b = (
                make_pod(f"r{k}")
                .req(cpu=f"{rng.choice([300, 500, 900])}m", memory="100Mi")
                .priority(rng.choice([0, 1, 5, 10, 50, 200]))
                .node(f"n{i}")
                .phase("Running")
                .label("app", rng.choice(["db", "web", "cache"]))
            )
            if rng.random() < 0.7:
                b = b.start_time(float(rng.randint(0, 100)))
            if rng.random() < 0.1:
                b = b.host_port(8080)
            objs.append(b.obj())
            k += 1
    if rng.random() < 0.7:
        objs.append(make_pdb("db", {"app": "db"}, disruptions_allowed=rng.randint(0, 2)))
    if rng.random() < 0.5:
        objs.append(make_pdb("web", {"app": "web"}, disruptions_allowed=rng.randint(0, 1)))
    pb = make_pod("p").req(cpu=f"{rng.choice([1500, 2500, 3500])}m").priority(100)
    if rng.random() < 0.3:
        pb = pb.host_port(8080)
    nominated: dict[str, list[Pod]] = {}
    for i in range(n_nodes):
        if rng.random() < 0.3:
            nominated[f"n{i}"] = [
                make_pod(f"nom{i}-{j}")
                .req(cpu=f"{rng.choice([200, 600])}m")
                .priority(rng.choice([50, 100, 300]))
                .obj()
                for j in range(rng.randint(1, 2))
            ]
    return objs, pb.obj(), nominated


def _setup(seed: int) -> tuple[Any, CycleState, Pod, Cache, Any, dict[str, list[Pod]]]:
    objs, pod, nominated = _cluster(seed)
    cache = Cache()
    cache.load(objs)
    fwk = build_framework(default_config(), pod, cache, seed=seed)
    fwk.handle.nominated_pods = nominated
    state = CycleState()
    table = cache.sink.table  # type: ignore[attr-defined]
    _, s, _ = fwk.run_pre_filter(state, pod, cache.snapshot)
    assert s.is_success
    return fwk, state, pod, cache, table, nominated


def _key(res: Any) -> Any:
    victims, status = res
    pods = None if victims is None else [p.key for p in victims.pods]
    return pods, None if victims is None else victims.num_pdb_violations, status


@pytest.mark.parametrize("seed", range(40))
def test_batch_equals_node_by_node(seed: int) -> None:
    fwk, state, pod, cache, table, nominated = _setup(seed)
    assert nodes_independent(fwk, state)
    pdbs = list(cache.pdbs.values())
    rows = table.order()
    want = [
        _key(
            select_victims_on_node(
                fwk, state.clone(), pod, table, r, pdbs, nominated.get(table.names[r], ())
            )
        )
        for r in rows.tolist()
    ]
    got = [_key(x) for x in select_victims_on_nodes(fwk, state, pod, table, rows, pdbs, nominated)]
    assert got == want


@pytest.mark.parametrize("absolute", [100, 1, 2, 3])
@pytest.mark.parametrize("seed", range(40))
def test_candidates_equal_with_and_without_batching(
    seed: int, absolute: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With few candidates wanted the search stops part-way through a window."""

    def run() -> Any:
        fwk, _, pod, cache, table, _ = _setup(seed)
        pl = fwk.plugins["DefaultPreemption"]
        pl.args = dataclasses.replace(
            pl.args, min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=absolute
        )
        try:
            Scheduler(0, random.Random(seed)).schedule_pod(
                fwk, CycleState(), pod, table, cache.snapshot
            )
        except FitError as err:
            st = CycleState()
            fwk.run_pre_filter(st, pod, cache.snapshot)
            return fwk.run_post_filter(st, pod, err.diagnosis.node_to_status)
        return None  # the pod fits somewhere: no PostFilter

    batched = run()
    monkeypatch.setattr(dp, "nodes_independent", lambda fwk, state: False)
    assert run() == batched


def test_pods_with_spread_constraints_are_not_batched() -> None:
    pod = make_pod("p").req(cpu="1").priority(100).label("a", "b")
    pod = pod.spread(1, "kubernetes.io/hostname", "DoNotSchedule", {"a": "b"}).obj()
    cache = Cache()
    cache.load([make_namespace("default"), make_node("n0").capacity(cpu="1").obj()])
    fwk = build_framework(default_config(), pod, cache, seed=1)
    state = CycleState()
    fwk.run_pre_filter(state, pod, cache.snapshot)
    assert not nodes_independent(fwk, state)
