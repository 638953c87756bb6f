"""Write a run's report: ``DIR/plots/*.png`` and the self-contained ``DIR/report.html``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cluster_sched.report.html import render_html
from cluster_sched.report.plots import Chart, PlotContext, write_plots
from cluster_sched.report.quality import node_usage
from cluster_sched.report.record import RunRecord
from cluster_sched.report.series import (
    bound_over_time,
    left_over_time,
    nodes_in_use,
    run_series,
    time_unit,
    usage_at_peak,
)
from cluster_sched.report.waiting import waiting_over_time

__all__ = ["REPORT_FILE", "write_report"]

#: The page's file name inside the output directory.
REPORT_FILE = "report.html"
#: The charts' directory inside the output directory.
PLOTS_DIR = "plots"


def write_report(record: RunRecord, summary: Mapping[str, Any], out_dir: Path) -> list[Chart]:
    """Draw the charts and write the page; ``summary`` must carry ``report_summary``'s
    keys beside the run's own. Returns the charts written."""
    virtual = summary.get("clock") == "virtual"
    series = run_series(record)
    if virtual:
        # pods complete: the end of the run may be an empty cluster
        usage, when = usage_at_peak(record)
        unit, seconds = time_unit(when)
        usage_when = f"at peak cpu allocation ({when / seconds:.3g} {unit} simulated)"
    else:
        usage, usage_when = node_usage(record), "at the end of the run"
    waiting = summary.get("waiting") or {}
    ctx = PlotContext(
        virtual=virtual,
        waiting=waiting_over_time(record) if waiting.get("failed_attempts") else None,
        failed_by_reason=waiting.get("failed_attempts_by_reason"),
        nodes_in_use=nodes_in_use(record),
        running=bound_over_time(record),
        left=left_over_time(record),
        usage_when=usage_when,
    )
    charts = write_plots(
        out_dir / PLOTS_DIR, series, usage, summary.get("unschedulable_reasons") or {}, ctx
    )
    (out_dir / REPORT_FILE).write_text(render_html(summary, charts), encoding="utf-8")
    return charts
