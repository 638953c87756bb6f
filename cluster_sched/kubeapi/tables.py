"""Server-side printing: ``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``.

kubectl asks for a Table and, without one, prints only NAME and AGE. Pods, nodes and
events get kubectl's own columns (priority-1 columns are the ``-o wide`` ones; every cell
is always sent); every other kind gets the API server's default Name / Created At table.
Each row carries the object's metadata as a PartialObjectMetadata (or the whole object
with ``includeObject=Object``), which kubectl uses for NAMESPACE, labels and ``-L``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from cluster_sched.kubeapi.resources import Resource

__all__ = ["human_duration", "table", "wants_table"]

Col = tuple[str, str, str, int]  # name, type, format, priority

_POD_COLUMNS: list[Col] = [
    ("Name", "string", "name", 0),
    ("Ready", "string", "", 0),
    ("Status", "string", "", 0),
    ("Restarts", "string", "", 0),
    ("Age", "string", "", 0),
    ("IP", "string", "", 1),
    ("Node", "string", "", 1),
    ("Nominated Node", "string", "", 1),
    ("Readiness Gates", "string", "", 1),
]
_NODE_COLUMNS: list[Col] = [
    ("Name", "string", "name", 0),
    ("Status", "string", "", 0),
    ("Roles", "string", "", 0),
    ("Age", "string", "", 0),
    ("Version", "string", "", 0),
    ("Internal-IP", "string", "", 1),
    ("External-IP", "string", "", 1),
    ("OS-Image", "string", "", 1),
    ("Kernel-Version", "string", "", 1),
    ("Container-Runtime", "string", "", 1),
]
_EVENT_COLUMNS: list[Col] = [
    ("Last Seen", "string", "", 0),
    ("Type", "string", "", 0),
    ("Reason", "string", "", 0),
    ("Object", "string", "", 0),
    ("Subobject", "string", "", 1),
    ("Source", "string", "", 1),
    ("Message", "string", "", 0),
    ("First Seen", "string", "", 1),
    ("Count", "string", "", 1),
    ("Name", "string", "name", 1),
]
_DEFAULT_COLUMNS: list[Col] = [
    ("Name", "string", "name", 0),
    ("Created At", "date", "", 0),
]


def wants_table(accept: str) -> bool:
    """Does the Accept header ask for a meta.k8s.io Table first?"""
    first = accept.split(",")[0] if accept else ""
    params = {p.strip() for p in first.split(";")[1:]}
    return "as=Table" in params and "g=meta.k8s.io" in params


def human_duration(seconds: float) -> str:
    """kubectl's short ages (apimachinery ``duration.HumanDuration``)."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    return f"{hours // 24 // 365}y"


def _age(timestamp: Any, now: float) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        when = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "<unknown>"
    return human_duration(now - when)


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _pod_cells(pod: Mapping[str, Any], now: float) -> list[Any]:
    spec = _get(pod, "spec") or {}
    status = _get(pod, "status") or {}
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    total = len(containers) if isinstance(containers, list) else 0
    statuses = status.get("containerStatuses") if isinstance(status, Mapping) else None
    statuses = statuses if isinstance(statuses, list) else []
    ready = sum(1 for c in statuses if isinstance(c, Mapping) and c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses if isinstance(c, Mapping))
    reason = status.get("reason") or status.get("phase") or "Pending"
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") if isinstance(spec, Mapping) else None
    return [
        _get(pod, "metadata", "name") or "",
        f"{ready}/{total}",
        str(reason),
        restarts,
        _age(_get(pod, "metadata", "creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if isinstance(gates, list) and gates else "<none>",
    ]


def _node_cells(node: Mapping[str, Any], now: float) -> list[Any]:
    conditions = _get(node, "status", "conditions")
    ready = "Unknown"
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            ready = "Ready" if c.get("status") == "True" else "NotReady"
    status = [ready]
    if _get(node, "spec", "unschedulable"):
        status.append("SchedulingDisabled")
    labels = _get(node, "metadata", "labels") or {}
    roles = sorted(
        k.split("/", 1)[1]
        for k in (labels if isinstance(labels, Mapping) else {})
        if k.startswith("node-role.kubernetes.io/") and "/" in k
    )
    addresses = _get(node, "status", "addresses")
    by_type = {
        a.get("type"): a.get("address")
        for a in (addresses if isinstance(addresses, list) else [])
        if isinstance(a, Mapping)
    }
    info = _get(node, "status", "nodeInfo") or {}
    info = info if isinstance(info, Mapping) else {}
    return [
        _get(node, "metadata", "name") or "",
        ",".join(status),
        ",".join(roles) or "<none>",
        _age(_get(node, "metadata", "creationTimestamp"), now),
        info.get("kubeletVersion") or "",
        by_type.get("InternalIP") or "<none>",
        by_type.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _event_cells(event: Mapping[str, Any], now: float) -> list[Any]:
    involved = event.get("involvedObject") or {}
    involved = involved if isinstance(involved, Mapping) else {}
    source = event.get("source") or {}
    source = source if isinstance(source, Mapping) else {}
    last = event.get("lastTimestamp") or event.get("eventTime")
    return [
        _age(last, now),
        event.get("type") or "",
        event.get("reason") or "",
        f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
        involved.get("fieldPath") or "",
        source.get("component") or event.get("reportingComponent") or "",
        event.get("message") or "",
        _age(event.get("firstTimestamp") or last, now),
        event.get("count") or 1,
        _get(event, "metadata", "name") or "",
    ]


def _default_cells(obj: Mapping[str, Any], now: float) -> list[Any]:
    return [_get(obj, "metadata", "name") or "", _get(obj, "metadata", "creationTimestamp")]


_PRINTERS = {
    ("", "Pod"): (_POD_COLUMNS, _pod_cells),
    ("", "Node"): (_NODE_COLUMNS, _node_cells),
    ("", "Event"): (_EVENT_COLUMNS, _event_cells),
}


def _row_object(obj: Mapping[str, Any], resource: Resource, include: str) -> dict[str, Any]:
    if include == "Object":
        return dict(obj)
    meta = obj.get("metadata")
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(meta) if isinstance(meta, Mapping) else {},
    }


def table(
    resource: Resource,
    objects: Iterable[Mapping[str, Any]],
    resource_version: str,
    *,
    include_object: str = "Metadata",
    continue_token: str = "",
    with_columns: bool = True,
    now: float | None = None,
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of ``objects`` (all of ``resource``)."""
    columns, cells = _PRINTERS.get(
        (resource.group, resource.kind), (_DEFAULT_COLUMNS, _default_cells)
    )
    when = now if now is not None else dt.datetime.now(dt.UTC).timestamp()
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": cells(obj, when)}
        if include_object != "None":
            row["object"] = _row_object(obj, resource, include_object)
        rows.append(row)
    meta: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [
            {"name": n, "type": t, "format": f, "description": "", "priority": p}
            for n, t, f, p in columns
        ]
        if with_columns
        else [],
        "rows": rows,
    }
