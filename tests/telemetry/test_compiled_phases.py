"""Observability on the compiled path (issue 26, finding 5): while traced or metered, the
Filter, Score and NormalizeScore of every pod appear as spans and as upstream's
extension-point metric, as on the plugin-by-plugin path (``--no-compiled``); cycles
drawn to time every plugin keep ``plugin_execution_duration_seconds`` for Filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.spans import SCHEDULING_CYCLE
from cluster_sched.workload.runner import RunOptions, run_evaluation
from tests.telemetry.trace_files import spans_in
from tests.telemetry.workloads import SMALL_PODS

#: Phases every pod's schedulingCycle holds when several nodes fit it.
CYCLE_PHASES = {
    "preFilter",
    "filter",
    "preScore",
    "score",
    "normalizeScore",
    "reserve",
    "permit",
}


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "no-compiled"])
def test_every_traced_pod_has_every_phase_span(
    compiled: bool, small_workload: Path, tmp_path: Path, redis_url: str
) -> None:
    trace = tmp_path / "spans.jsonl"
    result = run_evaluation(
        RunOptions(
            workload=str(small_workload),
            redis=redis_url,
            quiet=True,
            compiled=compiled,
            trace_file=str(trace),
        )
    )
    assert result.summary["scheduled"] == SMALL_PODS
    if compiled:  # the kernel did answer these pods
        assert result.summary["compiled_path"]["shape_hits"] > 0
    spans = spans_in(trace)
    cycles = {s["spanId"] for s in spans if s["name"] == SCHEDULING_CYCLE}
    assert len(cycles) == SMALL_PODS
    children: dict[object, set[str]] = {c: set() for c in cycles}
    for s in spans:
        if s.get("parentSpanId") in children:
            children[s["parentSpanId"]].add(str(s["name"]))
    missing = {c: CYCLE_PHASES - names for c, names in children.items() if CYCLE_PHASES - names}
    assert missing == {}
    for name in ("filter", "score", "normalizeScore"):
        assert sum(1 for s in spans if s["name"] == name) == SMALL_PODS, name


def _counts(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            if s.name.endswith("_count"):
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_compiled_path_feeds_extension_point_and_plugin_metrics(
    small_workload: Path, redis_url: str
) -> None:
    metrics = Metrics()
    result = run_evaluation(
        RunOptions(workload=str(small_workload), redis=redis_url, quiet=True, metrics=metrics)
    )
    assert result.summary["compiled_path"]["shape_hits"] > 0
    counts = _counts(metrics)

    def point(name: str) -> float:
        return sum(
            v
            for (metric, labels), v in counts.items()
            if metric == "scheduler_framework_extension_point_duration_seconds_count"
            and dict(labels)["extension_point"] == name
        )

    def plugin(name: str, at: str) -> float:
        return sum(
            v
            for (metric, labels), v in counts.items()
            if metric == "scheduler_plugin_execution_duration_seconds_count"
            and dict(labels)["plugin"] == name
            and dict(labels)["extension_point"] == at
        )

    assert point("PreFilter") == SMALL_PODS
    assert point("Filter") == SMALL_PODS
    assert point("Score") == SMALL_PODS
    # every cycle drawn to time its plugins times its Filter plugins too
    assert plugin("NodeResourcesFit", "Filter") == plugin("NodeResourcesFit", "PreFilter")
    assert plugin("NodeResourcesFit", "Score") == plugin("NodeResourcesFit", "PreFilter")
