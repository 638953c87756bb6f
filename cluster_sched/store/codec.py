"""msgpack in and out of Redis, RFC 3339 timestamps, deterministic uids.

Stored payloads are msgpack, never pickle: any process (or ``redis-cli``) can read them
and a hostile payload cannot run code. Manifests are JSON-shaped; the one non-JSON value
YAML produces, an unquoted timestamp (a ``datetime``), is written as its RFC 3339 string.
"""

from __future__ import annotations

import datetime as dt
import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgpack  # type: ignore[import-untyped]

from cluster_sched.errors import StoreError

__all__ = [
    "Encoder",
    "gc_paused",
    "map_header",
    "map_header_len",
    "pack",
    "rfc3339",
    "rfc3339_micro",
    "uid_for_rv",
    "unpack_object",
]


def _to_text(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"cannot store a {type(value).__name__} in a manifest: {value!r}")


_METADATA_KEY = msgpack.packb("metadata")
_UID_KEY = msgpack.packb("uid")


def map_header(n: int) -> bytes:
    """The msgpack header of a map of ``n`` entries (fixmap, map16 or map32)."""
    if n < 16:
        return bytes((0x80 + n,))
    if n < 65536:
        return b"\xde" + n.to_bytes(2, "big")
    return b"\xdf" + n.to_bytes(4, "big")


def map_header_len(n: int) -> int:
    return 1 if n < 16 else 3 if n < 65536 else 5


class Encoder:
    """A reusable msgpack packer that remembers whether it had to convert a value.

    When it did (``converted``), the encoded object no longer equals the dict it came from,
    so the store compares the decoded form instead (otherwise every re-apply of a manifest
    with a datetime would look like a change).
    """

    __slots__ = ("_packer", "converted")

    def __init__(self) -> None:
        self.converted = False
        self._packer = msgpack.Packer(default=self._default, use_bin_type=True)

    def _default(self, value: Any) -> Any:
        self.converted = True
        return _to_text(value)

    def pack(self, obj: Any) -> bytes:
        self.converted = False
        return self._packer.pack(obj)

    def pack_object(self, obj: Mapping[str, Any], set_uid: bool) -> tuple[bytes, bytes]:
        """``obj`` as (head, tail) around the place ``apply.lua`` puts ``metadata.uid``
        (when ``set_uid``) and ``metadata.resourceVersion``.

        metadata is written as the first key and uid, resourceVersion as its first pairs,
        so the script stamps them by concatenation and later scripts find them at once.
        ``obj["metadata"]`` must not hold resourceVersion, nor uid when ``set_uid``.
        """
        meta = obj["metadata"]
        rest = {k: v for k, v in obj.items() if k != "metadata"}
        uid = meta.get("uid")
        if uid is not None:  # first, so scripts reading it stop after one pair
            meta = {k: v for k, v in meta.items() if k != "uid"}
        meta_bytes = self.pack(meta)
        converted = self.converted
        rest_bytes = self.pack(rest)
        self.converted = converted or self.converted
        pairs = len(meta) + 1 + (1 if set_uid or uid is not None else 0)
        head = map_header(len(rest) + 1) + _METADATA_KEY + map_header(pairs)
        if uid is not None:
            head += _UID_KEY + self._packer.pack(uid)
        tail = meta_bytes[map_header_len(len(meta)) :] + rest_bytes[map_header_len(len(rest)) :]
        return head, tail


def pack(obj: Any) -> bytes:
    """Encode one JSON-shaped value (datetimes become RFC 3339 strings)."""
    return msgpack.packb(obj, default=_to_text, use_bin_type=True)


def unpack_object(data: bytes, kind: str, key: str) -> dict[str, Any]:
    """Decode a stored object; StoreError naming the object if the bytes are not a map."""
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise StoreError(f"stored {kind} {key} is unreadable: {exc}") from exc
    if not isinstance(obj, dict):
        raise StoreError(
            f"stored {kind} {key} is unreadable: expected a map, found {type(obj).__name__}"
        )
    return obj


def unpack_each(kind: str, items: list[tuple[str, bytes]]) -> Iterator[dict[str, Any]]:
    """``unpack_object`` of each ``(key, data)`` in turn, letting go of each value as it
    is decoded (``items`` is consumed): a long listing is never all decoded at once."""
    items.reverse()
    while items:
        key, data = items.pop()
        yield unpack_object(data, kind, key)


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Hold off the cyclic garbage collector while a batch of objects is decoded or written.

    Decoding or writing thousands of manifests allocates millions of containers; each
    allocation burst triggers collections that traverse every live object (all the
    objects an informer or a bulk load keeps), which costs more than the decoding itself
    (half of a watch batch's time, measured by benchmarks/informer_decode_bench.py).
    Manifests hold no reference cycles, so deferring collection to the end of the batch
    loses nothing. Restores the previous state (it may already be disabled, e.g. by an
    enclosing batch). Process-wide, like the collector: keep the batch bounded.
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def rfc3339(ts: float) -> str:
    """``2024-05-01T12:00:00Z``: metav1.Time's wire format (second precision)."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(ts: float) -> str:
    """``2024-05-01T12:00:00.123456Z``: metav1.MicroTime's wire format (event times)."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def uid_for_rv(rv: int) -> str:
    """The uid ``apply.lua`` gives an object created without one: derived from the
    resourceVersion of its creation, so it is unique and a replay reproduces it."""
    return f"00000000-0000-4000-8000-{rv:012x}"
