"""What a scheduler_perf workload measures, in upstream's data-item format.

A collection window (a ``collectMetrics`` createPods op, or start/stopCollectingMetrics)
yields, as upstream's collectors do:

- ``SchedulingThroughput`` (pods/s): every second, the pods newly scheduled in the
  measured namespaces divided by the interval (upstream throughputCollector: the first
  sample is skipped as an outlier, empty intervals are folded into the next one).
- one item per histogram and label filter (ms): percentiles interpolated within
  Prometheus buckets and the average sum/count, exactly as upstream's
  ``testutil.HistogramVec`` computes them, over the observations made in the window.

The histograms are read from the scheduler's own Prometheus registry (before/after
difference: upstream resets them when collection starts). The pod scheduling SLI
duration, which the registry may lack, is rebuilt from the run's timestamps with
upstream's buckets.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from cluster_sched.scheduler.stats import RunStats
from cluster_sched.telemetry.metrics import exponential_buckets
from cluster_sched.workload.perf.config import (
    THROUGHPUT_METRIC,
    ThresholdMetricSelector,
)

__all__ = [
    "SLI_BUCKETS",
    "DataItem",
    "HistogramSeries",
    "ThroughputCollector",
    "Window",
    "apply_threshold",
    "bucket_quantile",
    "histogram_items",
    "read_histograms",
    "sli_series",
    "subtract",
    "write_data_items",
]

SLI_BUCKETS = exponential_buckets(0.01, 2, 20)
"""Upstream's PodSchedulingSLIDuration buckets: 10 ms … ~87 min."""
#: Seconds between throughput samples (upstream throughputSampleInterval).
THROUGHPUT_INTERVAL = 1.0
_MS = 1000.0


@dataclass(slots=True)
class DataItem:
    """One upstream DataItem: ``data`` bucket -> value, its ``unit`` and ``labels``."""

    data: dict[str, float]
    unit: str
    labels: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"data": self.data, "unit": self.unit, "labels": self.labels}


# ------------------------------------------------------------------------ throughput


class ThroughputCollector:
    """Upstream's throughputCollector, sampled from the driving loop's ticks.

    ``count()`` is the number of pods scheduled now in the measured namespaces (what the
    pod informer's lister shows). Samples are taken at ``start + k`` seconds; a tick that
    comes late samples once, as a Go ticker drops the ticks its reader missed.
    """

    def __init__(self, count: Callable[[], int], labels: Mapping[str, str]) -> None:
        self.count = count
        self.labels = dict(labels)
        self.samples: list[float] = []
        self.warning = ""
        self._start = self._last_time = 0.0
        self._start_count = self._last_count = 0
        self._started = False
        self._skipped = 0
        self._next = 0.0

    def start(self, now: float) -> None:
        self._start = self._last_time = now
        self._start_count = self._last_count = self.count()
        self._next = now + THROUGHPUT_INTERVAL

    def tick(self, now: float) -> None:
        if now < self._next:
            return
        periods = math.floor((now - self._start) / THROUGHPUT_INTERVAL) + 1
        self._next = self._start + periods * THROUGHPUT_INTERVAL
        scheduled = self.count()
        if scheduled == 0:
            return
        if not self._started:
            # The first sample is likely an outlier: sampling and pod creation start
            # independently.
            self._started = True
            self._last_count, self._last_time = scheduled, now
            return
        new = scheduled - self._last_count
        if new == 0:
            self._skipped += 1  # no zero samples: wait for the next pod
            return
        throughput = new / (now - self._last_time)
        # One sample per interval covered, so percentiles stay right.
        self.samples.extend([throughput] * (self._skipped + 1))
        self._last_count, self._last_time, self._skipped = scheduled, now, 0

    def stop(self, now: float) -> list[DataItem]:
        samples = sorted(self.samples)
        if not samples:
            # Upstream reports no data here ("Failed to measure SchedulingThroughput ...
            # Increase pods and/or nodes to make scheduling take longer"); one sample
            # over the whole window keeps small workloads comparable.
            scheduled = self.count() - self._start_count
            if scheduled > 0 and now > self._start:
                samples = [scheduled / (now - self._start)]
                self.warning = (
                    "scheduling took less than two sampling intervals: "
                    "SchedulingThroughput is one sample over the whole window"
                )
        item = DataItem({}, "pods/s", {**self.labels, "Metric": THROUGHPUT_METRIC})
        if samples:
            n = len(samples)
            item.data = {
                "Average": sum(samples) / n,
                "Perc50": samples[math.ceil(n * 50 / 100) - 1],
                "Perc90": samples[math.ceil(n * 90 / 100) - 1],
                "Perc95": samples[math.ceil(n * 95 / 100) - 1],
                "Perc99": samples[math.ceil(n * 99 / 100) - 1],
            }
        return [item]


