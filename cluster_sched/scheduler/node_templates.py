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
``tests/scheduler/test_node_templates.py`` compares both on random manifests. The
cache, the key's encoding and the own fields' checks are ``manifest_templates.py``'s,
shared with the pods'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_sched.api import selectors
from cluster_sched.api.objects import Node
from cluster_sched.errors import InvalidObjectError
from cluster_sched.scheduler.manifest_templates import OWN_FIELDS, ManifestTemplates

__all__ = ["HOSTNAME_LABEL", "NodeTemplates"]

#: The label each node carries with its own value (upstream LabelHostname)
HOSTNAME_LABEL = "kubernetes.io/hostname"


class NodeTemplates(ManifestTemplates[Node]):
    """Nodes parsed from manifests, the parse of a pool's first node reused for the rest
    (see the module docstring). Not thread-safe: one informer's."""

    __slots__ = ()

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
        rest = {k: None if k in OWN_FIELDS else v for k, v in meta.items()}
        if labels and HOSTNAME_LABEL in labels:
            rest["labels"] = {**labels, HOSTNAME_LABEL: None}
        return self._key(doc, rest)

    def node(self, key: bytes, doc: Mapping[str, Any]) -> Node | None:
        """The Node ``doc`` parses to, built from its pool's first; None when there is
        none or the own fields need the full parse (it reports what is wrong)."""
        labels = doc["metadata"].get("labels")
        host = labels.get(HOSTNAME_LABEL) if labels else None
        if labels and HOSTNAME_LABEL in labels:
            if type(host) is not str:
                return None
            try:
                selectors.validate_label_value(host, f"metadata.labels.{HOSTNAME_LABEL}")
            except InvalidObjectError:
                return None
        own = self._own(key, doc)
        if own is None:
            return None
        node_labels = own.proto.meta.labels
        if host is not None:
            own.meta["labels"] = labels  # one of its own: the sharing pass keeps it too
            node_labels = {**node_labels, HOSTNAME_LABEL: host}
        self.hits += 1
        return own.built(labels=node_labels)
