"""Nominated pods in Filter: the first pass (nominated pods of equal or higher priority
added) run for all such nodes at once gives each node the Status the node-by-node
RunFilterPluginsWithNominatedPods gives, and the diagnosis built in bulk reads as the
one built status by status."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import Diagnosis, FitError, fit_error_message, node_codes
from cluster_sched.framework.status import Status
from cluster_sched.scheduler import nominated_filter
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.scheduler.nodesource import LocalSource
from cluster_sched.testing.builders import make_namespace, make_node, make_pod


def _setup(seed: int, big: bool = False) -> tuple[Any, Pod, Cache, dict[str, list[Pod]]]:
    rng = random.Random(seed)
    objs: list[Any] = [make_namespace("default")]
    n = rng.randint(5, 40)
    for i in range(n):
        b = make_node(f"n{i}").capacity(cpu=str(rng.choice([1, 2, 4])), memory="4Gi", pods=110)
        if rng.random() < 0.1:
            b = b.taint("dedicated", "x")
        objs.append(b.obj())
        for j in range(rng.randint(0, 3)):
            objs.append(
                make_pod(f"r{i}-{j}")
                .req(cpu=f"{rng.choice([200, 500, 900])}m", memory="100Mi")
                .node(f"n{i}")
                .obj()
            )
    cpu = rng.choice(["3500m", "5"] if big else ["300m", "1500m", "3500m"])
    pod = make_pod("p").uid("uid-p").req(cpu=cpu).priority(10)
    if rng.random() < 0.5:
        pod = pod.host_port(80)
    nominated: dict[str, list[Pod]] = {}
    for i in range(n):
        if rng.random() < 0.4:
            b = make_pod(f"nom{i}").uid(f"uid-nom{i}").req(cpu=f"{rng.choice([300, 700])}m")
            if rng.random() < 0.5:
                b = b.host_port(80)
            nominated[f"n{i}"] = [b.priority(rng.choice([5, 10, 20])).obj()]
    cache = Cache()
    cache.load(objs)
    return (
        build_framework(default_config(), pod.obj(), cache, seed=seed),
        pod.obj(),
        cache,
        nominated,
    )


def _statuses(seed: int) -> list[Status]:
    fwk, pod, cache, nominated = _setup(seed)
    table = cache.sink.table  # type: ignore[attr-defined]
    state = CycleState()
    fwk.run_pre_filter(state, pod, cache.snapshot)
    rows = table.order()
    _, verdicts = Scheduler()._filter_rows(
        fwk, state, pod, table, rows, nominated, LocalSource(table)
    )
    return [verdicts(i) for i in range(len(rows))]


@pytest.mark.parametrize("seed", range(30))
def test_first_pass_in_bulk_equals_node_by_node(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    bulk = _statuses(seed)
    monkeypatch.setattr(nominated_filter, "nodes_independent", lambda fwk, state: False)
    assert _statuses(seed) == bulk


@pytest.mark.parametrize("seed", range(30))
def test_bulk_diagnosis_reads_like_status_by_status(seed: int) -> None:
    fwk, pod, cache, nominated = _setup(seed, big=True)
    table = cache.sink.table  # type: ignore[attr-defined]
    try:
        Scheduler(0, random.Random(seed)).schedule_pod(
            fwk, CycleState(), pod, table, cache.snapshot, nominated=nominated
        )
        return
    except FitError as err:
        diagnosis = err.diagnosis
        num_all = err.num_all_nodes
    statuses = diagnosis.node_to_status.statuses
    # Read the bulk form before anything materialises it.
    message = fit_error_message(num_all, diagnosis)
    count = len(statuses)
    codes = [node_codes(diagnosis.node_to_status, table, absent) for absent in (2, 3)]
    names = table.name_array()[table.order()].tolist()
    one_by_one = [statuses.get(name) for name in names]
    plain = Diagnosis()
    plain.node_to_status.statuses = {}
    plain.node_to_status.absent_status = diagnosis.node_to_status.absent_status
    for name, st in list(statuses.items()):
        plain.add_status(name, st)
    assert message == fit_error_message(num_all, plain)
    assert plain.unschedulable_plugins == diagnosis.unschedulable_plugins
    assert count == len(plain.node_to_status.statuses)
    for absent, got in zip((2, 3), codes, strict=True):
        assert np.array_equal(got, node_codes(plain.node_to_status, table, absent))
    assert one_by_one == [plain.node_to_status.statuses.get(name) for name in names]
