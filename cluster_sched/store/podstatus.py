"""Pod status edits the scheduler makes: conditions and the nominated node.

``update_pod_condition`` is podutil.UpdatePodCondition: a condition is replaced whole, its
lastTransitionTime kept when the status did not change, and the caller learns whether
anything changed so an unchanged status is not written (no event, no new resourceVersion).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "POD_SCHEDULED",
    "pod_status_edit",
    "scheduled_condition",
    "unschedulable_condition",
    "update_pod_condition",
]

#: The condition type the scheduler owns.
POD_SCHEDULED = "PodScheduled"
#: status.conditions[].reason when no node fits (v1.PodReasonUnschedulable).
REASON_UNSCHEDULABLE = "Unschedulable"


def scheduled_condition(now: str) -> dict[str, Any]:
    """PodScheduled=True, as the binding subresource sets it."""
    return {
        "type": POD_SCHEDULED,
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }


def unschedulable_condition(message: str, reason: str = REASON_UNSCHEDULABLE) -> dict[str, Any]:
    """PodScheduled=False, as the scheduler's failure handler sets it (message: FitError)."""
    return {
        "type": POD_SCHEDULED,
        "status": "False",
        "lastProbeTime": None,
        "reason": reason,
        "message": message,
    }


def update_pod_condition(status: dict[str, Any], condition: Mapping[str, Any], now: str) -> bool:
    """Set ``condition`` in ``status["conditions"]`` (a list this function replaces, never
    mutates in place) and return whether anything changed."""
    new = dict(condition)
    new["lastTransitionTime"] = now
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = []
    for i, old in enumerate(conditions):
        if isinstance(old, Mapping) and old.get("type") == new.get("type"):
            if new.get("status") == old.get("status"):
                new["lastTransitionTime"] = old.get("lastTransitionTime")
            unchanged = all(
                new.get(f) == old.get(f)
                for f in ("status", "reason", "message", "lastProbeTime", "lastTransitionTime")
            )
            replaced = list(conditions)
            replaced[i] = new
            status["conditions"] = replaced
            return not unchanged
    status["conditions"] = [*conditions, new]
    return True


def pod_status_edit(
    condition: Mapping[str, Any] | None, nominated_node_name: str | None, now: str
) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The mutation of a stored pod that sets ``condition`` and/or status.nominatedNodeName
    ("" clears it; None leaves either alone), as the scheduler's ``updatePod`` patches
    status: None (no write) when neither differs."""

    def mutate(old: dict[str, Any]) -> dict[str, Any] | None:
        status = old.get("status")
        status = dict(status) if isinstance(status, Mapping) else {}
        changed = False
        if condition is not None:
            changed = update_pod_condition(status, condition, now)
        if nominated_node_name is not None:
            if status.get("nominatedNodeName", "") != nominated_node_name:
                changed = True
            if nominated_node_name:
                status["nominatedNodeName"] = nominated_node_name
            else:
                status.pop("nominatedNodeName", None)
        if not changed:
            return None
        new = dict(old)
        new["status"] = status
        return new

    return mutate
