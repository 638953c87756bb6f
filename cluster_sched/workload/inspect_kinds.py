"""kubectl's resource names for every kind the store holds, and the generic table
(``NAME AGE``, with ``NAMESPACE`` first for ``-A``) for kinds without their own columns.

``pods``, ``pod`` and ``po`` all name Pods, as kubectl's discovery does: plural (lower
case kind plus "s", or "es" after an "s"), singular, and upstream's short names. The
table is built from the store's kinds (``store.kinds``), so a kind the store learns to
hold is gettable, describable and deletable with no change here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cluster_sched.errors import UsageError
from cluster_sched.store.kinds import CLUSTER_SCOPED_KINDS, KINDS
from cluster_sched.workload.inspect_render import age

__all__ = ["EVENTS", "Resource", "generic_rows", "resource", "resource_names"]

#: Events are read from the store's Event stream, not from an object hash.
EVENTS = "Event"

#: upstream's short names (``kubectl api-resources``).
_SHORT = {
    "Pod": "po",
    "Node": "no",
    "Namespace": "ns",
    "Service": "svc",
    "ReplicationController": "rc",
    "ReplicaSet": "rs",
    "StatefulSet": "sts",
    "PodDisruptionBudget": "pdb",
    "PriorityClass": "pc",
    "PersistentVolume": "pv",
    "PersistentVolumeClaim": "pvc",
    "StorageClass": "sc",
    "Event": "ev",
}


@dataclass(frozen=True, slots=True)
class Resource:
    """One kind as the command line names it."""

    kind: str
    #: kubectl's plural, used in messages (``pods "x" not found``)
    plural: str
    namespaced: bool

    @property
    def singular(self) -> str:
        return self.kind.lower()


def _plural(kind: str) -> str:
    lower = kind.lower()
    return f"{lower}es" if lower.endswith("s") else f"{lower}s"


def _table() -> dict[str, Resource]:
    out: dict[str, Resource] = {}
    for kind in (*KINDS, EVENTS):
        res = Resource(kind, _plural(kind), kind not in CLUSTER_SCOPED_KINDS)
        for name in (res.plural, res.singular, _SHORT.get(kind)):
            if name:
                out[name] = res
    return out


_RESOURCES = _table()


def resource_names() -> list[str]:
    """Every plural, for ``--help`` (sorted)."""
    return sorted({r.plural for r in _RESOURCES.values()})


def resource(name: str) -> Resource:
    """The resource ``name`` (any spelling kubectl accepts, case-insensitive) stands for."""
    found = _RESOURCES.get(name.lower())
    if found is None:
        raise UsageError(
            f'the server doesn\'t have a resource type "{name}" '
            f"(the store holds {', '.join(resource_names())})"
        )
    return found


def generic_rows(
    docs: Sequence[Mapping[str, Any]], now: datetime, *, namespaces: bool
) -> list[list[str]]:
    """Header and one row per object: ``NAME AGE`` (``NAMESPACE`` first with ``-A``),
    kubectl's columns for a kind without its own printer."""
    rows = [["NAMESPACE", "NAME", "AGE"] if namespaces else ["NAME", "AGE"]]
    for doc in docs:
        meta = doc.get("metadata") or {}
        row = [str(meta.get("name", "")), age(meta.get("creationTimestamp"), now)]
        rows.append([str(meta.get("namespace", "")), *row] if namespaces else row)
    return rows
