"""The over-time series replayed from RunStats: binds add a pod's requests, a pod leaving
its node takes them back, a re-bind moves them; pending pods fall as pods bind."""

from __future__ import annotations

import numpy as np

from cluster_sched.report.record import build_record
from cluster_sched.report.series import run_series, time_weighted
from cluster_sched.scheduler.stats import RunStats

NODES = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{i}"},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}},
    }
    for i in (1, 2)
]
GI = 2**30


def test_utilisation_replays_binds_unbinds_and_rebinds() -> None:
    stats = RunStats()
    for key in ("ns/a", "ns/b"):
        stats.on_enqueue(key, 100.0)
        stats.on_pop(key, 100.5)
    stats.on_bound("ns/a", "n1", 101.0, cpu=1000, memory=GI)
    stats.on_bound("ns/b", "n2", 102.0, cpu=2000, memory=2 * GI)
    stats.on_unbound("ns/a", 103.0)  # preempted or deleted
    stats.on_bound("ns/b", "n1", 104.0, cpu=2000, memory=2 * GI)  # seen bound again
    stats.on_unbound("ns/never-bound", 105.0)  # leaves no trace
    series = run_series(build_record(NODES, [], stats))

    assert series.utilisation_t.tolist() == [1.0, 2.0, 3.0, 4.0]
    cpu = series.utilisation[:, 0]
    assert np.allclose(cpu, [0.25, 0.75, 0.5, 0.5])
    assert np.allclose(series.utilisation[:, 1], [0.125, 0.375, 0.25, 0.25])
    assert np.allclose(series.utilisation[:, 2], [0.05, 0.1, 0.05, 0.05])
    # pending: both queued at t=0 (one step: what holds after the instant), a bound
    # at 1, b's last bind at 4
    assert series.pending_t.tolist() == [0.0, 1.0, 4.0]
    assert series.pending.tolist() == [2.0, 1.0, 0.0]
    assert series.spans_time


def test_empty_run_has_no_time_span() -> None:
    series = run_series(build_record(NODES, [], RunStats()))
    assert not series.spans_time
    _starts, rate, width = series.throughput()
    assert len(rate) == 0 and width == 0.0


def test_nodes_in_use_and_time_weighted_means() -> None:
    from cluster_sched.report.series import nodes_in_use, time_weighted

    stats = RunStats()
    for key in ("ns/a", "ns/b", "ns/c"):
        stats.on_enqueue(key, 100.0)
    stats.on_bound("ns/a", "n1", 100.0)
    stats.on_bound("ns/b", "n1", 102.0)  # same node: still one in use
    stats.on_bound("ns/c", "n2", 104.0)
    stats.on_unbound("ns/a", 106.0)
    stats.on_unbound("ns/c", 108.0)
    stats.on_unbound("ns/b", 110.0)
    t, used = nodes_in_use(build_record(NODES, [], stats))
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert used.tolist() == [1, 1, 2, 2, 1, 0]
    mean, peak = time_weighted(t, used)
    assert float(mean) == (1 * 4 + 2 * 4 + 1 * 2) / 10 and float(peak) == 2
    two = np.column_stack([used, used * 2])
    mean2, _ = time_weighted(t, two)
    assert mean2.tolist() == [1.4, 2.8]


def test_a_pod_bound_the_instant_it_arrives_was_never_pending() -> None:
    # virtual time: scheduling takes no simulated time, so arrival and bind coincide
    stats = RunStats()
    stats.on_enqueue("ns/a", 100.0)
    stats.on_pop("ns/a", 100.0)
    stats.on_bound("ns/a", "n1", 100.0, cpu=1000, memory=GI)
    stats.on_enqueue("ns/b", 160.0)
    stats.on_pop("ns/b", 160.0)
    stats.on_bound("ns/b", "n2", 160.0, cpu=1000, memory=GI)
    series = run_series(build_record(NODES, [], stats))
    assert series.pending.tolist() == [0.0, 0.0]
    assert time_weighted(series.pending_t, series.pending)[1] == 0.0