# ------------------------------------------------------------------------ histograms


@dataclass(slots=True)
class HistogramSeries:
    """One labelled histogram: cumulative counts per upper bound (+Inf last)."""

    labels: dict[str, str]
    buckets: list[tuple[float, float]]
    count: float
    sum: float


#: metric name -> its series, keyed by their labels
Histograms = dict[str, dict[frozenset[tuple[str, str]], HistogramSeries]]


def read_histograms(registry: CollectorRegistry) -> Histograms:
    """Every histogram in ``registry`` (upstream gathers the legacy registry)."""
    out: Histograms = {}
    for family in registry.collect():
        if family.type != "histogram":
            continue
        series: dict[frozenset[tuple[str, str]], HistogramSeries] = {}
        for sample in family.samples:
            labels = {k: v for k, v in sample.labels.items() if k != "le"}
            key = frozenset(labels.items())
            s = series.setdefault(key, HistogramSeries(labels, [], 0.0, 0.0))
            if sample.name.endswith("_bucket"):
                s.buckets.append((float(sample.labels["le"]), float(sample.value)))
            elif sample.name.endswith("_count"):
                s.count = float(sample.value)
            elif sample.name.endswith("_sum"):
                s.sum = float(sample.value)
        out[family.name] = series
    return out


def subtract(end: Histograms, start: Histograms) -> Histograms:
    """The observations made between two readings."""
    out: Histograms = {}
    for name, series in end.items():
        before = start.get(name, {})
        out[name] = {}
        for key, s in series.items():
            b = before.get(key)
            if b is None:
                out[name][key] = s
                continue
            earlier = dict(b.buckets)
            out[name][key] = HistogramSeries(
                s.labels,
                [(le, c - earlier.get(le, 0.0)) for le, c in s.buckets],
                s.count - b.count,
                s.sum - b.sum,
            )
    return out


def sli_series(stats: RunStats, start: float, end: float) -> HistogramSeries:
    """Queue entry to binding of the pods bound in [start, end] (upstream observes
    PodSchedulingSLIDuration when a binding succeeds), in upstream's buckets."""
    counts = [0.0] * len(SLI_BUCKETS)
    total, n = 0.0, 0
    for key, bound in stats.bound_at.items():
        queued = stats.enqueued_at.get(key)
        if queued is None or not start <= bound <= end or key not in stats.attempts:
            continue
        value = bound - queued
        total += value
        n += 1
        for i, le in enumerate(SLI_BUCKETS):
            if value <= le:
                counts[i] += 1
                break
    cumulative, running = [], 0.0
    for le, c in zip(SLI_BUCKETS, counts, strict=True):
        running += c
        cumulative.append((le, running))
    cumulative.append((math.inf, float(n)))
    return HistogramSeries({}, cumulative, float(n), total)


def bucket_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float:
    """Prometheus' bucketQuantile as upstream's testutil uses it: merge buckets of equal
    bound, make counts monotonic, interpolate linearly inside the bucket holding rank."""
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(buckets, key=lambda b: b[0])
    if not ordered or not math.isinf(ordered[-1][0]):
        return math.nan
    merged: list[list[float]] = []
    for le, c in ordered:
        if merged and merged[-1][0] == le:
            merged[-1][1] += c
        else:
            merged.append([le, c])
    top = 0.0
    for bucket in merged:
        top = max(top, bucket[1])
        bucket[1] = top
    if len(merged) < 2:
        return math.nan
    rank = q * merged[-1][1]
    b = next((i for i in range(len(merged) - 1) if merged[i][1] >= rank), len(merged) - 1)
    if b == len(merged) - 1:
        return merged[-2][0]
    if b == 0 and merged[0][0] <= 0:
        return merged[0][0]
    start, end, count = 0.0, merged[b][0], merged[b][1]
    if b > 0:
        start = merged[b - 1][0]
        count -= merged[b - 1][1]
        rank -= merged[b - 1][1]
    return start + (end - start) * (rank / count)


