"""Pods that waited: why they were pending, over the run, and how long they waited.

A run in which every pod is eventually bound can still have kept pods waiting for many
attempts (a trace replay on a full cluster). ``waiting_over_time`` replays the failure
log (``RunStats.failure_log``: each failed attempt's time and FailedScheduling message)
with the queue and bind times: at each moment, every pending pod counts under the main
reason of its latest failed attempt (the reason the most nodes gave), or "not attempted
yet" before its first. ``waiting_summary`` gives the figures summary.json keeps.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from cluster_sched.report.reasons import fit_error_reasons
from cluster_sched.report.record import RunRecord
from cluster_sched.report.series import run_start

__all__ = ["NOT_YET", "WaitingSeries", "main_reason", "waiting_over_time", "waiting_summary"]

#: The reason of a pending pod no attempt has failed for yet.
NOT_YET = "not attempted yet"
#: Reasons drawn apart; the rest are summed as "other reasons".
MAX_REASONS = 6
#: Moments the series is sampled at (evenly over the run).
SAMPLES = 400


def main_reason(message: str) -> str:
    """The reason most nodes gave in a FailedScheduling message (ties: alphabetical)."""
    reasons = fit_error_reasons(message)
    return min(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[0] if reasons else message


@dataclass(frozen=True, slots=True)
class WaitingSeries:
    """Pending pods by the main reason of their latest failed attempt."""

    #: float64[n]: sample times, seconds since the run's start
    t: np.ndarray
    #: reason labels, most pod-time first (NOT_YET last)
    reasons: tuple[str, ...]
    #: float64[n, len(reasons)]: pending pods under each reason at each sample time
    counts: np.ndarray


def waiting_over_time(record: RunRecord) -> WaitingSeries:
    """Sample the pending pods' reasons at SAMPLES moments from the run's start to its
    last queue, failure or bind (times relative to the start, as ``run_series``)."""
    stats = record.stats
    log = stats.failure_log
    t0 = run_start(record)
    end = max(
        max(stats.bound_at.values(), default=t0),
        max(stats.enqueued_at.values(), default=t0),
        max((at for at, _, _ in log), default=t0),
    )
    if len(log) == 0 or end <= t0:
        return WaitingSeries(np.zeros(0), (), np.zeros((0, 0)))
    labels = [main_reason(m) for m in stats.failure_log.messages]
    # events: (time, order, key, label index); order puts arrivals before failures
    # before binds at one instant. Label -1: pending, not attempted; -2: bound.
    events: list[tuple[float, int, str, int]] = []
    for key, at in stats.enqueued_at.items():
        events.append((at, 0, key, -1))
    for at, key, index in log:
        events.append((at, 1, key, index))
    for key, at in stats.bound_at.items():
        events.append((at, 2, key, -2))
    events.sort(key=lambda e: (e[0], e[1]))
    grid = np.linspace(t0, end, SAMPLES)
    n_labels = len(stats.failure_log.messages)
    current: dict[str, int] = {}
    counts = np.zeros(n_labels + 1, dtype=np.int64)  # last column: NOT_YET
    out = np.zeros((SAMPLES, n_labels + 1), dtype=np.float64)
    e = 0
    for g, at in enumerate(grid.tolist()):
        while e < len(events) and events[e][0] <= at:
            _, _, key, index = events[e]
            e += 1
            previous = current.pop(key, None)
            if previous is not None:
                counts[previous] -= 1
            if index == -2:
                continue
            slot = n_labels if index == -1 else index
            current[key] = slot
            counts[slot] += 1
        out[g] = counts
    # messages -> main reasons (several messages share one)
    by_reason: dict[str, np.ndarray] = {}
    for index, label in enumerate(labels):
        by_reason[label] = by_reason.get(label, 0) + out[:, index]
    weight = {r: float(v.sum()) for r, v in by_reason.items()}
    ranked = [r for r in sorted(weight, key=lambda r: (-weight[r], r)) if weight[r] > 0]
    shown = ranked[:MAX_REASONS]
    columns = [by_reason[r] for r in shown]
    names = list(shown)
    rest = ranked[MAX_REASONS:]
    if rest:
        columns.append(np.sum([by_reason[r] for r in rest], axis=0))
        names.append(f"{len(rest)} other reasons")
    if out[:, n_labels].any():
        columns.append(out[:, n_labels])
        names.append(NOT_YET)
    matrix = np.stack(columns, axis=1) if columns else np.zeros((SAMPLES, 0))
    return WaitingSeries(grid - t0, tuple(names), matrix)


def waiting_summary(record: RunRecord) -> dict[str, object]:
    """Pods with at least one failed attempt, the most attempts a pod took, failed
    attempts by main reason (most first), and the pending-time percentiles (queued to
    bound, seconds) of the pods that were bound."""
    stats = record.stats
    waited = {key for _, key, _ in stats.failure_log}
    labels = [main_reason(m) for m in stats.failure_log.messages]
    by_reason: Counter[str] = Counter(labels[index] for _, _, index in stats.failure_log)
    pending = np.asarray(
        [
            stats.bound_at[k] - stats.enqueued_at[k]
            for k in stats.bound_at
            if k in stats.enqueued_at
        ],
        dtype=np.float64,
    )

    def pct(q: float) -> float:
        return round(float(np.percentile(pending, q)), 3) if len(pending) else 0.0

    return {
        "pods_waited": len(waited),
        "failed_attempts": len(stats.failure_log),
        "max_attempts": max(stats.attempts.values(), default=0),
        "failed_attempts_by_reason": dict(by_reason.most_common()),
        "pending_seconds": {"p50": pct(50), "p90": pct(90), "p99": pct(99), "max": pct(100)},
    }
