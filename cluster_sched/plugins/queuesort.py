"""PrioritySort: QueueSort by priority (higher first), then queue timestamp (earlier first)."""

from __future__ import annotations

from typing import Any

from cluster_sched.framework.handle import Handle
from cluster_sched.plugins.names import PRIORITY_SORT

NAME = PRIORITY_SORT


class PrioritySort:
    name = NAME

    def less(self, a: Any, b: Any) -> bool:
        """``a``/``b`` carry ``priority`` and ``timestamp`` (QueuedPodInfo)."""
        return a.priority > b.priority or (a.priority == b.priority and a.timestamp < b.timestamp)

    def sort_key(self, priority: int, timestamp: float) -> tuple[float, str]:
        # A sorted set orders by score, then members lexicographically: -priority is exact
        # in a double, and a zero-padded microsecond timestamp sorts as time does.
        return float(-priority), f"{round(timestamp * 1_000_000):020d}"


def new(args: Any, handle: Handle) -> PrioritySort:
    return PrioritySort()
