"""New nodes built from an earlier node of the same pool (issues 22 and 23): the nodes'
``PodTemplates``.

The nodes of a pool (a workload's node group, a cloud node group) are manifests that
differ only in metadata.name, uid, resourceVersion, creationTimestamp and the
``kubernetes.io/hostname`` label. The informer decoded each in full: the sharing pass
(``ManifestSharing.manifest``), the metadata and label checks, the resource lists, a
Node built field by field — about half of a listed node's cost at a million nodes. Here
the first node of a pool is parsed so, and every later one with the same rest is that
Node with those fields changed: the rest is compared as one msgpack encoding (strict
types, key order counted, as the sharing cache compares values), the name and the
hostname value are checked as the parser checks them, and the manifest reuses the first
one's shared parts (so the pool's nodes share one allocatable map, which the node
table's bulk path writes once per pool). The result equals what the full parse gives
(the Node, its raw manifest); anything the fast path does not vouch for returns None and
the caller parses the manifest in full, which reports the error as before.
``tests/scheduler/test_node_templates.py`` compares both on random manifests.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from cluster_sched.api import _decode as d
from cluster_sched.api import selectors
from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Node
from cluster_sched.errors import InvalidObjectError
from cluster_sched.scheduler.pod_templates import _new_packer

__all__ = ["HOSTNAME_LABEL", "NodeTemplates"]

#: The label each node carries with its own value (upstream LabelHostname)
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: metadata fields a node of a pool has of its own (the store stamps uid,
#: resourceVersion and creationTimestamp; the name is the node's)
_OWN = frozenset({"name", "uid", "resourceVersion", "creationTimestamp"})
#: Short strings the sharing pass interns (``ManifestSharing``); longer ones are kept.
_INTERN_MAX_LEN = 64


#: Pools remembered before the cache starts over.
DEFAULT_POOLS = 256


class NodeTemplates:
    """Nodes parsed from manifests, the parse of a pool's first node reused for the rest
    (see the module docstring). Not thread-safe: one informer's."""

    __slots__ = ("_packer", "_size", "_stamps", "_templates", "hits")

    def __init__(self, size: int = DEFAULT_POOLS) -> None:
        #: the rest of a manifest (msgpack, own fields left out) -> (its Node, manifest)
        self._templates: dict[bytes, tuple[Node, dict[str, Any]]] = {}
        #: creationTimestamp text -> seconds (a pool written at once shares a few)
        self._stamps: dict[str, float] = {}
        self._size = size
        self._packer = _new_packer()
        #: nodes built from a pool's first (a figure for the benchmarks and tests)
        self.hits = 0

    def remember(self, key: bytes, node: Node, manifest: Mapping[str, Any]) -> None:
        """``node`` (parsed in full from ``manifest``, the shared form) as the first of
        the pool whose key is ``key``."""
        if len(self._templates) >= self._size:
            self._templates.clear()
            self._stamps.clear()
        # level-one dicts of its own: the template outlives whatever happens to ``node``
        own = {k: dict(v) if type(v) is dict else v for k, v in manifest.items()}
        self._templates[key] = (node, own)

    def _created(self, value: object) -> float:
        """metadata.creationTimestamp as the parser reads it (0.0 when absent)."""
        if type(value) is not str:
            return d.timestamp(value, "metadata.creationTimestamp") or 0.0
        seconds = self._stamps.get(value)
        if seconds is None:
            seconds = d.timestamp(value, "metadata.creationTimestamp") or 0.0
            if len(self._stamps) >= self._size:
                self._stamps.clear()
            self._stamps[value] = seconds
        return seconds

    def key(self, doc: Mapping[str, Any]) -> bytes | None:
        """The pool key of a new node's manifest: its encoding with the own fields'
        values (and the hostname label's) left out, their places kept; None if its
        metadata or labels are not maps or it does not encode strictly."""
        meta = doc.get("metadata")
        if type(meta) is not dict:
            return None
        labels = meta.get("labels")
        if labels is not None and type(labels) is not dict:
            return None
        rest = {k: None if k in _OWN else v for k, v in meta.items()}
        if labels and HOSTNAME_LABEL in labels:
            rest["labels"] = {**labels, HOSTNAME_LABEL: None}
        try:
            return self._packer.pack({**doc, "metadata": rest})  # type: ignore[no-any-return]
        except (TypeError, ValueError, OverflowError):
            self._packer = _new_packer()  # a failed pack may leave it mid-buffer
            return None

    def node(self, key: bytes, doc: Mapping[str, Any]) -> Node | None:
        """The Node ``doc`` parses to, built from its pool's first; None when there is
        none or the own fields need the full parse (it reports what is wrong)."""
        found = self._templates.get(key)
        if found is None:
            return None
        proto, proto_manifest = found
        meta = doc["metadata"]
        name, uid = meta.get("name"), meta.get("uid", "")
        rv, created = meta.get("resourceVersion", ""), meta.get("creationTimestamp")
        if not (type(name) is str and name and type(uid) is str and type(rv) is str):
            return None
        labels = meta.get("labels")
        host = labels.get(HOSTNAME_LABEL) if labels else None
        if labels and HOSTNAME_LABEL in labels and type(host) is not str:
            return None
        try:
            selectors.validate_dns_subdomain(name, "metadata.name")
            if host is not None:
                selectors.validate_label_value(host, f"metadata.labels.{HOSTNAME_LABEL}")
            seconds = self._created(created)
        except InvalidObjectError:
            return None
        proto_meta = proto_manifest["metadata"]
        own_meta = {k: meta[k] if k in _OWN else proto_meta[k] for k in meta}
        if type(created) is str and len(created) <= _INTERN_MAX_LEN:
            own_meta["creationTimestamp"] = sys.intern(created)
        node_labels = proto.meta.labels
        if host is not None:
            own_meta["labels"] = labels  # one of its own: the sharing pass keeps it too
            node_labels = {**node_labels, HOSTNAME_LABEL: host}
        manifest = {
            k: own_meta if k == "metadata" else dict(v) if type(v) is dict else v
            for k, v in proto_manifest.items()
        }
        self.hits += 1
        return evolve(
            proto,
            meta=evolve(
                proto.meta,
                name=name,
                uid=uid,
                resource_version=rv,
                creation_timestamp=seconds,
                labels=node_labels,
            ),
            raw=manifest,
        )
