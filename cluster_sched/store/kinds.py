"""The kinds the store holds, how objects are keyed, and where they live in Redis.

The store is object-agnostic: it keeps manifest dicts, and only checks the identity fields
(kind, metadata.name, metadata.namespace) it needs to key them. Everything else is
``api.manifest``'s job, so a bad quantity is reported where it is parsed, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cluster_sched.errors import InvalidObjectError

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "DEFAULT_NAMESPACE",
    "KINDS",
    "NAMESPACED_KINDS",
    "StoreKeys",
    "check_kind",
    "describe",
    "normalize",
    "object_key",
]

#: Kinds whose objects are keyed by name alone.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Node",
        "Namespace",
        "PriorityClass",
        "PersistentVolume",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "DeviceClass",
        "ResourceSlice",
    }
)
#: Kinds whose objects are keyed ``namespace/name``.
NAMESPACED_KINDS = frozenset(
    {
        "Pod",
        "PodDisruptionBudget",
        "Service",
        "ReplicaSet",
        "StatefulSet",
        "ReplicationController",
        "PersistentVolumeClaim",
        "ResourceClaim",
        "ResourceClaimTemplate",
    }
)
#: Every kind, in the order a consistent snapshot lists them (things pods refer to first).
KINDS: tuple[str, ...] = (
    "Namespace",
    "PriorityClass",
    "StorageClass",
    "CSIDriver",
    "DeviceClass",
    "Node",
    "ResourceSlice",
    "CSINode",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "PodDisruptionBudget",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "ReplicationController",
    "Pod",
)
_ALL_KINDS = CLUSTER_SCOPED_KINDS | NAMESPACED_KINDS
#: The namespace of a namespaced object whose manifest names none (as kubectl does).
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class StoreKeys:
    """Every Redis key the store uses; all share ``prefix`` (a hash tag, ``{cs}``) so one
    Lua script may touch any of them on a Redis Cluster."""

    prefix: str

    def obj(self, kind: str) -> str:
        """The hash of one kind's objects: field ``key`` → msgpack manifest."""
        return f"{self.prefix}:obj:{kind}"

    @property
    def rv(self) -> str:
        """The global resourceVersion counter (INCR once per write)."""
        return f"{self.prefix}:rv"

    @property
    def events(self) -> str:
        """The watch event stream (the API server's watch)."""
        return f"{self.prefix}:events"

    @property
    def kevents(self) -> str:
        """The Kubernetes Event stream (Scheduled, FailedScheduling, Preempted)."""
        return f"{self.prefix}:kevents"

    def lease(self, name: str) -> str:
        """The leader-election lease hash for ``name`` ("namespace/name"): holder,
        acquire/renew times and the fencing token every coordinator write carries."""
        return f"{self.prefix}:lease:{name}"

    @property
    def allocatable(self) -> str:
        """node name -> msgpack {resource: int}: each node's allocatable (bind's check)."""
        return f"{self.prefix}:alloc"

    @property
    def node_requested(self) -> str:
        """node name -> msgpack {resource: int}: the summed requests of pods bound there
        (``pods`` counts them), kept by bind, delete and apply of bound pods."""
        return f"{self.prefix}:noderequested"

    @property
    def fit(self) -> tuple[str, str, str]:
        """allocatable, node_requested, pod_requested: bind's and delete's KEYS[3..5]."""
        return (self.allocatable, self.node_requested, self.pod_requested)

    @property
    def pod_requested(self) -> str:
        """pod key -> msgpack [node, {resource: int}]: what a bound pod adds to its node,
        so a delete subtracts exactly that."""
        return f"{self.prefix}:podrequested"


def check_kind(kind: str) -> str:
    """``kind`` if the store holds it; a ValueError (a programming error) otherwise."""
    if kind not in CLUSTER_SCOPED_KINDS and kind not in NAMESPACED_KINDS:
        raise ValueError(f"unknown kind {kind!r}; the store holds {', '.join(KINDS)}")
    return kind


def object_key(kind: str, name: str, namespace: str = "") -> str:
    """``namespace/name`` for namespaced kinds, ``name`` for cluster-scoped ones."""
    if kind in CLUSTER_SCOPED_KINDS:
        return name
    return f"{namespace or DEFAULT_NAMESPACE}/{name}"


def describe(kind: str, key: str) -> str:
    """How errors name an object: ``Pod default/web-1``."""
    return f"{kind} {key}"


def normalize(doc: Any, source: str = "") -> tuple[str, str, dict[str, Any]]:
    """Check a manifest's identity and return ``(kind, key, copy)``.

    The copy is shallow except for ``metadata`` (copied, so the store may stamp it):
    the namespace is defaulted for namespaced kinds and dropped for cluster-scoped ones.
    """
    # type(...) is dict first: isinstance against an ABC costs more than the rest of this
    # function, and this runs once per object of a 100k-object workload.
    if type(doc) is not dict and not isinstance(doc, Mapping):
        raise InvalidObjectError(
            f"an object must be a mapping, not {type(doc).__name__}", source=source
        )
    kind = doc.get("kind")
    if kind not in _ALL_KINDS:
        raise InvalidObjectError(
            f"unsupported kind {kind!r}; expected one of {', '.join(KINDS)}",
            field="kind",
            source=source,
        )
    meta = doc.get("metadata")
    if type(meta) is not dict and not isinstance(meta, Mapping):
        raise InvalidObjectError("metadata is required", obj=kind, field="metadata", source=source)
    name = meta.get("name")
    if type(name) is not str or not name or "/" in name:
        raise InvalidObjectError(
            f"name must be a non-empty string without '/', got {name!r}",
            obj=kind,
            field="metadata.name",
            source=source,
        )
    new_meta = dict(meta)
    if kind in CLUSTER_SCOPED_KINDS:
        new_meta.pop("namespace", None)
        key = name
    else:
        namespace = meta.get("namespace") or DEFAULT_NAMESPACE
        if type(namespace) is not str or "/" in namespace:
            raise InvalidObjectError(
                f"namespace must be a string without '/', got {namespace!r}",
                obj=f"{kind} {name}",
                field="metadata.namespace",
                source=source,
            )
        new_meta["namespace"] = namespace
        key = f"{namespace}/{name}"
    new = dict(doc)
    new["metadata"] = new_meta
    return kind, key, new
