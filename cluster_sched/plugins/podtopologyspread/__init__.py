"""PodTopologySpread: spread constraints in Filter (DoNotSchedule) and Score (ScheduleAnyway)."""

from cluster_sched.plugins.podtopologyspread.plugin import NAME, PodTopologySpread, new

__all__ = ["NAME", "PodTopologySpread", "new"]
