"""The report of one evaluation run: summary figures, charts and report.html.

``build_record`` gathers what the run recorded (the store's final nodes and pods, the
run's :class:`~cluster_sched.scheduler.stats.RunStats`, the workload's pod groups) after
the scheduling loop stopped; ``report_summary`` turns it into summary.json's quality
keys; ``report.render.write_report`` draws the charts (matplotlib) and writes the page.
The package's import stays light: matplotlib is only imported by ``report.render``.
"""

from cluster_sched.report.record import RunRecord, build_record
from cluster_sched.report.summary import report_summary

__all__ = ["RunRecord", "build_record", "report_summary"]
