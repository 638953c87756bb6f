"""What ``cluster-sched get`` and ``describe`` print, as kubectl prints it.

Pure functions from stored manifests (and recorded Events) to text or to v1 objects, so
they are tested without Redis: kubectl's column sets and cell values
(``printers/internalversion``), its ages (``duration.HumanDuration``) and its tab-aligned
layout (Go's text/tabwriter: padding 3 for tables, 2 for describe). The store keeps no
kubelet state, so READY counts come from ``status.containerStatuses`` when present (0
otherwise) and STATUS from ``status.phase`` (Pending when unset), as kubectl shows a pod
no kubelet has reported on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "NONE",
    "age",
    "describe_event_rows",
    "event_object",
    "event_rows",
    "events_section",
    "human_duration",
    "map_lines",
    "node_rows",
    "pod_rows",
    "render_describe_pod",
    "roles",
    "tabwrite",
    "toleration",
    "v1_list",
]

#: How kubectl shows an empty optional cell.
NONE = "<none>"
#: The ``source.component`` of every Event the scheduler records.
SCHEDULER_COMPONENT = "default-scheduler"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def human_duration(seconds: float) -> str:
    """kubectl's HumanDuration (k8s.io/apimachinery/pkg/util/duration)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any, now: datetime) -> str:
    when = _parse_time(timestamp)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def tabwrite(rows: Sequence[Sequence[str]], padding: int = 3) -> str:
    """Go's text/tabwriter over rows of cells: every cell but a row's last is padded to
    the widest cell of its column block (consecutive rows that have that cell)."""
    out = [""] * len(rows)

    def block(start: int, end: int, col: int) -> None:
        i = start
        while i < end:
            if len(rows[i]) - 1 > col:
                j = i
                while j < end and len(rows[j]) - 1 > col:
                    j += 1
                width = max(len(rows[k][col]) for k in range(i, j)) + padding
                for k in range(i, j):
                    out[k] += rows[k][col].ljust(width)
                block(i, j, col + 1)
                i = j
            else:
                if col < len(rows[i]):
                    out[i] += rows[i][col]
                i += 1

    block(0, len(rows), 0)
    return "\n".join(line.rstrip() for line in out)


