"""The pod trace format: one record per pod, replayed over virtual time.

A trace is JSONL (one object per line) or CSV (one row per pod, a header line first).
Fields, all optional but ``arrival``:

==========  ===============================================================================
name        pod name (default ``<group>-<line number>``)
arrival     seconds from the start of the run at which the pod is created (number)
lifetime    seconds the pod runs once bound, then completes; empty/absent: runs to the end
requests    resource requests: ``{"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}``
limits      resource limits, same shape
priority    integer ``spec.priority``
labels      pod labels: ``{"app": "web"}``
affinity    required node affinity, label -> allowed values: ``{"gpu-model": ["T4", "A10"]}``
==========  ===============================================================================

In CSV, ``requests``, ``limits`` and ``labels`` are ``key=value`` pairs joined by ``;``
(``cpu=500m;memory=1Gi``) and ``affinity`` is ``key=v1|v2`` pairs joined by ``;``.
A Workload's pod group replays a trace with ``trace: FILE`` (a path relative to the
workload file); its ``template`` supplies everything else (namespace, schedulerName,
image).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_sched.api.files import read_text
from cluster_sched.api.tree import copy_tree
from cluster_sched.errors import InvalidObjectError

__all__ = ["TraceRecord", "read_trace", "trace_pod", "write_trace_jsonl"]

#: The container a trace pod runs when the template names none.
DEFAULT_CONTAINER = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
CSV_FIELDS = ("name", "arrival", "lifetime", "requests", "limits", "priority", "labels", "affinity")


@dataclass(frozen=True, slots=True)
class TraceRecord:
    arrival: float
    name: str = ""
    lifetime: float | None = None
    requests: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, Any] = field(default_factory=dict)
    priority: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arrival": self.arrival}
        if self.lifetime is not None:
            out["lifetime"] = self.lifetime
        for key in ("requests", "limits", "labels", "affinity"):
            value = getattr(self, key)
            if value:
                out[key] = {k: list(v) if key == "affinity" else v for k, v in value.items()}
        if self.priority is not None:
            out["priority"] = self.priority
        return out


def _bad(message: str, where: str, source: str) -> InvalidObjectError:
    return InvalidObjectError(message, obj="trace record", field=where, source=source)


def _number(value: Any, where: str, source: str, *, optional: bool) -> float | None:
    if value is None or value == "":
        if optional:
            return None
        raise _bad("is required", where, source)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _bad(f"must be a number, got {value!r}", where, source) from None
    if number < 0 or number != number:
        raise _bad(f"must be a non-negative number, got {value!r}", where, source)
    return number


def _pairs(text: str, where: str, source: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _bad(f"expected key=value pairs joined by ';', got {item!r}", where, source)
        out[key.strip()] = value.strip()
    return out


def _record(raw: Mapping[str, Any], line: int, source: str, *, csv_row: bool) -> TraceRecord:
    where = f"line {line}"

    def mapping(key: str) -> dict[str, Any]:
        value = raw.get(key)
        if value is None or value == "":
            return {}
        if csv_row and isinstance(value, str):
            return _pairs(value, f"{where}.{key}", source)
        if not isinstance(value, Mapping):
            raise _bad(f"must be an object, got {value!r}", f"{where}.{key}", source)
        return dict(value)

    affinity_raw = mapping("affinity")
    affinity = {
        k: tuple(v.split("|") if isinstance(v, str) else v) for k, v in affinity_raw.items()
    }
    priority = raw.get("priority")
    if priority is None or priority == "":
        prio = None
    else:
        try:
            prio = int(priority)
        except (TypeError, ValueError):
            raise _bad(
                f"must be an integer, got {priority!r}", f"{where}.priority", source
            ) from None
    arrival = _number(raw.get("arrival"), f"{where}.arrival", source, optional=False)
    assert arrival is not None
    return TraceRecord(
        arrival=arrival,
        name=str(raw.get("name") or ""),
        lifetime=_number(raw.get("lifetime"), f"{where}.lifetime", source, optional=True),
        requests=mapping("requests"),
        limits=mapping("limits"),
        priority=prio,
        labels={k: str(v) for k, v in mapping("labels").items()},
        affinity=affinity,
    )


def read_trace(path: str | Path) -> list[TraceRecord]:
    """Every record of a JSONL or CSV trace, sorted by arrival (stable: ties keep file
    order). A bad record is an error naming its line and field."""
    source = str(path)
    text = read_text(path, "trace")
    records: list[TraceRecord] = []
    if source.endswith(".csv"):
        for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            records.append(_record(row, i, source, csv_row=True))
    else:
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as err:
                raise _bad(f"not JSON: {err.msg}", f"line {i}", source) from None
            if not isinstance(raw, Mapping):
                raise _bad("must be a JSON object", f"line {i}", source)
            records.append(_record(raw, i, source, csv_row=False))
    if not records:
        raise InvalidObjectError("the file holds no records (empty trace)", source=source)
    records.sort(key=lambda r: r.arrival)
    return records


def write_trace_jsonl(records: Sequence[TraceRecord], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r.as_json(), sort_keys=True) + "\n")


def trace_pod(
    record: TraceRecord, name: str, template: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The Pod manifest of one record, on ``template`` (namespace, image, ...)."""
    doc = copy_tree(dict(template or {}))
    doc.setdefault("apiVersion", "v1")
    doc["kind"] = "Pod"
    meta = dict(doc.get("metadata") or {})
    meta.pop("generateName", None)
    meta["name"] = name
    meta.setdefault("namespace", "default")
    if record.labels:
        meta["labels"] = {**(meta.get("labels") or {}), **record.labels}
    doc["metadata"] = meta
    spec = dict(doc.get("spec") or {})
    containers = [dict(c) for c in spec.get("containers") or [DEFAULT_CONTAINER]]
    resources = dict(containers[0].get("resources") or {})
    if record.requests:
        resources["requests"] = {k: _quantity(v) for k, v in record.requests.items()}
    if record.limits:
        resources["limits"] = {k: _quantity(v) for k, v in record.limits.items()}
    if resources:
        containers[0]["resources"] = resources
    spec["containers"] = containers
    if record.priority is not None:
        spec["priority"] = record.priority
    if record.affinity:
        terms = [
            {"key": k, "operator": "In", "values": list(v)} for k, v in record.affinity.items()
        ]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": terms}]
                }
            }
        }
    doc["spec"] = spec
    return doc


def _quantity(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def trace_manifests(
    records: Sequence[TraceRecord], prefix: str, template: Mapping[str, Any] | None
) -> Iterator[dict[str, Any]]:
    for i, record in enumerate(records):
        yield trace_pod(record, record.name or f"{prefix}{i}", template)
