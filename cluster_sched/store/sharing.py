"""Equal parts of the manifests a watcher keeps share one instance.

The informer keeps every node's and pod's manifest (``raw``: what extenders, Ray shards
and binding tasks are sent). Decoded from msgpack, each is a tree of a dozen dicts,
lists and strings, and most of that tree is the same for every pod of a Deployment (the
container list, the status conditions of pods bound in the same second) and for every
node of a node pool (allocatable, capacity, conditions). At a million objects those
copies are gigabytes, so :class:`ManifestSharing` rebuilds each manifest with its
top-level dicts of its own (metadata, spec, status: where per-object fields live) and
every container one level below them taken from a cache of equal values.

Shared parts are read-only by contract, as every manifest the informer hands out already
is: whoever changes an object writes a new manifest to the store, and the watch delivers
a new tree. Values are equal when their msgpack encodings (strict types, so ``1``,
``1.0`` and ``True`` differ, and key order counts) are equal bytes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import msgpack

__all__ = ["DEFAULT_SHARED_VALUES", "ManifestSharing"]

#: Distinct values remembered before the cache starts over (under a megabyte). Values met
#: once (a node's hostname label) pass through; one met again after a restart simply
#: becomes the new shared instance, so a restart costs one more copy of each, no more.
DEFAULT_SHARED_VALUES = 4096
#: Strings at most this long, found one level below the top, are interned (namespace,
#: creationTimestamp, nodeName, apiVersion): few distinct values, one per object.
_INTERN_MAX_LEN = 64
#: metadata fields whose values are unique per object: interning them only grows the
#: interpreter's table.
_UNIQUE_META = frozenset({"name", "uid", "resourceVersion"})


class ManifestSharing:
    """Rebuilds manifests so that equal sub-trees are one object (see module doc)."""

    __slots__ = ("_entries", "_size", "hits")

    def __init__(self, size: int = DEFAULT_SHARED_VALUES) -> None:
        self._entries: dict[bytes, Any] = {}
        self._size = size
        #: sub-trees replaced by a shared equal one (a figure for the benchmarks)
        self.hits = 0

    def shared(self, value: Any) -> Any:
        """The cached value equal to ``value`` (a dict or list), or ``value`` itself,
        remembered for the next."""
        try:
            key = msgpack.packb(value, strict_types=True, use_bin_type=True)
        except (TypeError, ValueError, OverflowError):
            return value
        found = self._entries.get(key)
        if found is not None:
            self.hits += 1
            return found
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[key] = value
        return value

    def manifest(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """An equal manifest whose level-one dicts are new and whose deeper containers
        and short repeated strings are shared. ``doc`` itself is left as it was."""
        out: dict[str, Any] = {}
        for key, value in doc.items():
            if isinstance(value, dict):
                out[key] = self.level_one(key, value)
            elif isinstance(value, str) and len(value) <= _INTERN_MAX_LEN:
                out[key] = sys.intern(value)
            else:
                out[key] = value
        return out

    def level_one(self, field: str, value: dict[str, Any]) -> dict[str, Any]:
        """``value`` (the manifest's ``field``: metadata, spec, status) as a new dict
        whose containers and short repeated strings are shared."""
        out: dict[str, Any] = {}
        meta = field == "metadata"
        for key, item in value.items():
            if isinstance(item, dict | list):
                out[key] = self.shared(item) if item else item
            elif (
                isinstance(item, str)
                and len(item) <= _INTERN_MAX_LEN
                and not (meta and key in _UNIQUE_META)
            ):
                out[key] = sys.intern(item)
            else:
                out[key] = item
        return out