def _meta(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = doc.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _section(doc: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = doc.get(name)
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


# --------------------------------------------------------------------------- pods


def _pod_status(doc: Mapping[str, Any]) -> str:
    if _meta(doc).get("deletionTimestamp"):
        return "Terminating"
    status = _section(doc, "status")
    reason = status.get("reason")
    if isinstance(reason, str) and reason:
        return reason
    phase = status.get("phase")
    return phase if isinstance(phase, str) and phase else "Pending"


def _ready(doc: Mapping[str, Any]) -> str:
    containers = _list(_section(doc, "spec").get("containers"))
    statuses = _list(_section(doc, "status").get("containerStatuses"))
    ready = sum(1 for s in statuses if isinstance(s, Mapping) and s.get("ready") is True)
    return f"{ready}/{len(containers)}"


def _restarts(doc: Mapping[str, Any]) -> str:
    statuses = _list(_section(doc, "status").get("containerStatuses"))
    total = 0
    for s in statuses:
        count = s.get("restartCount") if isinstance(s, Mapping) else 0
        total += count if isinstance(count, int) else 0
    return str(total)


def _readiness_gates(doc: Mapping[str, Any]) -> str:
    gates = _list(_section(doc, "spec").get("readinessGates"))
    if not gates:
        return NONE
    conditions = {
        c.get("type"): c.get("status")
        for c in _list(_section(doc, "status").get("conditions"))
        if isinstance(c, Mapping)
    }
    wanted = [g.get("conditionType") for g in gates if isinstance(g, Mapping)]
    ready = sum(1 for t in wanted if conditions.get(t) == "True")
    return f"{ready}/{len(gates)}"


def _or_none(value: Any) -> str:
    return value if isinstance(value, str) and value else NONE


def pod_rows(
    docs: Sequence[Mapping[str, Any]], now: datetime, *, wide: bool, namespaces: bool
) -> list[list[str]]:
    """Header and one row per pod: NAME READY STATUS RESTARTS AGE (+ wide columns)."""
    header = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    if wide:
        header += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    rows = [["NAMESPACE", *header] if namespaces else header]
    for doc in docs:
        meta = _meta(doc)
        row = [str(meta.get("name", "")), _ready(doc), _pod_status(doc), _restarts(doc)]
        row.append(age(meta.get("creationTimestamp"), now))
        if wide:
            status = _section(doc, "status")
            row += [
                _or_none(status.get("podIP")),
                _or_none(_section(doc, "spec").get("nodeName")),
                _or_none(status.get("nominatedNodeName")),
                _readiness_gates(doc),
            ]
        rows.append([str(meta.get("namespace", "")), *row] if namespaces else row)
    return rows


# --------------------------------------------------------------------------- nodes

_ROLE_PREFIX = "node-role.kubernetes.io/"


def _node_status(doc: Mapping[str, Any]) -> str:
    ready = "Unknown"
    for c in _list(_section(doc, "status").get("conditions")):
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            ready = "Ready" if c.get("status") == "True" else "NotReady"
    if _section(doc, "spec").get("unschedulable") is True:
        return f"{ready},SchedulingDisabled"
    return ready


def roles(doc: Mapping[str, Any]) -> str:
    labels = _meta(doc).get("labels")
    roles: set[str] = set()
    if isinstance(labels, Mapping):
        for key, value in labels.items():
            if isinstance(key, str) and key.startswith(_ROLE_PREFIX) and key[len(_ROLE_PREFIX) :]:
                roles.add(key[len(_ROLE_PREFIX) :])
            elif key == "kubernetes.io/role" and isinstance(value, str) and value:
                roles.add(value)
    return ",".join(sorted(roles)) or NONE


def _address(doc: Mapping[str, Any], kind: str) -> str:
    for a in _list(_section(doc, "status").get("addresses")):
        if isinstance(a, Mapping) and a.get("type") == kind and a.get("address"):
            return str(a["address"])
    return NONE


def node_rows(docs: Sequence[Mapping[str, Any]], now: datetime, *, wide: bool) -> list[list[str]]:
    """Header and one row per node: NAME STATUS ROLES AGE VERSION (+ wide columns)."""
    header = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    if wide:
        header += ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    rows = [header]
    for doc in docs:
        meta = _meta(doc)
        info = _section(_section(doc, "status"), "nodeInfo")
        row = [str(meta.get("name", "")), _node_status(doc), roles(doc)]
        row += [age(meta.get("creationTimestamp"), now), str(info.get("kubeletVersion", ""))]
        if wide:
            row += [
                _address(doc, "InternalIP"),
                _address(doc, "ExternalIP"),
                str(info.get("osImage") or "<unknown>"),
                str(info.get("kernelVersion") or "<unknown>"),
                str(info.get("containerRuntimeVersion") or "<unknown>"),
            ]
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- events


def _split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


def event_object(record: Mapping[str, str]) -> dict[str, Any]:
    """A recorded Event as the v1 Event object kubectl would show (core/v1, not
    events.k8s.io): involvedObject, reason, message, type, count 1, timestamps, source.
    Events about cluster-scoped objects live in ``default``, as the API server keeps them."""
    namespace, name = _split_key(record.get("key", ""))
    involved: dict[str, Any] = {"kind": record.get("kind", ""), "name": name}
    if namespace:
        involved["namespace"] = namespace
    # A stable name like the recorder's "<object>.<hex>": from the stream id.
    suffix = hashlib.sha256(record.get("id", "").encode()).hexdigest()[:16]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{name}.{suffix}",
            "namespace": namespace or "default",
            "creationTimestamp": record.get("time", ""),
        },
        "involvedObject": involved,
        "reason": record.get("reason", ""),
        "message": record.get("message", ""),
        "type": record.get("type", "Normal"),
        "action": record.get("action", ""),
        "count": 1,
        "firstTimestamp": record.get("time", ""),
        "lastTimestamp": record.get("time", ""),
        "source": {"component": SCHEDULER_COMPONENT},
        "reportingComponent": SCHEDULER_COMPONENT,
    }


def event_rows(
    events: Sequence[Mapping[str, Any]], now: datetime, *, namespaces: bool
) -> list[list[str]]:
    """Header and one row per v1 Event: LAST SEEN TYPE REASON OBJECT MESSAGE."""
    header = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    rows = [["NAMESPACE", *header] if namespaces else header]
    for ev in events:
        involved = ev["involvedObject"]
        row = [
            age(ev.get("lastTimestamp"), now),
            str(ev.get("type", "")),
            str(ev.get("reason", "")),
            f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
            str(ev.get("message", "")).replace("\n", " "),
        ]
        rows.append([ev["metadata"]["namespace"], *row] if namespaces else row)
    return rows


