"""``kubectl describe node``: identity, taints, conditions, capacity and allocatable,
the pods on the node with their requests and limits, the node's allocated resources
and its Events.

Requests are what the scheduler counts (``api.requests``: containers, the largest init
container, sidecars, overhead); limits are the containers' limits summed. Percentages
are of the node's allocatable, truncated as kubectl truncates them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import TERMINAL_POD_PHASES
from cluster_sched.api.quantity import format_quantity, parse_quantity
from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.inspect_render import (
    NONE,
    age,
    events_section,
    map_lines,
    roles,
    tabwrite,
)

__all__ = ["pods_on_node", "render_describe_node"]

#: The resources of the pods table and of "Allocated resources", in kubectl's order.
_TABLE_RESOURCES = ("cpu", "memory")


def pods_on_node(pods: Sequence[Mapping[str, Any]], node: str) -> list[Mapping[str, Any]]:
    """The non-terminated pods bound to ``node`` (kubectl's "Non-terminated Pods")."""
    out = []
    for doc in pods:
        spec = doc.get("spec") or {}
        phase = (doc.get("status") or {}).get("phase")
        if spec.get("nodeName") == node and phase not in TERMINAL_POD_PHASES:
            out.append(doc)
    return out


def _resources(value: Any) -> dict[str, int]:
    """A node's capacity/allocatable as canonical integers (unparsable entries left out:
    describe shows what it can)."""
    out: dict[str, int] = {}
    if isinstance(value, Mapping):
        for name, text in value.items():
            try:
                out[str(name)] = parse_quantity(text, resource=str(name))
            except (InvalidObjectError, TypeError, ValueError):
                continue
    return out


def _resource_lines(label: str, amounts: Mapping[str, int]) -> list[list[str]]:
    if not amounts:
        return []  # a manifest without the section (allocatable defaults to capacity)
    lines = [[f"{label}:"]]
    lines += [[f"  {name}:", format_quantity(v, name)] for name, v in sorted(amounts.items())]
    return lines


def _share(value: int, resource: str, allocatable: Mapping[str, int]) -> str:
    total = allocatable.get(resource, 0)
    percent = int(value / total * 100) if total else 0
    return f"{format_quantity(value, resource)} ({percent}%)"


def _requests_and_limits(doc: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    try:
        pod = parse_pod(dict(doc))
    except InvalidObjectError:
        return {}, {}
    limits: dict[str, int] = {}
    for container in pod.containers:
        for name, value in container.limits.items():
            limits[name] = limits.get(name, 0) + value
    return dict(pod.requests), limits


def _conditions(status: Mapping[str, Any]) -> list[list[str]]:
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    if not conditions:
        return [["Conditions:", NONE]]
    rows = [["Conditions:"], ["  Type", "Status", "Reason", "Message"]]
    rows.append(["  ----", "------", "------", "-------"])
    rows += [
        [
            f"  {c.get('type', '')}",
            str(c.get("status", "")),
            str(c.get("reason", "")),
            str(c.get("message", "")),
        ]
        for c in conditions
    ]
    return rows


def _taints(spec: Mapping[str, Any]) -> list[list[str]]:
    taints = [t for t in spec.get("taints") or () if isinstance(t, Mapping)]
    texts = [
        f"{t.get('key', '')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect', '')}"
        for t in taints
    ]
    if not texts:
        return [["Taints:", NONE]]
    return [["Taints:", texts[0]], *[["", text] for text in texts[1:]]]


def _pods_table(
    pods: Sequence[Mapping[str, Any]], allocatable: Mapping[str, int], now: datetime
) -> tuple[str, dict[str, int], dict[str, int]]:
    header = ["  Namespace", "Name", "CPU Requests", "CPU Limits"]
    header += ["Memory Requests", "Memory Limits", "Age"]
    table = [header, ["  " + "-" * 9, "----", "-" * 12, "-" * 10, "-" * 15, "-" * 13, "---"]]
    total_req: dict[str, int] = {}
    total_lim: dict[str, int] = {}
    for doc in pods:
        meta = doc.get("metadata") or {}
        req, lim = _requests_and_limits(doc)
        for name, value in req.items():
            total_req[name] = total_req.get(name, 0) + value
        for name, value in lim.items():
            total_lim[name] = total_lim.get(name, 0) + value
        row = [f"  {meta.get('namespace', '')}", str(meta.get("name", ""))]
        for resource in _TABLE_RESOURCES:
            row += [
                _share(req.get(resource, 0), resource, allocatable),
                _share(lim.get(resource, 0), resource, allocatable),
            ]
        row.append(age(meta.get("creationTimestamp"), now))
        table.append(row)
    return tabwrite(table, padding=2), total_req, total_lim


def render_describe_node(
    doc: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    now: datetime,
) -> str:
    """``kubectl describe node`` for ``doc`` with the non-terminated ``pods`` bound to
    it (:func:`pods_on_node`) and its Events (oldest first)."""
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    status = doc.get("status") or {}
    capacity = _resources(status.get("capacity"))
    allocatable = _resources(status.get("allocatable")) or dict(capacity)
    rows: list[list[str]] = [
        ["Name:", str(meta.get("name", ""))],
        ["Roles:", roles(doc)],
        *map_lines("Labels", meta.get("labels")),
        *map_lines("Annotations", meta.get("annotations")),
        ["CreationTimestamp:", str(meta.get("creationTimestamp") or NONE)],
        *_taints(spec),
        ["Unschedulable:", "true" if spec.get("unschedulable") is True else "false"],
        *_conditions(status),
        ["Addresses:"],
        *[
            [f"  {a.get('type', '')}:", str(a.get("address", ""))]
            for a in status.get("addresses") or ()
            if isinstance(a, Mapping)
        ],
        *_resource_lines("Capacity", capacity),
        *_resource_lines("Allocatable", allocatable),
    ]
    table, requests, limits = _pods_table(pods, allocatable, now)
    allocated = [["  Resource", "Requests", "Limits"], ["  --------", "--------", "------"]]
    names = sorted({*_TABLE_RESOURCES, *requests, *limits} - {"pods"})
    allocated += [
        [
            f"  {name}",
            _share(requests.get(name, 0), name, allocatable),
            _share(limits.get(name, 0), name, allocatable),
        ]
        for name in names
    ]
    return (
        f"{tabwrite(rows, padding=2)}\n"
        f"Non-terminated Pods:  ({len(pods)} in total)\n{table}\n"
        "Allocated resources:\n"
        "  (Total limits may be over 100 percent, i.e., overcommitted.)\n"
        f"{tabwrite(allocated, padding=2)}\n"
        f"{events_section(events, now)}"
    )
