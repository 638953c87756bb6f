"""Write a run's report: ``DIR/plots/*.png`` and the self-contained ``DIR/report.html``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cluster_sched.report.html import render_html
from cluster_sched.report.plots import Chart, write_plots
from cluster_sched.report.quality import node_usage
from cluster_sched.report.record import RunRecord
from cluster_sched.report.series import run_series

__all__ = ["REPORT_FILE", "write_report"]

#: The page's file name inside the output directory.
REPORT_FILE = "report.html"
#: The charts' directory inside the output directory.
PLOTS_DIR = "plots"


def write_report(record: RunRecord, summary: Mapping[str, Any], out_dir: Path) -> list[Chart]:
    """Draw the charts and write the page; ``summary`` must carry ``report_summary``'s
    keys beside the run's own. Returns the charts written."""
    charts = write_plots(
        out_dir / PLOTS_DIR,
        run_series(record),
        node_usage(record),
        summary.get("unschedulable_reasons") or {},
    )
    (out_dir / REPORT_FILE).write_text(render_html(summary, charts), encoding="utf-8")
    return charts
