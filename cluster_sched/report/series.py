"""The run over time and the distributions the charts draw, from RunStats' timestamps.

Times are seconds since the run's first recorded event (the earliest enqueue, pop or
bind), on the scheduler's clock. All arrays are float64.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cluster_sched.report.quality import RESOURCES, NodeUsage, resources_of
from cluster_sched.report.record import RunRecord, zone_of
from cluster_sched.report.replay import (
    SortedLog,
    allocatable_matrix,
    in_use_steps,
    running_steps,
    sorted_log,
)

__all__ = [
    "RunSeries",
    "bound_over_time",
    "left_over_time",
    "nodes_in_use",
    "over_time_figures",
    "run_series",
    "run_start",
    "time_unit",
    "time_weighted",
    "usage_at_peak",
]

#: Bins of the throughput chart (fewer when the run has fewer distinct bind times).
THROUGHPUT_BINS = 60


@dataclass(frozen=True, slots=True)
class RunSeries:
    #: seconds (relative) at which each pod the scheduler placed was seen bound, sorted
    bind_times: np.ndarray
    #: milliseconds from queued to bound, one per pod the scheduler placed, sorted
    latency_ms: np.ndarray
    #: milliseconds of each scheduling attempt
    attempt_ms: np.ndarray
    #: pending pods (queued, not yet bound) as a step function: times and values
    pending_t: np.ndarray
    pending: np.ndarray
    #: cluster utilisation (bound requests / total allocatable) as a step function:
    #: times, and float64[n_times, n_resources] in ``resources`` order
    utilisation_t: np.ndarray
    utilisation: np.ndarray
    #: the utilisation's columns: cpu, memory, pods, then the extended resources
    resources: tuple[str, ...] = RESOURCES
    #: per extended resource (``resources[3:]``), float64[n_times, n_extended] on
    #: ``utilisation_t``: the unallocated amount on nodes where some of it is allocated
    #: (a GPU-share trace's fragmentation), as a share of the cluster's capacity
    fragmentation: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def spans_time(self) -> bool:
        """The run has at least two distinct moments, so charts over time mean something."""
        return len(self.pending_t) >= 2 and float(self.pending_t[-1] - self.pending_t[0]) > 0

    def throughput(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Bin starts, pods bound per second in each bin, and the bin width (seconds)."""
        if len(self.bind_times) == 0:
            return np.zeros(0), np.zeros(0), 0.0
        end = float(self.bind_times[-1])
        if end <= 0:
            return np.zeros(1), np.array([float(len(self.bind_times))]), 1.0
        bins = max(1, min(THROUGHPUT_BINS, len(self.bind_times)))
        counts, edges = np.histogram(self.bind_times, bins=bins, range=(0.0, end))
        width = float(edges[1] - edges[0])
        return edges[:-1], counts / width, width


def last_per_time(t: np.ndarray) -> np.ndarray:
    """Indices of the last entry at each distinct time of sorted ``t``: what a step
    function holds after an instant. A pod that arrives and is bound at one simulated
    instant was never pending for any time, and draws no spike."""
    if len(t) == 0:
        return np.zeros(0, dtype=np.int64)
    keep = np.ones(len(t), dtype=bool)
    keep[:-1] = t[1:] != t[:-1]
    return np.flatnonzero(keep)


def _steps(times: list[float], deltas: list[int]) -> tuple[np.ndarray, np.ndarray]:
    if not times:
        return np.zeros(0), np.zeros(0)
    t = np.asarray(times, dtype=np.float64)
    d = np.asarray(deltas, dtype=np.float64)
    order = np.argsort(t, kind="stable")
    t, v = t[order], np.cumsum(d[order])
    keep = last_per_time(t)
    return t[keep], v[keep]


