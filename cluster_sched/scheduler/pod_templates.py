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
manifest in full, which reports the error as before.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import msgpack  # type: ignore[import-untyped]

from cluster_sched.api import _decode as d
from cluster_sched.api import selectors
from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.errors import InvalidObjectError

__all__ = ["DEFAULT_TEMPLATES", "PodTemplates"]

#: Templates remembered before the cache starts over: a few per workload's pod groups.
DEFAULT_TEMPLATES = 256
#: metadata fields a new pod of a template has of its own (the store stamps uid,
#: resourceVersion and creationTimestamp; the name is the pod's)
_OWN = ("name", "uid", "resourceVersion", "creationTimestamp")
_OWN_SET = frozenset(_OWN)
#: Short strings the sharing pass interns (``ManifestSharing``); longer ones are kept.
_INTERN_MAX_LEN = 64


def _new_packer() -> Any:
    """The sharing cache's encoding (``ManifestSharing.shared``): strict types."""
    return msgpack.Packer(strict_types=True, use_bin_type=True)


class PodTemplates:
    """Pods parsed from manifests, the parse of a template's first pod reused for the
    rest (see the module docstring). Not thread-safe: one informer's."""

    __slots__ = ("_packer", "_size", "_stamps", "_templates", "hits")

    def __init__(self, size: int = DEFAULT_TEMPLATES) -> None:
        #: the rest of a manifest (msgpack, own fields left out) -> (its Pod, manifest)
        self._templates: dict[bytes, tuple[Pod, dict[str, Any]]] = {}
        #: creationTimestamp text -> seconds (a burst shares a handful of seconds)
        self._stamps: dict[str, float] = {}
        self._size = size
        self._packer = _new_packer()
        #: pods built from a template (a figure for the benchmarks and tests)
        self.hits = 0

    def key(self, doc: Mapping[str, Any]) -> bytes | None:
        """The template key of a new pod's manifest: its encoding with the own fields'
        values left out (their places kept); None if it has no metadata map, is bound
        (bound pods differ in their node: a listing's million of them would each miss)
        or does not encode strictly."""
        meta, spec = doc.get("metadata"), doc.get("spec")
        if type(meta) is not dict or type(spec) is not dict or spec.get("nodeName"):
            return None
        rest = {k: None if k in _OWN_SET else v for k, v in meta.items()}
        try:
            return self._packer.pack({**doc, "metadata": rest})  # type: ignore[no-any-return]
        except (TypeError, ValueError, OverflowError):
            self._packer = _new_packer()  # a failed pack may leave it mid-buffer
            return None

    def remember(self, key: bytes, pod: Pod, manifest: Mapping[str, Any]) -> None:
        """``pod`` (parsed in full from ``manifest``, the shared form) as the template
        of pods whose key is ``key``."""
        if len(self._templates) >= self._size:
            self._templates.clear()
            self._stamps.clear()
        # level-one dicts of its own: the template outlives whatever happens to ``pod``
        own = {k: dict(v) if type(v) is dict else v for k, v in manifest.items()}
        self._templates[key] = (pod, own)

    def pod(self, key: bytes, doc: Mapping[str, Any]) -> Pod | None:
        """The Pod ``doc`` parses to, built from its template; None when there is none
        or the own fields need the full parse (it reports what is wrong with them)."""
        found = self._templates.get(key)
        if found is None:
            return None
        proto, proto_manifest = found
        meta = doc["metadata"]
        name, uid = meta.get("name"), meta.get("uid", "")
        rv, created = meta.get("resourceVersion", ""), meta.get("creationTimestamp")
        if not (type(name) is str and name and type(uid) is str and type(rv) is str):
            return None
        try:
            selectors.validate_dns_subdomain(name, "metadata.name")
            seconds = self._created(created)
        except InvalidObjectError:
            return None
        proto_meta = proto_manifest["metadata"]
        own_meta = {k: meta[k] if k in _OWN_SET else proto_meta[k] for k in meta}
        if type(created) is str and len(created) <= _INTERN_MAX_LEN:
            own_meta["creationTimestamp"] = sys.intern(created)
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
            ),
            raw=manifest,
        )

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
