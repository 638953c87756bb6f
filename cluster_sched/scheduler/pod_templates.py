"""New pods built from an earlier pod of the same template (issue 23, item 3).

A burst of new pods (a Deployment scaled up, a workload's pod group) is a run of
manifests that differ only in metadata.name, uid, resourceVersion and
creationTimestamp. The informer decoded each in full: the sharing pass over every
container (``ManifestSharing.manifest``), the metadata checks, the spec cache's key, a
Pod built field by field. Here the first pod of a template is parsed so, and every later
one with the same rest is that Pod with the four fields changed: the rest is compared as
one msgpack encoding (strict types, key order counted, as the sharing cache compares
values), the name is checked as the parser checks it, and the manifest reuses the first
one's shared parts. The result equals what the full parse gives (the Pod, its raw
manifest); anything the fast path does not vouch for (a field of the wrong type, a name
the parser would reject, an unreadable timestamp) returns None and the caller parses the
manifest in full, which reports the error as before. The cache, the key's encoding and
the own fields' checks are ``manifest_templates.py``'s, shared with the nodes'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.scheduler.manifest_templates import (
    DEFAULT_TEMPLATES,
    OWN_FIELDS,
    ManifestTemplates,
)

__all__ = ["DEFAULT_TEMPLATES", "PodTemplates"]


class PodTemplates(ManifestTemplates[Pod]):
    """Pods parsed from manifests, the parse of a template's first pod reused for the
    rest (see the module docstring). Not thread-safe: one informer's."""

    __slots__ = ()

    def key(self, doc: Mapping[str, Any]) -> bytes | None:
        """The template key of a new pod's manifest: its encoding with the own fields'
        values left out (their places kept); None if it has no metadata map, is bound
        (bound pods differ in their node: a listing's million of them would each miss)
        or does not encode strictly."""
        meta, spec = doc.get("metadata"), doc.get("spec")
        if type(meta) is not dict or type(spec) is not dict or spec.get("nodeName"):
            return None
        return self._key(doc, {k: None if k in OWN_FIELDS else v for k, v in meta.items()})

    def pod(self, key: bytes, doc: Mapping[str, Any]) -> Pod | None:
        """The Pod ``doc`` parses to, built from its template; None when there is none
        or the own fields need the full parse (it reports what is wrong with them)."""
        own = self._own(key, doc)
        if own is None:
            return None
        self.hits += 1
        return own.built()