def _utilisation(
    record: RunRecord, t0: float, resources: tuple[str, ...], log: SortedLog | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replay the placement log: each bind adds the pod's requests, each unbind (or a
    re-bind of the same pod) takes back what its last bind added (``report.replay``).
    Extended resources also track each node's allocated amount, for the fragmentation
    on partly used nodes (a loop over the entries: only runs that have them pay it)."""
    log = log if log is not None else sorted_log(record.stats)
    ext = resources[len(RESOURCES) :]
    k = len(resources)
    n = len(log)
    if not n:
        return np.zeros(0), np.zeros((0, k)), np.zeros((0, len(ext)))
    alloc = allocatable_matrix(record.nodes, resources)
    # summed node by node in float64, as the figures always were (cumsum adds in order)
    total = np.cumsum(alloc.astype(np.float64), axis=0)[-1] if len(alloc) else np.zeros(k)
    rows = np.zeros((n, k), dtype=np.float64)
    bind = log.bind
    rows[bind, 0] = log.cpu[bind]
    rows[bind, 1] = log.memory[bind]
    rows[bind, 2] = 1
    ext_rows: list[list[int]] = []
    if ext:
        extended = record.stats.extended_requests
        ext_rows = [[(extended.get(key) or {}).get(r, 0) for r in ext] for key in log.keys]
        rows[bind, len(RESOURCES) :] = np.asarray(ext_rows, dtype=np.float64)[bind]
    undoes = log.undoes
    undo = undoes >= 0
    deltas = np.zeros((n, k), dtype=np.float64)
    deltas[undo] -= rows[undoes[undo]]
    deltas[bind] += rows[bind]
    frag = (
        _fragmentation(record, log, ext, alloc[:, len(RESOURCES) :], ext_rows)
        if ext
        else np.zeros((n, 0), dtype=np.float64)
    )
    times = log.times - t0
    used = np.cumsum(deltas, axis=0)
    safe = np.where(total > 0, total, 1.0)
    ext_total = safe[len(RESOURCES) :]
    keep = last_per_time(times)
    return times[keep], np.where(total > 0, used / safe, 0.0)[keep], (frag / ext_total)[keep]


def _fragmentation(
    record: RunRecord,
    log: SortedLog,
    ext: tuple[str, ...],
    capacity_rows: np.ndarray,
    ext_rows: list[list[int]],
) -> np.ndarray:
    """float64[n, len(ext)]: after each entry, the unallocated amount of each extended
    resource on the nodes where some of it is allocated (pods on unknown nodes skipped)."""
    capacity = {n.name: capacity_rows[i].tolist() for i, n in enumerate(record.nodes)}
    allocated: dict[str, list[int]] = {name: [0] * len(ext) for name in capacity}
    fragmented = [0] * len(ext)

    def move(node: str, amounts: list[int], sign: int) -> None:
        cap, alloc = capacity.get(node), allocated.get(node)
        if cap is None or alloc is None:
            return
        for e, amount in enumerate(amounts):
            if amount:
                before = alloc[e]
                alloc[e] = before + sign * amount
                fragmented[e] -= cap[e] - before if 0 < before < cap[e] else 0
                fragmented[e] += cap[e] - alloc[e] if 0 < alloc[e] < cap[e] else 0

    names = log.node_names()
    frag = np.zeros((len(log), len(ext)), dtype=np.float64)
    for i, (undone, bound) in enumerate(zip(log.undoes.tolist(), log.bind.tolist(), strict=True)):
        if undone >= 0:
            move(names[undone], ext_rows[undone], -1)
        if bound:
            move(names[i], ext_rows[i], 1)
        frag[i] = fragmented
    return frag


def run_start(record: RunRecord) -> float:
    """The run's first recorded moment (enqueue, pop or bind): time 0 of every series."""
    stats = record.stats
    starts = list(stats.enqueued_at.values())
    if stats.first_pop is not None:
        starts.append(stats.first_pop)
    if stats.placement_log:
        starts.append(float(stats.placement_log.columns().times.min()))
    return min(starts) if starts else 0.0


