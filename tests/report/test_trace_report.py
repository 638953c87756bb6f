"""What a GPU trace replay reports (issue 26, finding 2): every extended resource in the
utilisation figures and charts, the GPU share allocated and fragmented over time, why
pods waited over time when all were bound in the end, axes that say what they plot in
units that fit the span."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cluster_sched.report.plots import new_figure
from cluster_sched.report.plots_time import draw_utilisation_over_time
from cluster_sched.report.series import run_series, time_unit
from cluster_sched.workload.runner import RunResult
from tests.report.gpu_trace import GPU, PODS, SERVICES


@pytest.mark.parametrize(
    ("span", "unit"),
    [(90.0, "s"), (2 * 3600.0, "min"), (30 * 3600.0, "h"), (149 * 86400.0, "days")],
    ids=["90s", "2h", "30h", "149d"],
)
def test_time_axes_use_a_unit_that_fits_the_span(span: float, unit: str) -> None:
    assert time_unit(span)[0] == unit


def test_gpu_share_is_in_every_utilisation_figure(gpu_trace_run: tuple[RunResult, Path]) -> None:
    result, _ = gpu_trace_run
    s = result.summary
    assert s["scheduled"] == PODS + SERVICES and s["unschedulable"] == 0
    placement = s["placement"]
    for key in ("utilisation", "utilisation_used_nodes", "imbalance"):
        assert GPU in placement[key], key
    # at peak, each of the 3 nodes holds one 1,500 of its 2,000
    assert placement["extended"][GPU] == {
        "capacity": 6000,
        "allocated": 0.75,
        "unallocated_on_partly_used_nodes": 0.25,
        "partly_used_nodes": 3,
    }
    over = s["over_time"]
    gpu_mean = over["utilisation_mean"][GPU]
    assert 0 < gpu_mean <= 0.75 and over["utilisation_max"][GPU] == 0.75
    # a node in use keeps a quarter of its GPUs: a third of what is allocated
    frag = over["unallocated_on_partly_used_nodes_mean"][GPU]
    assert frag == pytest.approx(gpu_mean / 3, abs=1e-5)


def test_gpu_series_over_time(gpu_trace_run: tuple[RunResult, Path]) -> None:
    result, _ = gpu_trace_run
    assert result.record is not None
    series = run_series(result.record)
    j = series.resources.index(GPU)
    e = j - 3
    np.testing.assert_allclose(series.fragmentation[:, e], series.utilisation[:, j] / 3)
    fig, axes = new_figure()
    draw_utilisation_over_time(fig, axes, series, virtual=True)
    ax = axes[0]
    assert "%" in ax.get_ylabel() and "simulated" in ax.get_xlabel()
    assert f"({time_unit(float(series.utilisation_t[-1]))[0]})" in ax.get_xlabel()
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == set(series.resources)
    # what is drawn is the ratio in percent, as the label says
    np.testing.assert_allclose(lines[GPU].get_ydata(), series.utilisation[:, j] * 100)


def test_pods_that_waited_are_reported(gpu_trace_run: tuple[RunResult, Path]) -> None:
    result, out = gpu_trace_run
    waiting = result.summary["waiting"]
    assert waiting["pods_waited"] > 0 and waiting["max_attempts"] > 1
    assert set(waiting["failed_attempts_by_reason"]) == {f"Insufficient {GPU}"}
    assert waiting["pending_seconds"]["max"] > 0
    charts = {p.stem for p in (out / "plots").glob("*.png")}
    assert {"extended_over_time", "waiting_reasons_over_time", "nodes_in_use"} <= charts
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Every pod was scheduled." not in page
    assert f"Insufficient {GPU}" in page
    summary = json.loads((out / "summary.json").read_text())
    assert summary["waiting"] == waiting
