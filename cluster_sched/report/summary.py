"""The keys the report adds to summary.json: provenance, per-group figures, placement
quality and the unschedulable pods.

Provenance makes a summary comparable with another: ``version`` (the installed
cluster-sched), ``seed``, ``config_file`` and ``config`` (the configuration as loaded, after
upstream's defaulting, with the field names of ``cluster_sched.config.types``).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.metadata
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from cluster_sched.report.quality import (
    NodeUsage,
    fragmentation,
    imbalance,
    node_usage,
    partly_used,
    pending_shapes,
    utilisation_stats,
)
from cluster_sched.report.reasons import unschedulable_pods
from cluster_sched.report.record import RunRecord
from cluster_sched.report.series import usage_at_peak
from cluster_sched.report.spread import spread_skew
from cluster_sched.report.waiting import waiting_summary

__all__ = [
    "group_figures",
    "placement_quality",
    "project_version",
    "report_summary",
    "to_jsonable",
]

#: The distribution name the version is read from.
DISTRIBUTION = "cluster-sched"


def project_version() -> str:
    """The installed cluster-sched's version ("unknown" when run from a bare checkout)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def to_jsonable(value: Any) -> Any:
    """Plain JSON values from dataclasses (fields shown in their repr), mappings,
    sequences, sets (sorted), enums (their value) and numbers; anything else as str."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr
        }
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted((to_jsonable(v) for v in value), key=str)
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Fraction):
        return float(value)
    return str(value)


def _percentiles(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0}
    a = np.asarray(ms, dtype=np.float64)
    return {f"p{q}": round(float(np.percentile(a, q)), 3) for q in (50, 90, 99)}


def group_figures(record: RunRecord) -> dict[str, dict[str, object]]:
    """Per pod group: pods, scheduled (bound at the end), unschedulable (still pending),
    deleted (gone from the store, e.g. preempted), queued→bound latency of the pods the
    scheduler placed, and attempts per pod."""
    stats = record.stats
    bound = {p.key for p in record.bound}
    pending = {p.key for p in record.pending}
    out: dict[str, dict[str, object]] = {}
    for name, keys in record.groups.items():
        scheduled = [k for k in keys if k in bound]
        # every pod the scheduler placed, including those that have left since (a
        # virtual run's completed pods)
        latencies = [
            (stats.bound_at[k] - stats.enqueued_at[k]) * 1e3
            for k in keys
            if k in stats.attempts and k in stats.bound_at and k in stats.enqueued_at
        ]
        attempts = [stats.attempts[k] for k in keys if k in stats.attempts]
        unschedulable = sum(1 for k in keys if k in pending)
        out[name] = {
            "pods": len(keys),
            "scheduled": len(scheduled),
            "unschedulable": unschedulable,
            "deleted": len(keys) - len(scheduled) - unschedulable,
            "latency_ms": _percentiles(latencies),
            "attempts_per_pod": round(sum(attempts) / len(attempts), 3) if attempts else 0.0,
        }
    return out


def placement_quality(record: RunRecord, usage: NodeUsage | None = None) -> dict[str, object]:
    """Nodes used, utilisation, imbalance, fragmentation, topology-spread skew (defined
    in ``report.quality`` and ``report.spread``), of ``usage`` (default: the end of the
    run)."""
    usage = usage or node_usage(record)
    shapes, source = pending_shapes(record)
    return {
        "nodes_total": len(record.nodes),
        "nodes_used": int(usage.used.sum()),
        "utilisation": utilisation_stats(usage, only_used=False),
        "utilisation_used_nodes": utilisation_stats(usage, only_used=True),
        "imbalance": imbalance(usage),
        "fragmentation": fragmentation(usage, shapes, source),
        "extended": partly_used(usage),
        "topology_spread": spread_skew(record),
    }


def report_summary(
    record: RunRecord,
    *,
    config: object,
    config_file: str | None,
    seed: int | None,
    virtual: bool = False,
) -> dict[str, object]:
    """Every key the report adds to summary.json (none of the run's own keys). A
    virtual-time run's ``placement`` is the cluster at its peak cpu allocation
    (``placement.when``), since its pods complete and the end may be an empty cluster;
    ``placement_at_end`` keeps the end."""
    rows, reasons = unschedulable_pods(record)
    if virtual:
        peak, at = usage_at_peak(record)
        placement = {
            **placement_quality(record, peak),
            "when": "peak cpu allocation",
            "at_seconds": round(at, 3),
        }
        extra: dict[str, object] = {"placement_at_end": placement_quality(record)}
    else:
        placement = {**placement_quality(record), "when": "end of the run"}
        extra = {}
    return {
        "version": project_version(),
        "seed": seed,
        "config_file": config_file,
        "config": to_jsonable(config),
        "groups": group_figures(record),
        "placement": placement,
        **extra,
        "unschedulable_reasons": reasons,
        "unschedulable_pods": rows,
        "waiting": waiting_summary(record),
    }
