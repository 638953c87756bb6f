"""Virtual-time runs report in simulated time and agree with themselves (issue 26,
finding 3): the run and pod-group tables count the same pods, running_at_end counts the
pods still bound, CPU per pod is per pod placed, placement is judged at peak allocation
(not the empty cluster at the end), wall-clock figures are labelled simulation speed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cluster_sched.report.compare import run_digest
from cluster_sched.workload.commands import print_summary
from cluster_sched.workload.runner import RunResult
from tests.report.gpu_trace import NODES, PODS, SERVICES


def test_tables_agree(gpu_trace_run: tuple[RunResult, Path]) -> None:
    result, _ = gpu_trace_run
    s = result.summary
    assert result.record is not None
    group = s["groups"]["trace"]
    assert group["scheduled"] == s["scheduled"] == PODS + SERVICES
    bound = len(result.record.bound)
    assert bound == SERVICES
    assert s["virtual_time"]["running_at_end"] == bound == group["running"]
    assert group["completed"] == PODS == s["virtual_time"]["completions"]
    # pending times are simulated seconds: pods waited hours for a GPU
    assert group["latency_ms"]["p99"] == s["latency_ms"]["p99"] > 3600e3


def test_cpu_per_pod_is_per_pod_placed(gpu_trace_run: tuple[RunResult, Path]) -> None:
    result, _ = gpu_trace_run
    s = result.summary
    per_pod = s["process_cpu_us_per_pod"]
    assert per_pod == s["simulation_speed"]["cpu_us_per_pod"] > 0
    # the run took place in this process: all pods' CPU fits in what it has used
    assert per_pod * s["scheduled"] / 1e6 <= time.process_time()


def test_placement_is_judged_at_peak_allocation(gpu_trace_run: tuple[RunResult, Path]) -> None:
    result, out = gpu_trace_run
    s = result.summary
    assert s["placement"]["when"] == "peak cpu allocation"
    assert s["placement"]["nodes_used"] == NODES
    assert s["placement"]["at_seconds"] > 0
    # the request shapes include the pods that completed (gone from the store)
    frag = s["placement"]["fragmentation"]
    assert (frag["shapes_from"], frag["shapes"]) == ("all pods", 2)
    assert frag["cpu"]["fraction"] == 0.0
    digest = run_digest(s, result.placements, None)["figures"]
    assert digest["nodes used (end)"] is None  # an end state means nothing here
    assert digest["nodes in use (peak)"] == NODES
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Pending time (simulated), CDF" in page
    assert "simulation speed (wall clock)" in page


def test_printed_summary_keeps_simulated_and_wall_figures_apart(
    gpu_trace_run: tuple[RunResult, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    result, _ = gpu_trace_run
    print_summary(result.summary)
    text = capsys.readouterr().out
    assert "pods per simulated s" in text
    assert "(simulated, queued to bound)" in text
    assert "sim. speed" in text and "(wall clock)" in text
    assert "µs per pod in this process" not in text
    assert f"{SERVICES} running at the end" in text