def run_series(record: RunRecord, log: SortedLog | None = None) -> RunSeries:
    """The series of ``record``; ``log``: its ``sorted_log``, if at hand."""
    stats = record.stats
    t0 = run_start(record)
    placed = [k for k in stats.bound_at if k in stats.attempts]
    bind_times = np.sort(np.asarray([stats.bound_at[k] - t0 for k in placed], dtype=np.float64))
    latency = np.sort(
        np.asarray(
            [stats.bound_at[k] - stats.enqueued_at[k] for k in placed if k in stats.enqueued_at],
            dtype=np.float64,
        )
        * 1e3
    )
    times: list[float] = []
    deltas: list[int] = []
    for key, at in stats.enqueued_at.items():
        times.append(at - t0)
        deltas.append(1)
        bound = stats.bound_at.get(key)
        if bound is not None and bound >= at:
            times.append(bound - t0)
            deltas.append(-1)
    pending_t, pending = _steps(times, deltas)
    resources = resources_of(record)
    util_t, util, frag = _utilisation(record, t0, resources, log)
    return RunSeries(
        bind_times=bind_times,
        latency_ms=latency,
        attempt_ms=np.asarray(stats.attempt_seconds, dtype=np.float64) * 1e3,
        pending_t=pending_t,
        pending=pending,
        utilisation_t=util_t,
        utilisation=util,
        resources=resources,
        fragmentation=frag,
    )


#: (longest span in seconds, unit, seconds per unit) for time axes, shortest first.
TIME_UNITS = ((300.0, "s", 1.0), (3 * 3600.0, "min", 60.0), (3 * 86400.0, "h", 3600.0))


def time_unit(span: float) -> tuple[str, float]:
    """The unit a time axis spanning ``span`` seconds reads best in, and its length in
    seconds: seconds up to 5 minutes, minutes up to 3 hours, hours up to 3 days, then
    days (a 149-day trace in days, not in seconds x 1e7)."""
    for longest, unit, seconds in TIME_UNITS:
        if span <= longest:
            return unit, seconds
    return "days", 86400.0


