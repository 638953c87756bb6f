"""Kubernetes Events, as core/v1 and events.k8s.io/v1 objects over the store's one stream.

The store keeps Events (Scheduled, FailedScheduling, Preempted, ...) as rows of its
``kevents`` stream: kind, key, type, reason, action, message, time. Each row is shown as
a core/v1 Event named ``<object>.<stream id>`` with the regarding object's current uid
(so ``kubectl describe``'s ``involvedObject.uid=`` selector finds it), and as an
events.k8s.io/v1 Event by upstream's field mapping (involvedObject → regarding, message →
note, count → deprecatedCount). Events posted through either API become rows too.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from cluster_sched.kubeapi.errors import bad_request, invalid
from cluster_sched.store.codec import unpack_object
from cluster_sched.store.kinds import CLUSTER_SCOPED_KINDS, NAMESPACED_KINDS
from cluster_sched.store.objects import text
from cluster_sched.store.store import Store

__all__ = ["core_event", "event_rows", "event_v1", "record", "rows_after"]

_API_VERSIONS = {
    "Pod": "v1",
    "Node": "v1",
    "Namespace": "v1",
    "PodDisruptionBudget": "policy/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
}


def event_rows(store: Store) -> list[dict[str, str]]:
    return store.events()


def rows_after(store: Store, last_id: str, block_ms: int) -> list[dict[str, str]]:
    """Rows after stream id ``last_id``, waiting up to ``block_ms`` for the first."""
    reply: Any = store.client.xread({store.keys.kevents: last_id}, count=1000, block=block_ms)
    out: list[dict[str, str]] = []
    if not reply:
        return out
    if isinstance(reply, dict):  # RESP3: {name: [[(id, fields), ...]]}
        (value,) = reply.values()
        entries = value[0] if value and isinstance(value[0], list) else value
    else:
        entries = reply[0][1]
    for entry_id, fields in entries:
        row = {text(k): text(v) for k, v in fields.items()}
        row["id"] = text(entry_id)
        out.append(row)
    return out


def last_row_id(store: Store) -> str:
    last: Any = store.client.xrevrange(store.keys.kevents, "+", "-", count=1)
    return text(last[0][0]) if last else "0-0"


def uids_for(store: Store, rows: list[dict[str, str]]) -> dict[tuple[str, str], str]:
    """The current uid of each (kind, key) the rows are about, one HMGET per kind."""
    wanted: dict[str, set[str]] = {}
    for row in rows:
        kind = row.get("kind", "")
        if kind in CLUSTER_SCOPED_KINDS or kind in NAMESPACED_KINDS:
            wanted.setdefault(kind, set()).add(row.get("key", ""))
    out: dict[tuple[str, str], str] = {}
    for kind, keys in wanted.items():
        ordered = sorted(keys)
        raw: Any = store.client.hmget(store.keys.obj(kind), ordered)
        for key, data in zip(ordered, raw, strict=True):
            if data is None:
                continue
            try:
                uid = (unpack_object(data, kind, key).get("metadata") or {}).get("uid")
            except Exception:  # an unreadable object just has no uid to show
                continue
            if isinstance(uid, str):
                out[(kind, key)] = uid
    return out


def core_event(row: Mapping[str, str], uid: str, resource_version: str) -> dict[str, Any]:
    kind, key = row.get("kind", ""), row.get("key", "")
    namespace, _, name = key.rpartition("/")
    event_ns = namespace or "default"
    stream_id = row.get("id", "0-0").replace("-", ".")
    when = row.get("time", "")
    second = when.split(".")[0] + "Z" if "." in when else when
    involved: dict[str, Any] = {"kind": kind, "name": name}
    if namespace:
        involved["namespace"] = namespace
    if uid:
        involved["uid"] = uid
    if kind in _API_VERSIONS:
        involved["apiVersion"] = _API_VERSIONS[kind]
    return {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {
            "name": f"{name}.{stream_id}",
            "namespace": event_ns,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, row.get("id", ""))),
            "resourceVersion": resource_version,
            "creationTimestamp": second,
        },
        "involvedObject": involved,
        "reason": row.get("reason", ""),
        "message": row.get("message", ""),
        "source": {"component": "default-scheduler"},
        "firstTimestamp": second,
        "lastTimestamp": second,
        "count": 1,
        "type": row.get("type", "Normal"),
        "eventTime": None,
        "action": row.get("action", "") or None,
        "reportingComponent": "default-scheduler",
        "reportingInstance": "",
    }


def event_v1(core: Mapping[str, Any]) -> dict[str, Any]:
    """The events.k8s.io/v1 view of a core/v1 Event (upstream's conversion)."""
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": core["metadata"],
        "eventTime": core.get("eventTime") or core.get("lastTimestamp"),
        "reportingController": core.get("reportingComponent", ""),
        "reportingInstance": core.get("reportingInstance", ""),
        "action": core.get("action") or "",
        "reason": core.get("reason", ""),
        "regarding": core.get("involvedObject", {}),
        "note": core.get("message", ""),
        "type": core.get("type", ""),
        "deprecatedSource": core.get("source", {}),
        "deprecatedFirstTimestamp": core.get("firstTimestamp"),
        "deprecatedLastTimestamp": core.get("lastTimestamp"),
        "deprecatedCount": core.get("count", 1),
    }


def record(store: Store, body: Mapping[str, Any], group: str, namespace: str) -> dict[str, str]:
    """Record a posted Event (either API's shape) as a stream row; the row written."""
    regarding = body.get("regarding" if group else "involvedObject")
    if not isinstance(regarding, Mapping):
        raise invalid("Event", "", "Required value", "regarding" if group else "involvedObject")
    kind, name = regarding.get("kind"), regarding.get("name")
    if not isinstance(kind, str) or not isinstance(name, str) or not kind or not name:
        raise invalid("Event", "", "kind and name are required", "involvedObject")
    obj_ns = regarding.get("namespace") or ""
    if kind in NAMESPACED_KINDS and not obj_ns:
        obj_ns = namespace
    key = f"{obj_ns}/{name}" if obj_ns and kind not in CLUSTER_SCOPED_KINDS else name
    event_type = body.get("type") or "Normal"
    if event_type not in ("Normal", "Warning"):
        raise invalid("Event", "", f"Unsupported value: {event_type!r}", "type")
    message = body.get("note" if group else "message") or ""
    reason, action = body.get("reason") or "", body.get("action") or ""
    for field_name, value in (("message", message), ("reason", reason), ("action", action)):
        if not isinstance(value, str):
            raise bad_request(f"Event.{field_name} must be a string")
    row = {
        "kind": kind,
        "key": key,
        "reason": reason,
        "message": message,
        "type": event_type,
        "action": action,
    }
    row["id"] = store.record_events([row])[0]
    return row
