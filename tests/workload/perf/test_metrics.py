"""Upstream's data items: the throughput sampler, histogram percentiles as
``testutil.HistogramVec`` computes them, thresholds and the file perf-dash reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Histogram

from cluster_sched.scheduler.stats import RunStats
from cluster_sched.workload.perf.config import ThresholdMetricSelector
from cluster_sched.workload.perf.metrics import (
    SLI_BUCKETS,
    DataItem,
    ThroughputCollector,
    apply_threshold,
    bucket_quantile,
    histogram_items,
    read_histograms,
    sli_series,
    subtract,
    write_data_items,
)

INF = math.inf


@pytest.mark.parametrize(
    ("q", "buckets", "want"),
    [
        (0.5, [(1, 10), (2, 20), (INF, 20)], 1.0),  # rank 10 ends the first bucket
        (0.75, [(1, 10), (2, 20), (INF, 20)], 1.5),  # halfway through (1, 2]
        (0.25, [(1, 10), (2, 20), (INF, 20)], 0.5),  # the first bucket starts at 0
        (0.99, [(1, 0), (INF, 10)], 1.0),  # everything above the last bound: that bound
        (0.5, [(1, 5), (INF, 5), (1, 5), (INF, 5)], 0.5),  # two series merged by bound
        (0.5, [(1, 4), (2, 3), (INF, 10)], 2.0),  # non-monotonic counts are evened out
        (0.5, [(INF, 3)], math.nan),  # one bucket: no answer
        (0.5, [(1, 1)], math.nan),  # no +Inf bucket: no answer
    ],
    ids=[
        "bucket-end",
        "interpolate",
        "from-zero",
        "overflow",
        "merge",
        "monotonic",
        "single",
        "no-inf",
    ],
)
def test_bucket_quantile_is_prometheus_bucket_quantile(
    q: float, buckets: list[tuple[float, float]], want: float
) -> None:
    got = bucket_quantile(q, buckets)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(want)


def registry_with_attempts() -> tuple[CollectorRegistry, Histogram]:
    registry = CollectorRegistry()
    hist = Histogram(
        "scheduler_scheduling_attempt_duration_seconds",
        "attempts",
        ["result", "profile"],
        buckets=(0.001, 0.002, 0.004),
        registry=registry,
    )
    return registry, hist


def test_histogram_items_cover_only_the_window_and_only_labels_with_samples() -> None:
    registry, hist = registry_with_attempts()
    hist.labels("scheduled", "default-scheduler").observe(0.5)  # before the window
    start = read_histograms(registry)
    for value in (0.0005, 0.0015, 0.0015, 0.003):
        hist.labels("scheduled", "default-scheduler").observe(value)
    window = subtract(read_histograms(registry), start)
    config = {"scheduler_scheduling_attempt_duration_seconds": [("result", ("scheduled", "error"))]}
    (item,) = histogram_items(config, window, {"Name": "T/W/ns"})
    assert item.unit == "ms"
    assert item.labels == {
        "Metric": "scheduler_scheduling_attempt_duration_seconds",
        "Name": "T/W/ns",
        "result": "scheduled",
    }
    assert item.data["Average"] == pytest.approx((0.0005 + 0.0015 * 2 + 0.003) / 4 * 1000)
    # 4 samples: 1 in (0, 1ms], 2 in (1, 2ms], 1 in (2, 4ms]; median rank 2 is halfway
    # through the second bucket.
    assert item.data["Perc50"] == pytest.approx(1.5)
    assert item.data["Perc99"] == pytest.approx(2 + 2 * (3.96 - 3))
    assert set(item.data) == {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}


def test_a_metric_the_scheduler_lacks_gives_no_item() -> None:
    registry, _hist = registry_with_attempts()
    config = {"scheduler_plugin_execution_duration_seconds": None}
    assert histogram_items(config, read_histograms(registry), {"Name": "x"}) == []


def test_sli_series_counts_pods_bound_in_the_window_in_upstream_buckets() -> None:
    stats = RunStats()
    for key, queued, bound in (("ns/a", 0.0, 0.015), ("ns/b", 1.0, 1.5), ("ns/c", 0.0, 9.0)):
        stats.on_enqueue(key, queued)
        stats.on_pop(key, queued)
        stats.on_bound(key, "n1", bound)
    series = sli_series(stats, 0.01, 2.0)  # ns/c is bound after the window
    assert series.count == 2
    assert series.sum == pytest.approx(0.515)
    cumulative = dict(series.buckets)
    assert cumulative[0.01] == 0 and cumulative[0.02] == 1 and cumulative[0.64] == 2
    assert list(cumulative)[: len(SLI_BUCKETS)] == list(SLI_BUCKETS)
    assert cumulative[math.inf] == 2


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def __call__(self) -> int:
        return self.value


def test_throughput_samples_as_upstream_collector() -> None:
    count = Counter()
    c = ThroughputCollector(count, {"Name": "T/W/ns"})
    c.start(100.0)
    c.tick(100.5)  # before the first interval: nothing
    count.value = 5
    c.tick(101.0)  # first sample is skipped (outlier)
    count.value = 15
    c.tick(102.0)  # 10 pods in 1 s
    c.tick(103.0)  # nothing new: no zero sample, the interval is folded into the next
    count.value = 35
    c.tick(104.0)  # 20 pods in 2 s: two samples of 10
    count.value = 65
    c.tick(105.5)  # late tick: 30 pods over 1.5 s, one sample; the next tick is at 106
    c.tick(105.9)
    assert c.samples == [10.0, 10.0, 10.0, 20.0]
    (item,) = c.stop(106.0)
    assert item.unit == "pods/s"
    assert item.labels == {"Name": "T/W/ns", "Metric": "SchedulingThroughput"}
    assert item.data == {
        "Average": 12.5,
        "Perc50": 10.0,
        "Perc90": 20.0,
        "Perc95": 20.0,
        "Perc99": 20.0,
    }
    assert c.warning == ""


def test_throughput_of_a_window_too_short_to_sample_is_one_sample_with_a_warning() -> None:
    count = Counter()
    count.value = 3  # pods scheduled before the window do not count
    c = ThroughputCollector(count, {"Name": "x"})
    c.start(10.0)
    count.value = 13
    c.tick(10.4)
    (item,) = c.stop(10.5)
    assert item.data["Average"] == pytest.approx(20.0)
    assert item.data["Perc99"] == pytest.approx(20.0)
    assert "one sample over the whole window" in c.warning


def test_threshold_is_recorded_and_checked_as_upstream() -> None:
    throughput = DataItem(
        {"Average": 500.0}, "pods/s", {"Metric": "SchedulingThroughput", "Name": "n"}
    )
    other = DataItem({"Average": 1.0}, "ms", {"Metric": "scheduler_x", "Name": "n"})
    assert apply_threshold([throughput, other], 400, ThresholdMetricSelector()) == []
    assert throughput.data["AverageThreshold"] == 400
    assert "AverageThreshold" not in other.data
    (error,) = apply_threshold([throughput], 680, ThresholdMetricSelector())
    assert "expected SchedulingThroughput Average to be higher: got 500.00, want 680" in error
    lower = ThresholdMetricSelector("scheduler_x", {}, "Average", expect_lower=True)
    assert apply_threshold([other], 2, lower) == []
    assert apply_threshold([other], 0.5, lower) != []
    assert apply_threshold([throughput], 0, ThresholdMetricSelector()) == []  # 0: unchecked


def test_data_items_file_has_upstream_shape(tmp_path: Path) -> None:
    items = [
        DataItem({"Average": 1.0}, "pods/s", {"Metric": "SchedulingThroughput", "Name": "n"}),
        DataItem({"Perc50": 2.0}, "ms", {"Metric": "m", "Name": "n", "result": "scheduled"}),
    ]
    path = tmp_path / "out" / "T_W.json"
    write_data_items(path, items)
    doc = json.loads(path.read_text())
    assert doc["version"] == "v1"
    first, second = doc["dataItems"]
    assert first == {
        "data": {"Average": 1.0},
        "unit": "pods/s",
        "labels": {"Metric": "SchedulingThroughput", "Name": "n", "result": "not applicable"},
    }
    assert second["labels"]["result"] == "scheduled"
