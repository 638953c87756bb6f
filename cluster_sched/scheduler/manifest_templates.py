"""What ``PodTemplates`` and ``NodeTemplates`` share (issues 22 and 23): objects of one
template (a pod group's pods, a node pool's nodes) are manifests that differ only in
metadata.name, uid, resourceVersion and creationTimestamp (nodes: and their hostname
label). The first of a template is parsed in full and remembered under the encoding of
the rest; a later one with the same rest is built from it with those fields changed.

This module holds the cache of templates, the key's encoding (strict msgpack types, key
order counted, as the sharing cache compares values), the own fields' checks as the
parser makes them, and the new manifest made from the template's shared parts. Each
kind's module says which manifests may have a key and builds the object.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgpack  # type: ignore[import-untyped]

from cluster_sched.api import _decode as d
from cluster_sched.api import selectors
from cluster_sched.api.evolve import evolve
from cluster_sched.errors import InvalidObjectError

__all__ = ["DEFAULT_TEMPLATES", "OWN_FIELDS", "ManifestTemplates", "OwnFields"]

#: Templates remembered before the cache starts over: a few per workload's groups.
DEFAULT_TEMPLATES = 256
#: metadata fields an object of a template has of its own (the store stamps uid,
#: resourceVersion and creationTimestamp; the name is the object's)
OWN_FIELDS = frozenset({"name", "uid", "resourceVersion", "creationTimestamp"})
#: Short strings the sharing pass interns (``ManifestSharing``); longer ones are kept.
_INTERN_MAX_LEN = 64

T = TypeVar("T")


def _new_packer() -> Any:
    """The sharing cache's encoding (``ManifestSharing.shared``): strict types."""
    return msgpack.Packer(strict_types=True, use_bin_type=True)


@dataclass(slots=True)
class OwnFields(Generic[T]):
    """A manifest's own fields, checked, beside its template: what the kind's builder
    needs to make the object."""

    proto: T
    proto_manifest: dict[str, Any]
    name: str
    uid: str
    resource_version: str
    creation_timestamp: float
    #: the new manifest's metadata: its own fields, the template's others
    meta: dict[str, Any]

    def built(self, **meta: Any) -> T:
        """The template's object with these own fields (and ``meta``'s other metadata
        changes) and the new manifest."""
        proto: Any = self.proto
        return evolve(  # type: ignore[no-any-return]
            proto,
            meta=evolve(
                proto.meta,
                name=self.name,
                uid=self.uid,
                resource_version=self.resource_version,
                creation_timestamp=self.creation_timestamp,
                **meta,
            ),
            raw=self.manifest(),
        )

    def manifest(self) -> dict[str, Any]:
        """The new manifest: this metadata, the template's other parts (level-one dicts
        of its own, the shared values below them)."""
        return {
            k: self.meta if k == "metadata" else dict(v) if type(v) is dict else v
            for k, v in self.proto_manifest.items()
        }


class ManifestTemplates(Generic[T]):
    """Objects parsed from manifests, the parse of a template's first reused for the
    rest (see the module docstring). Not thread-safe: one informer's."""

    __slots__ = ("_packer", "_size", "_stamps", "_templates", "hits")

    def __init__(self, size: int = DEFAULT_TEMPLATES) -> None:
        #: the rest of a manifest (msgpack, own fields left out) -> (its object, manifest)
        self._templates: dict[bytes, tuple[T, dict[str, Any]]] = {}
        #: creationTimestamp text -> seconds (a burst shares a handful of seconds)
        self._stamps: dict[str, float] = {}
        self._size = size
        self._packer = _new_packer()
        #: objects built from a template (a figure for the benchmarks and tests)
        self.hits = 0

    def remember(self, key: bytes, obj: T, manifest: Mapping[str, Any]) -> None:
        """``obj`` (parsed in full from ``manifest``, the shared form) as the template
        of objects whose key is ``key``."""
        if len(self._templates) >= self._size:
            self._templates.clear()
            self._stamps.clear()
        # level-one dicts of its own: the template outlives whatever happens to ``obj``
        own = {k: dict(v) if type(v) is dict else v for k, v in manifest.items()}
        self._templates[key] = (obj, own)

    def _key(self, doc: Mapping[str, Any], rest: dict[str, Any]) -> bytes | None:
        """The encoding of ``doc`` with ``rest`` as its metadata; None if it does not
        encode strictly."""
        try:
            return self._packer.pack({**doc, "metadata": rest})  # type: ignore[no-any-return]
        except (TypeError, ValueError, OverflowError):
            self._packer = _new_packer()  # a failed pack may leave it mid-buffer
            return None

    def _own(self, key: bytes, doc: Mapping[str, Any]) -> OwnFields[T] | None:
        """``doc``'s own fields beside its template, checked as the parser checks them;
        None when there is no template or they need the full parse (it reports what is
        wrong with them)."""
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
        own_meta = {k: meta[k] if k in OWN_FIELDS else proto_meta[k] for k in meta}
        if type(created) is str and len(created) <= _INTERN_MAX_LEN:
            own_meta["creationTimestamp"] = sys.intern(created)
        return OwnFields(proto, proto_manifest, name, uid, rv, seconds, own_meta)

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
