"""compare.json: every (workload, config, seed) run's figures, their mean and spread over
seeds, and each config's difference from the first (the baseline).

A difference is *marked* only when it is significant over the seeds
(``report.significance``: Welch's t-test on the per-seed values), and never on a
wall-clock figure of a virtual-time run (there the machine's speed is all it measures).
Ratios are compared as percentages (``unit="%"``) and their differences are in
percentage points, so no figure mixes a fraction with a percentage.

A run enters as a plain dict (``run_digest``), the shape a Ray task or a worker process
sends back as msgpack: the summary's figures, a digest of the placements and the series
the overlay charts draw, downsampled. Nothing here imports matplotlib.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.report.record import RunRecord
from cluster_sched.report.series import nodes_in_use, run_series
from cluster_sched.report.significance import TEST_NAME, welch_t_test

__all__ = ["FIGURES", "Figure", "aggregate", "applies", "figure_value", "run_digest"]

#: Points kept of each over-time series and of the latency CDF (plenty for a chart).
SERIES_POINTS = 400


@dataclass(frozen=True, slots=True)
class Figure:
    """One compared figure: where it is in summary.json and which way is better."""

    name: str
    path: tuple[str, ...]
    #: "higher", "lower" or "" (neither is better)
    better: str = ""
    #: measured on the machine (wall clock or CPU time): differs between runs even on a
    #: virtual clock, where it is simulation speed and never marked
    wall: bool = False
    #: "%": a ratio in summary.json, compared times 100 (differences in percentage points)
    unit: str = ""
    #: describes the cluster as the run left it: meaningless where pods complete
    #: (virtual time), where the over-time figures stand instead
    end_state: bool = False


FIGURES: tuple[Figure, ...] = (
    Figure("scheduled", ("scheduled",), "higher"),
    Figure("unschedulable", ("unschedulable",), "lower"),
    Figure("preempted", ("preempted",), "lower"),
    Figure("throughput (pods/s)", ("throughput",), "higher"),
    Figure("latency p50 (ms)", ("latency_ms", "p50"), "lower"),
    Figure("latency p90 (ms)", ("latency_ms", "p90"), "lower"),
    Figure("latency p99 (ms)", ("latency_ms", "p99"), "lower"),
    Figure("attempts per pod", ("attempts_per_pod", "mean"), "lower"),
    Figure("attempt p50 (ms)", ("attempt_latency_ms", "p50"), "lower", wall=True),
    Figure("process CPU per pod (µs)", ("process_cpu_us_per_pod",), "lower", wall=True),
    Figure("nodes used (end)", ("placement", "nodes_used"), "lower", end_state=True),
    Figure(
        "cpu on used nodes (end, %)",
        ("placement", "utilisation_used_nodes", "cpu", "mean"),
        "higher",
        unit="%",
        end_state=True,
    ),
    Figure(
        "cpu utilisation (time mean, %)",
        ("over_time", "utilisation_mean", "cpu"),
        "higher",
        unit="%",
    ),
    Figure(
        "memory utilisation (time mean, %)",
        ("over_time", "utilisation_mean", "memory"),
        "higher",
        unit="%",
    ),
    Figure("nodes in use (time mean)", ("over_time", "nodes_in_use_mean"), "lower"),
    Figure("nodes in use (peak)", ("over_time", "nodes_in_use_max"), "lower"),
    Figure("pending pods (time mean)", ("over_time", "pending_mean"), "lower"),
    Figure("pending pods (max)", ("over_time", "pending_max"), "lower"),
)


def figure_value(summary: Mapping[str, Any], figure: Figure) -> float | None:
    value: Any = summary
    for part in figure.path:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) * 100 if figure.unit == "%" else float(value)


def applies(figure: Figure, clock: str) -> bool:
    """Whether ``figure`` says something about a run on ``clock``: end-of-run placement
    figures do not where pods complete (virtual time leaves the cluster empty)."""
    return not (figure.end_state and clock == "virtual")


def _thin(t: np.ndarray, v: np.ndarray) -> tuple[list[float], list[float]]:
    if len(t) > SERIES_POINTS:
        idx = np.unique(np.linspace(0, len(t) - 1, SERIES_POINTS).astype(np.int64))
        t, v = t[idx], v[idx]
    return [float(x) for x in t], [float(x) for x in v]


def run_digest(
    summary: Mapping[str, Any], placements: Mapping[str, str], record: RunRecord | None
) -> dict[str, Any]:
    """What one run sends back: msgpack-able (str keys, floats, lists)."""
    clock = str(summary.get("clock", "real"))
    figures = {f.name: figure_value(summary, f) if applies(f, clock) else None for f in FIGURES}
    out: dict[str, Any] = {
        "figures": figures,
        "placements_sha256": hashlib.sha256(
            json.dumps(dict(placements), sort_keys=True).encode()
        ).hexdigest(),
        "history_sha256": (summary.get("virtual_time") or {}).get("history_sha256", ""),
        "clock": clock,
        "series": {},
    }
    if record is not None:
        s = run_series(record)
        q = np.linspace(0, 100, 101)
        latency = np.percentile(s.latency_ms, q) if len(s.latency_ms) else np.zeros(0)
        cpu = s.utilisation[:, 0] if len(s.utilisation) else np.zeros(0)
        util_t, util = _thin(s.utilisation_t, cpu)
        pend_t, pend = _thin(s.pending_t, s.pending)
        used_t, used = _thin(*nodes_in_use(record))
        out["series"] = {
            "latency_q": [float(x) for x in q[: len(latency)]],
            "latency_ms": [float(x) for x in latency],
            "utilisation_t": util_t,
            "utilisation_cpu": util,
            "pending_t": pend_t,
            "pending": pend,
            "nodes_t": used_t,
            "nodes": used,
        }
    return out


def _stats(values: Sequence[float]) -> dict[str, Any]:
    a = np.asarray(values, dtype=np.float64)
    return {
        "mean": round(float(a.mean()), 6),
        "std": round(float(a.std(ddof=1)) if len(a) > 1 else 0.0, 6),
        "min": round(float(a.min()), 6),
        "max": round(float(a.max()), 6),
        "values": [round(float(x), 6) for x in a],
    }


def _difference(
    base: Mapping[str, Any], other: Mapping[str, Any], figure: Figure, virtual: bool
) -> dict[str, Any]:
    """``other`` - ``base``; marked when Welch's t-test over the per-seed values finds it
    significant (``report.significance``), never for a wall-clock figure of virtual-time
    runs; with the verdict of ``figure.better``. A percentage figure's difference is in
    percentage points and gets no relative change (a % of a % reads as either)."""
    delta = other["mean"] - base["mean"]
    test = welch_t_test(base["values"], other["values"])
    untested = virtual and figure.wall
    marked = delta != 0 and test is not None and test.significant and not untested
    verdict = ""
    if marked and figure.better:
        verdict = "better" if (delta > 0) == (figure.better == "higher") else "worse"
    pct = round(100 * delta / abs(base["mean"]), 2) if base["mean"] and figure.unit != "%" else None
    return {
        "delta": round(delta, 6),
        "delta_pct": pct,
        "unit": "percentage points" if figure.unit == "%" else "",
        "p_value": None if test is None or untested else round(test.p, 6),
        "marked": marked,
        "verdict": verdict,
    }


def aggregate(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """compare.json from the runs (each: workload, config, seed and ``run_digest``'s
    keys): per workload and figure, per config stats over seeds, and differences from
    the first config."""
    workloads = list(dict.fromkeys(r["workload"] for r in runs))
    configs = list(dict.fromkeys(r["config"] for r in runs))
    seeds = list(dict.fromkeys(r["seed"] for r in runs))
    virtual = bool(runs) and all(r.get("clock") == "virtual" for r in runs)
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    differences: dict[str, dict[str, dict[str, Any]]] = {}
    for w in workloads:
        figures[w], differences[w] = {}, {}
        for f in FIGURES:
            per_config: dict[str, Any] = {}
            for c in configs:
                values = [
                    r["figures"][f.name]
                    for r in runs
                    if r["workload"] == w
                    and r["config"] == c
                    and r["figures"].get(f.name) is not None
                ]
                if values:
                    per_config[c] = _stats(values)
            if not per_config:
                continue
            figures[w][f.name] = per_config
            base = per_config.get(configs[0])
            if base is not None:
                differences[w][f.name] = {
                    c: _difference(base, per_config[c], f, virtual)
                    for c in configs[1:]
                    if c in per_config
                }
    return {
        "workloads": workloads,
        "configs": configs,
        "seeds": seeds,
        "baseline": configs[0] if configs else None,
        "figures": figures,
        "differences": differences,
        "wall_clock_figures": [f.name for f in FIGURES if f.wall],
        "clock": "virtual" if virtual else "real",
        "significance_test": TEST_NAME,
        "runs": [
            {
                k: r[k]
                for k in (
                    "workload",
                    "config",
                    "seed",
                    "figures",
                    "placements_sha256",
                    "history_sha256",
                    "clock",
                )
            }
            for r in runs
        ],
    }
