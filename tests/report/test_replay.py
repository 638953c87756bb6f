"""The array replay of the placement log (``report.replay``) and the per-node matrices give
exactly what the per-entry and per-node loops they replaced gave: those loops are kept
here, verbatim, as the reference, and both are run on generated runs (binds, unbinds,
re-binds to the same and to another node, entries sharing an instant, pods on unknown
nodes, extended resources, nodes sharing a pool's resource map)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cluster_sched.api.objects import CPU, MEMORY, PODS, Pod
from cluster_sched.report.quality import RESOURCES, node_usage, resources_of
from cluster_sched.report.record import RunRecord, record_of, zone_of
from cluster_sched.report.series import (
    _utilisation,
    bound_over_time,
    left_over_time,
    nodes_in_use,
    run_start,
)
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.testing import make_node, make_pod

GPU = "nvidia.com/gpu"

# --- the reference: the loops as they were (c0098b9), unchanged ----------------------


def last_per_time(t: np.ndarray) -> np.ndarray:
    if len(t) == 0:
        return np.zeros(0, dtype=np.int64)
    keep = np.ones(len(t), dtype=bool)
    keep[:-1] = t[1:] != t[:-1]
    return np.flatnonzero(keep)


def ref_utilisation(record, t0, resources):  # type: ignore[no-untyped-def]
    log = record.stats.placement_log
    ext = resources[len(RESOURCES) :]
    k = len(resources)
    if not log:
        return np.zeros(0), np.zeros((0, k)), np.zeros((0, len(ext)))
    total = np.zeros(k, dtype=np.float64)
    capacity: dict[str, list[int]] = {}
    for n in record.nodes:
        total += tuple(n.allocatable.get(r, 0) for r in resources)
        capacity[n.name] = [n.allocatable.get(r, 0) for r in ext]
    extended = record.stats.extended_requests
    allocated: dict[str, list[int]] = {name: [0] * len(ext) for name in capacity}
    fragmented = [0] * len(ext)

    def move(node, amounts, sign):  # type: ignore[no-untyped-def]
        cap, alloc = capacity.get(node), allocated.get(node)
        if cap is None or alloc is None:
            return
        for e, amount in enumerate(amounts):
            if amount:
                before = alloc[e]
                alloc[e] = before + sign * amount
                fragmented[e] -= cap[e] - before if 0 < before < cap[e] else 0
                fragmented[e] += cap[e] - alloc[e] if 0 < alloc[e] < cap[e] else 0

    held: dict = {}
    times = np.empty(len(log), dtype=np.float64)
    deltas = np.zeros((len(log), k), dtype=np.float64)
    frag = np.zeros((len(log), len(ext)), dtype=np.float64)
    for i, (now, key, node_name, cpu, memory) in enumerate(sorted(log, key=lambda e: e[0])):
        times[i] = now - t0
        previous = held.pop(key, None)
        if previous is not None:
            deltas[i] -= previous[1]
            if ext:
                move(previous[0], list(previous[1][len(RESOURCES) :]), -1)
        if node_name:
            req = extended.get(key) or {}
            row = (cpu, memory, 1, *(req.get(r, 0) for r in ext))
            held[key] = (node_name, row)
            deltas[i] += row
            if ext:
                move(node_name, list(row[len(RESOURCES) :]), 1)
        if ext:
            frag[i] = fragmented
    used = np.cumsum(deltas, axis=0)
    safe = np.where(total > 0, total, 1.0)
    ext_total = safe[len(RESOURCES) :]
    keep = last_per_time(times)
    return times[keep], np.where(total > 0, used / safe, 0.0)[keep], (frag / ext_total)[keep]


def ref_run_start(record):  # type: ignore[no-untyped-def]
    stats = record.stats
    starts = list(stats.enqueued_at.values())
    if stats.first_pop is not None:
        starts.append(stats.first_pop)
    if stats.placement_log:
        starts.append(min(e[0] for e in stats.placement_log))
    return min(starts) if starts else 0.0


def ref_nodes_in_use(record):  # type: ignore[no-untyped-def]
    log = sorted(record.stats.placement_log, key=lambda e: e[0])
    if not log:
        return np.zeros(0), np.zeros(0)
    t0 = ref_run_start(record)
    held: dict[str, str] = {}
    per_node: dict[str, int] = {}
    used = 0
    times = np.empty(len(log), dtype=np.float64)
    values = np.empty(len(log), dtype=np.float64)
    for i, (now, key, node_name, _cpu, _mem) in enumerate(log):
        previous = held.pop(key, None)
        if previous is not None:
            per_node[previous] -= 1
            used -= per_node[previous] == 0
        if node_name:
            held[key] = node_name
            per_node[node_name] = per_node.get(node_name, 0) + 1
            used += per_node[node_name] == 1
        times[i] = now - t0
        values[i] = used
    keep = last_per_time(times)
    return times[keep], values[keep]


def ref_left_over_time(record):  # type: ignore[no-untyped-def]
    log = sorted(record.stats.placement_log, key=lambda e: e[0])
    t0 = ref_run_start(record)
    t = np.asarray([e[0] - t0 for e in log if not e[2]], dtype=np.float64)
    if len(t) == 0:
        return np.zeros(0), np.zeros(0)
    v = np.arange(1, len(t) + 1, dtype=np.float64)
    keep = last_per_time(t)
    return t[keep], v[keep]


def ref_bound_over_time(record):  # type: ignore[no-untyped-def]
    log = sorted(record.stats.placement_log, key=lambda e: e[0])
    if not log:
        return np.zeros(0), np.zeros(0)
    t0 = ref_run_start(record)
    held: set[str] = set()
    times = np.empty(len(log), dtype=np.float64)
    values = np.empty(len(log), dtype=np.float64)
    for i, (now, key, node_name, _cpu, _mem) in enumerate(log):
        if node_name:
            held.add(key)
        else:
            held.discard(key)
        times[i] = now - t0
        values[i] = len(held)
    keep = last_per_time(times)
    return times[keep], values[keep]


def ref_extended_resources(record):  # type: ignore[no-untyped-def]
    offered = {r for n in record.nodes for r, v in n.allocatable.items() if "/" in r and v > 0}
    asked = {r for req in record.stats.extended_requests.values() for r in req}
    asked.update(r for p in record.pods for r in p.requests if "/" in r)
    return tuple(sorted(asked & offered))


def ref_node_usage(record):  # type: ignore[no-untyped-def]
    resources = RESOURCES + ref_extended_resources(record)
    index = {node.name: i for i, node in enumerate(record.nodes)}
    allocatable = np.array(
        [[n.allocatable.get(r, 0) for r in resources] for n in record.nodes], dtype=np.int64
    ).reshape(len(record.nodes), len(resources))
    rows, amounts = [], []
    for pod in record.bound:
        row = index.get(pod.node_name)
        if row is not None:
            rows.append(row)
            amounts.append(tuple(1 if r == PODS else pod.requests.get(r, 0) for r in resources))
    requested = np.zeros_like(allocatable)
    if rows:
        np.add.at(requested, np.asarray(rows), np.asarray(amounts, dtype=np.int64))
    names = tuple(n.name for n in record.nodes)
    return names, tuple(zone_of(n) for n in record.nodes), allocatable, requested, resources


# --- generated runs ------------------------------------------------------------------


def generated(seed: int, gpus: bool) -> RunRecord:
    """Nodes of three pools (one resource map each, as the parser shares them) plus a
    node of its own; pods bound, unbound and re-bound at random, several per instant."""
    rng = random.Random(seed)
    pools = [
        {CPU: "4", MEMORY: "32Gi", PODS: "110"},
        {CPU: "7", MEMORY: "3000Mi", PODS: "5"},
        {CPU: "16", MEMORY: "64Gi", PODS: "110", **({GPU: "4"} if gpus else {})},
    ]
    node_list = []
    for i in range(40):
        node = make_node(f"n{i:02d}").allocatable(pools[i % 3])
        if i % 4:
            node = node.zone(f"z{i % 4}")
        node_list.append(node.obj())
    node_list.append(make_node("odd").allocatable(cpu="1", memory="1Gi", pods="3").obj())
    names = [n.name for n in node_list] + ["gone"]  # a node the record does not hold
    stats = RunStats()
    pods: list[Pod] = []
    bound_to: dict[str, str] = {}
    now = 1000.0
    for j in range(300):
        key = f"ns/p{rng.randrange(120)}"
        if rng.random() < 0.4:
            now += rng.choice((0.0, 0.5, 1.25))
        stats.on_enqueue(key, now - 1)
        stats.on_pop(key, now - 0.5)
        if key in bound_to and rng.random() < 0.35:
            stats.on_unbound(key, now)
            del bound_to[key]
            continue
        node = rng.choice(names) if rng.random() < 0.7 else bound_to.get(key, names[0])
        gpu = {GPU: rng.randrange(1, 3)} if gpus and rng.random() < 0.5 else None
        stats.on_bound(key, node, now, rng.choice((100, 250, 1000)), rng.randrange(1, 9) << 28, gpu)
        bound_to[key] = node
        del j
    for i in range(120):
        key = f"ns/p{i}"
        builder = make_pod(f"p{i}", namespace="ns").req(cpu="100m", memory="1Gi")
        if gpus and i % 5 == 0:
            builder = builder.req({GPU: 1})
        if key in bound_to:
            builder = builder.node(bound_to[key])
        pods.append(builder.obj())
    return record_of(node_list, pods, stats, {"all": tuple(p.key for p in pods)})


@pytest.mark.parametrize(("seed", "gpus"), [(1, False), (2, True), (3, True), (4, False)])
def test_the_array_replay_equals_the_loops(seed: int, gpus: bool) -> None:
    record = generated(seed, gpus)
    resources = resources_of(record)
    assert (GPU in resources) is gpus
    assert run_start(record) == ref_run_start(record)
    t0 = run_start(record)
    for got, want in zip(
        _utilisation(record, t0, resources), ref_utilisation(record, t0, resources), strict=True
    ):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()  # the same floats, bit for bit
    for new, ref in (
        (nodes_in_use, ref_nodes_in_use),
        (bound_over_time, ref_bound_over_time),
        (left_over_time, ref_left_over_time),
    ):
        (t, v), (rt, rv) = new(record), ref(record)
        assert t.tobytes() == rt.tobytes() and v.tobytes() == rv.tobytes(), new.__name__


@pytest.mark.parametrize(("seed", "gpus"), [(1, False), (2, True)])
def test_node_usage_equals_the_loop(seed: int, gpus: bool) -> None:
    record = generated(seed, gpus)
    usage = node_usage(record)
    names, zones, allocatable, requested, resources = ref_node_usage(record)
    assert usage.resources == resources
    assert usage.names == names and usage.zones == zones
    assert usage.allocatable.dtype == allocatable.dtype == usage.requested.dtype
    assert np.array_equal(usage.allocatable, allocatable)
    assert np.array_equal(usage.requested, requested)
    assert usage.requested[:, 2].sum() > 0


def test_an_empty_log_and_cluster() -> None:
    record = record_of([], [], RunStats())
    assert node_usage(record).allocatable.shape == (0, 3)
    for got, want in zip(
        _utilisation(record, 0.0, RESOURCES), ref_utilisation(record, 0.0, RESOURCES), strict=True
    ):
        assert got.shape == want.shape