def _combos(filters: Sequence[tuple[str, tuple[str, ...]]]) -> list[dict[str, str]]:
    """Every combination of the filters' label values (upstream uniqueLVCombos)."""
    labels = [label for label, _values in filters]
    return [dict(zip(labels, values, strict=True)) for values in product(*(v for _l, v in filters))]


def _item(
    metric: str, series: Sequence[HistogramSeries], labels: Mapping[str, str]
) -> DataItem | None:
    count = sum(s.count for s in series)
    if count <= 0:
        return None  # upstream skips a histogram without samples
    buckets = [b for s in series for b in s.buckets]
    data = {
        "Perc50": bucket_quantile(0.50, buckets) * _MS,
        "Perc90": bucket_quantile(0.90, buckets) * _MS,
        "Perc95": bucket_quantile(0.95, buckets) * _MS,
        "Perc99": bucket_quantile(0.99, buckets) * _MS,
        "Average": sum(s.sum for s in series) / count * _MS,
    }
    return DataItem(data, "ms", {"Metric": metric, **labels})


def histogram_items(
    config: Mapping[str, Sequence[tuple[str, tuple[str, ...]]] | None],
    histograms: Histograms,
    labels: Mapping[str, str],
) -> list[DataItem]:
    """Upstream metricsCollector.collect: per metric, one item per label combination
    (or one over every series when the metric has no filter)."""
    items: list[DataItem] = []
    for metric, filters in config.items():
        series = list(histograms.get(metric, {}).values())
        if not series:
            continue  # the scheduler does not expose it: no item, as upstream
        combos = [{}] if filters is None else _combos(filters)
        for combo in combos:
            matching = [s for s in series if all(s.labels.get(k) == v for k, v in combo.items())]
            item = _item(metric, matching, {**labels, **combo})
            if item is not None:
                items.append(item)
    return items


# ------------------------------------------------------------------------ results


def apply_threshold(
    items: Sequence[DataItem], threshold: float, selector: ThresholdMetricSelector
) -> list[str]:
    """Upstream applyThreshold: record ``<bucket>Threshold`` on the selected items and
    return one message per item on the wrong side of it (none if threshold is 0)."""
    if threshold == 0:
        return []
    errors = []
    bucket = selector.data_bucket
    for item in items:
        if item.labels.get("Metric") != selector.name:
            continue
        if any(item.labels.get(k) != v for k, v in selector.labels.items()):
            continue
        item.data[f"{bucket}Threshold"] = threshold
        value = item.data.get(bucket)
        name = item.labels.get("Name", "")
        if value is None:
            errors.append(f"{name}: no data present for {selector.name!r} bucket {bucket!r}")
        elif selector.expect_lower and not value < threshold:
            errors.append(
                f"{name}: expected {selector.name} {bucket} to be lower: got {value:.2f}, want {threshold:g}"
            )
        elif not selector.expect_lower and not value > threshold:
            errors.append(
                f"{name}: expected {selector.name} {bucket} to be higher: got {value:.2f}, want {threshold:g}"
            )
    return errors


def write_data_items(path: Path, items: Sequence[DataItem]) -> None:
    """``{"version": "v1", "dataItems": [...]}`` as perf-dash reads it: every item
    carries every label used in the file ("not applicable" where it has none)."""
    names = {label for item in items for label in item.labels}
    out = []
    for item in items:
        labels = {label: item.labels.get(label, "not applicable") for label in sorted(names)}
        out.append({**item.to_json(), "labels": labels})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": "v1", "dataItems": out}, indent=2) + "\n")


@dataclass(slots=True)
class Window:
    """One open collection window: its throughput collector and the histograms at its start."""

    throughput: ThroughputCollector
    histograms: Histograms
    started_at: float
    labels: dict[str, str] = field(default_factory=dict)