def v1_list(items: Sequence[Any]) -> dict[str, Any]:
    """kubectl's ``-o json|yaml`` envelope for several objects."""
    return {
        "apiVersion": "v1",
        "items": list(items),
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


# --------------------------------------------------------------------------- describe


def map_lines(label: str, value: Any) -> list[list[str]]:
    if not isinstance(value, Mapping) or not value:
        return [[f"{label}:", NONE]]
    lines = [[f"{label}:", f"{k}={v}"] for k, v in sorted(value.items())[:1]]
    lines += [["", f"{k}={v}"] for k, v in sorted(value.items())[1:]]
    return lines


def _container_lines(doc: Mapping[str, Any]) -> list[list[str]]:
    out: list[list[str]] = []
    for c in _list(_section(doc, "spec").get("containers")):
        if not isinstance(c, Mapping):
            continue
        out.append([f"  {c.get('name', '')}:"])
        out.append(["    Image:", str(c.get("image", ""))])
        resources = c.get("resources") if isinstance(c.get("resources"), Mapping) else {}
        for title in ("limits", "requests"):
            amounts = resources.get(title) if isinstance(resources, Mapping) else None
            if isinstance(amounts, Mapping) and amounts:
                out.append([f"    {title.capitalize()}:"])
                out += [[f"      {k}:", str(v)] for k, v in sorted(amounts.items())]
    return out


def render_describe_pod(
    doc: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: datetime
) -> str:
    """``kubectl describe pod``: identity, node, nominated node, status, containers,
    conditions and the pod's Events (oldest first)."""
    meta = _meta(doc)
    spec = _section(doc, "spec")
    status = _section(doc, "status")
    node = spec.get("nodeName")
    rows: list[list[str]] = [
        ["Name:", str(meta.get("name", ""))],
        ["Namespace:", str(meta.get("namespace", ""))],
        ["Priority:", str(spec.get("priority", 0))],
    ]
    if spec.get("priorityClassName"):
        rows.append(["Priority Class Name:", str(spec["priorityClassName"])])
    rows.append(["Service Account:", str(spec.get("serviceAccountName") or "default")])
    rows.append(["Node:", f"{node}/{status.get('hostIP') or ''}" if node else NONE])
    if meta.get("creationTimestamp"):
        rows.append(["Start Time:", str(status.get("startTime") or NONE)])
    rows += map_lines("Labels", meta.get("labels"))
    rows += map_lines("Annotations", meta.get("annotations"))
    rows.append(["Status:", _pod_status(doc)])
    rows.append(["IP:", str(status.get("podIP") or "")])
    if status.get("nominatedNodeName"):
        rows.append(["NominatedNodeName:", str(status["nominatedNodeName"])])
    rows.append(["Containers:"])
    rows += _container_lines(doc)
    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, Mapping)]
    if conditions:
        rows.append(["Conditions:"])
        rows.append(["  Type", "Status"])
        rows += [[f"  {c.get('type', '')} ", f"{c.get('status', '')} "] for c in conditions]
    selector = spec.get("nodeSelector")
    rows.append(
        [
            "Node-Selectors:",
            ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
            if isinstance(selector, Mapping) and selector
            else NONE,
        ]
    )
    tolerations = [t for t in _list(spec.get("tolerations")) if isinstance(t, Mapping)]
    rows.append(["Tolerations:", toleration(tolerations[0]) if tolerations else NONE])
    rows += [["", toleration(t)] for t in tolerations[1:]]
    return f"{tabwrite(rows, padding=2)}\n{events_section(events, now)}"


def describe_event_rows(events: Sequence[Mapping[str, Any]], now: datetime) -> list[list[str]]:
    """The rows of ``kubectl describe``'s Events table (header first, oldest first)."""
    table = [["  Type", "Reason", "Age", "From", "Message"]]
    table.append(["  ----", "------", "----", "----", "-------"])
    for ev in events:
        table.append(
            [
                f"  {ev.get('type', '')}",
                str(ev.get("reason", "")),
                age(ev.get("lastTimestamp"), now),
                str(ev.get("source", {}).get("component", "")),
                str(ev.get("message", "")).replace("\n", " "),
            ]
        )
    return table


def events_section(events: Sequence[Mapping[str, Any]], now: datetime) -> str:
    """``kubectl describe``'s closing ``Events:`` table (oldest first), or ``<none>``."""
    if not events:
        return f"Events:{' ' * 10}{NONE}\n"
    return f"Events:\n{tabwrite(describe_event_rows(events, now), padding=2)}\n"


def toleration(t: Mapping[str, Any]) -> str:
    text = str(t.get("key", ""))
    if t.get("value"):
        text += f"={t['value']}"
    if t.get("effect"):
        text += f":{t['effect']}"
    if t.get("operator") == "Exists" and not t.get("key"):
        text = "op=Exists" + (f":{t['effect']}" if t.get("effect") else "")
    if t.get("tolerationSeconds") is not None:
        text += f" for {t['tolerationSeconds']}s"
    return text


def now_utc() -> datetime:
    """The wall clock, for ages (objects carry RFC 3339 UTC timestamps)."""
    return datetime.now(UTC)