def time_weighted(t: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted mean and maximum of a step function (``values[i]`` holds from
    ``t[i]`` to ``t[i + 1]``) over ``[t[0], t[-1]]``: what a long virtual-time run's
    utilisation and backlog were on average. ``values`` is float64[n] or [n, k]."""
    v = np.asarray(values, dtype=np.float64)
    if len(t) == 0:
        return np.zeros(v.shape[1:]), np.zeros(v.shape[1:])
    peak = v.max(axis=0)
    if len(t) < 2 or float(t[-1] - t[0]) <= 0:
        return v[-1], peak
    dt = np.diff(t)
    weights = dt.reshape((-1,) + (1,) * (v.ndim - 1))
    return (v[:-1] * weights).sum(axis=0) / float(t[-1] - t[0]), peak


def nodes_in_use(record: RunRecord, log: SortedLog | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Nodes holding at least one placed pod, as a step function over the run (times
    relative to the run's start, as ``run_series``): how tightly a configuration packs
    a cluster whose pods come and go. ``log``: the record's ``sorted_log``, if at hand."""
    log = log if log is not None else sorted_log(record.stats)
    if not len(log):
        return np.zeros(0), np.zeros(0)
    times = log.times - run_start(record)
    keep = last_per_time(times)
    return times[keep], in_use_steps(log)[keep]


def left_over_time(record: RunRecord) -> tuple[np.ndarray, np.ndarray]:
    """Pods that left their node so far (completed, preempted or deleted), cumulative,
    as a step function over the run."""
    log = sorted_log(record.stats)
    t0 = run_start(record)
    t = log.times[~log.bind] - t0
    if len(t) == 0:
        return np.zeros(0), np.zeros(0)
    v = np.arange(1, len(t) + 1, dtype=np.float64)
    keep = last_per_time(t)
    return t[keep], v[keep]


def bound_over_time(
    record: RunRecord, log: SortedLog | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Pods bound to a node (running), as a step function over the run. ``log``: the
    record's ``sorted_log``, if at hand."""
    log = log if log is not None else sorted_log(record.stats)
    if not len(log):
        return np.zeros(0), np.zeros(0)
    times = log.times - run_start(record)
    keep = last_per_time(times)
    return times[keep], running_steps(log)[keep]


def usage_at_peak(record: RunRecord) -> tuple[NodeUsage, float]:
    """Each node's requests at the moment the cluster's cpu allocation peaked, and that
    moment (seconds since the run's start): the placement a run whose pods complete is
    judged by, since at its end the cluster may well be empty."""
    resources = resources_of(record)
    ext = resources[len(RESOURCES) :]
    log = sorted(record.stats.placement_log, key=lambda e: e[0])
    index = {n.name: i for i, n in enumerate(record.nodes)}
    allocatable = np.array(
        [[n.allocatable.get(r, 0) for r in resources] for n in record.nodes], dtype=np.int64
    ).reshape(len(record.nodes), len(resources))
    requested = np.zeros_like(allocatable)
    usage = NodeUsage(
        names=tuple(n.name for n in record.nodes),
        zones=tuple(zone_of(n) for n in record.nodes),
        allocatable=allocatable,
        requested=requested,
        resources=resources,
    )
    if not log:
        return usage, 0.0
    held: dict[str, tuple[int, tuple[int, ...]]] = {}
    extended = record.stats.extended_requests
    cpu = 0
    peak, peak_at = -1, 0
    for i, (_now, key, node_name, c, m) in enumerate(log):
        previous = held.pop(key, None)
        if previous is not None:
            cpu -= previous[1][0]
        if node_name and node_name in index:
            req = extended.get(key) or {}
            row = (c, m, 1, *(req.get(r, 0) for r in ext))
            held[key] = (index[node_name], row)
            cpu += c
        if cpu > peak:
            peak, peak_at = cpu, i
    held.clear()
    for _now, key, node_name, c, m in log[: peak_at + 1]:
        previous = held.pop(key, None)
        if previous is not None:
            requested[previous[0]] -= previous[1]
        if node_name and node_name in index:
            req = extended.get(key) or {}
            row = (c, m, 1, *(req.get(r, 0) for r in ext))
            held[key] = (index[node_name], row)
            requested[index[node_name]] += row
    return usage, float(log[peak_at][0] - run_start(record))


def over_time_figures(record: RunRecord) -> dict[str, Any]:
    """Time-weighted mean and peak of cluster utilisation (requested / allocatable, every
    resource, extended ones included), pending and running pods and nodes in use over
    the run, and for extended resources the unallocated share on partly used nodes: the
    figures of a long run with completions, whose final placement is only a moment."""
    log = sorted_log(record.stats)
    series = run_series(record, log)
    names = series.resources
    util_mean, util_max = time_weighted(series.utilisation_t, series.utilisation)
    pend_mean, pend_max = time_weighted(series.pending_t, series.pending)
    used_mean, used_max = time_weighted(*nodes_in_use(record, log))
    run_mean, run_max = time_weighted(*bound_over_time(record, log))
    out: dict[str, Any] = {
        "utilisation_mean": {n: round(float(v), 6) for n, v in zip(names, util_mean, strict=True)},
        "utilisation_max": {n: round(float(v), 6) for n, v in zip(names, util_max, strict=True)},
        "pending_mean": round(float(pend_mean), 3),
        "pending_max": round(float(pend_max), 3),
        "running_mean": round(float(run_mean), 3),
        "running_max": round(float(run_max), 3),
        "nodes_in_use_mean": round(float(used_mean), 3),
        "nodes_in_use_max": round(float(used_max), 3),
    }
    extended = names[3:]
    if extended:
        frag_mean, frag_max = time_weighted(series.utilisation_t, series.fragmentation)
        out["unallocated_on_partly_used_nodes_mean"] = {
            n: round(float(v), 6) for n, v in zip(extended, frag_mean, strict=True)
        }
        out["unallocated_on_partly_used_nodes_max"] = {
            n: round(float(v), 6) for n, v in zip(extended, frag_max, strict=True)
        }
    return out
