"""The two streams: watch events (the informer's input) and Kubernetes Events.

Watch events are appended by the write scripts, one per write, in resourceVersion order
with no gaps; this module reads them back. A watch checks that gaplessness: when the next
event's resourceVersion is not the one it expects, events were trimmed away (the stream
is capped with ``MAXLEN ~``) and it raises ResourceExpiredError, the API server's 410 Gone,
so the informer relists instead of silently missing objects.

Kubernetes Events (Scheduled, FailedScheduling, Preempted) are plain string fields, so
``redis-cli XRANGE {cs}:kevents - +`` shows them as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

import redis

from cluster_sched.clock import Clock
from cluster_sched.errors import StoreError
from cluster_sched.store.boundary import redis_boundary
from cluster_sched.store.codec import gc_paused, rfc3339_micro, unpack_object
from cluster_sched.store.kinds import StoreKeys
from cluster_sched.store.results import EventType, ResourceExpiredError, WatchEvent

__all__ = [
    "DEFAULT_BLOCK_MS",
    "DEFAULT_READ_COUNT",
    "KUBE_EVENT_TYPES",
    "Entry",
    "ListedObjects",
    "Unreadable",
    "decode_entry",
    "entry_rv",
    "kube_event_rows",
    "list_and_watch",
    "read_entries",
    "read_events",
    "read_kube_events",
    "watch",
]

#: How long one XREAD of a watch blocks waiting for new events, in milliseconds
#: (must stay below the client's socket_timeout).
DEFAULT_BLOCK_MS = 1000
#: Most events one XREAD returns.
DEFAULT_READ_COUNT = 1000
#: Kubernetes Event types.
KUBE_EVENT_TYPES = frozenset({"Normal", "Warning"})
_KEVENT_PAGE = 10_000
_STREAM_ID = re.compile(r"^\d+(-\d+)?$")

Entry = tuple[bytes, dict[bytes, bytes]]


def _text(value: bytes | str, errors: str = "strict") -> str:
    return value.decode(errors=errors) if isinstance(value, bytes) else value


def _id_tuple(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


def _field(fields: Mapping[bytes, bytes], name: bytes) -> str:
    value = fields.get(name)
    if value is None:
        return ""
    try:
        return _text(value)
    except UnicodeDecodeError:
        return ""


def _entry_rv(fields: Mapping[bytes, bytes]) -> int:
    """The entry's resourceVersion, 0 when it has none that reads as one."""
    text = _field(fields, b"rv")
    return int(text) if text.isascii() and text.isdigit() else 0


def decode_entry(entry_id: bytes | str, fields: Mapping[bytes, bytes]) -> WatchEvent:
    """A stream entry as a WatchEvent; an ERROR event if it is not one the store wrote
    or its object is unreadable, so one bad entry never ends a watch."""
    try:
        kind = _text(fields[b"kind"])
        key = _text(fields[b"key"])
        event_type = EventType(_text(fields[b"type"]))
        rv = int(fields[b"rv"])
        if kind and key and rv > 0 and event_type is not EventType.ERROR:
            obj = unpack_object(fields[b"obj"], kind, key)
            return WatchEvent(_text(entry_id), event_type, kind, key, obj, rv)
        why = "it names no object or resourceVersion"
    except StoreError as err:
        why = str(err)
    except (KeyError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        why = f"malformed: {exc!r}"
    kind, key = _field(fields, b"kind"), _field(fields, b"key")
    message = f"watch event {_text(entry_id)} is unreadable: {why}"
    return WatchEvent(
        _text(entry_id), EventType.ERROR, kind, key, {"message": message}, _entry_rv(fields)
    )


def _entries(reply: Any) -> list[Entry]:
    """The entries of an XREAD over one stream. RESP2: ``[[name, [(id, fields), ...]]]``;
    RESP3 (redis-py 8): ``{name: [[(id, fields), ...]]}``."""
    if not reply:
        return []
    if isinstance(reply, dict):
        (value,) = reply.values()
        return list(value[0]) if value and isinstance(value[0], list) else list(value)
    return list(reply[0][1])


def read_events(
    client: redis.Redis,
    keys: StoreKeys,
    from_id: str,
    count: int = DEFAULT_READ_COUNT,
    block_ms: int | None = None,
) -> list[WatchEvent]:
    """Events after ``from_id`` (at most ``count``), waiting up to ``block_ms`` for the
    first one (None: do not wait)."""
    # The reply's parsing allocates as much as the decoding: both run with the collector
    # paused (see codec.gc_paused).
    with gc_paused():
        entries = read_entries(client, keys, from_id, count, block_ms)
        return [decode_entry(entry_id, fields) for entry_id, fields in entries]


def read_entries(
    client: redis.Redis,
    keys: StoreKeys,
    from_id: str,
    count: int = DEFAULT_READ_COUNT,
    block_ms: int | None = None,
) -> list[Entry]:
    """``read_events`` without the decoding: the raw ``(id, fields)`` entries, for a
    reader that decodes only the entries it needs (``decode_entry``) and knows the others
    from their resourceVersion (``entry_rv``) alone, e.g. the coordinator's own bindings.
    The reply is parsed with the collector paused; a blocking read waits paused too,
    which only delays other threads' cyclic garbage by at most block_ms."""
    _check_id(from_id)
    with gc_paused():
        with redis_boundary("read_events"):
            reply = client.xread({keys.events: from_id}, count=count, block=block_ms)
        return _entries(reply)


def entry_rv(fields: Mapping[bytes, bytes]) -> int:
    """A raw entry's resourceVersion (0 when it has none that reads as one)."""
    return _entry_rv(fields)


def _check_id(stream_id: str) -> None:
    if stream_id != "$" and not _STREAM_ID.match(stream_id):
        raise ValueError(f"not a stream id: {stream_id!r} (expected '<ms>-<seq>', '0-0' or '$')")


def _resolve_start(client: redis.Redis, keys: StoreKeys, from_id: str) -> tuple[str, int | None]:
    """Where a watch starts, and the resourceVersion its first event must have (None when
    that cannot be known and nothing was trimmed, so any continuation is complete)."""
    _check_id(from_id)
    if from_id == "$":
        last: Any = client.xrevrange(keys.events, "+", "-", count=1)
        if not last:
            return "0-0", None
        entry_id, fields = last[0]
        rv = _entry_rv(fields)
        return _text(entry_id), rv + 1 if rv else None
    if _id_tuple(from_id) == (0, 0):
        return "0-0", 1
    exact: Any = client.xrange(keys.events, from_id, from_id)
    if exact:
        rv = _entry_rv(exact[0][1])
        return from_id, rv + 1 if rv else None
    first: Any = client.xrange(keys.events, "-", "+", count=1)
    if first:
        first_id, fields = first[0]
        if _id_tuple(_text(first_id)) > _id_tuple(from_id) and _entry_rv(fields) != 1:
            raise ResourceExpiredError(
                f"watch from {from_id}: the stream now starts at {_text(first_id)} and "
                f"earlier events were trimmed; relist"
            )
    return from_id, None


def watch(
    client: redis.Redis,
    keys: StoreKeys,
    from_id: str = "0-0",
    *,
    kinds: Collection[str] | None = None,
    block_ms: int = DEFAULT_BLOCK_MS,
    count: int = DEFAULT_READ_COUNT,
    stop_when_idle: bool = False,
) -> Iterator[WatchEvent]:
    """Yield every event after ``from_id`` as it arrives (``"$"``: only events newer
    than this call; the start is resolved now, not at the first ``next``).

    Runs until the consumer stops iterating, or, with ``stop_when_idle``, until one read
    waits ``block_ms`` without an event. Raises ResourceExpiredError when events it should
    deliver were trimmed.
    """
    with redis_boundary("watch"):
        last_id, expected = _resolve_start(client, keys, from_id)
    return _follow(client, keys, last_id, expected, kinds, block_ms, count, stop_when_idle)


def _follow(
    client: redis.Redis,
    keys: StoreKeys,
    last_id: str,
    expected: int | None,
    kinds: Collection[str] | None,
    block_ms: int,
    count: int,
    stop_when_idle: bool,
) -> Iterator[WatchEvent]:
    while True:
        batch = read_events(client, keys, last_id, count, block_ms)
        if not batch:
            if stop_when_idle:
                return
            continue
        for event in batch:
            if event.type is EventType.ERROR and not event.rv:
                last_id = event.id  # not a write of the store's: no resourceVersion used
                yield event
                continue
            if expected is not None and event.rv != expected:
                raise ResourceExpiredError(
                    f"watch after {last_id}: expected resourceVersion {expected} but the "
                    f"stream continues at {event.rv}; events were trimmed, relist"
                )
            expected = event.rv + 1
            last_id = event.id
            if kinds is None or event.kind in kinds:
                yield event


#: Told about each stored object a listing skipped: (kind, key, why).
Unreadable = Callable[[str, str, str], None]


class ListedObjects:
    """One kind's objects of a listing, decoded one at a time as they are taken.

    A listing of a million nodes arrives as a million msgpack values (a few hundred bytes
    each); decoded all at once they would be gigabytes of dicts alive together, on top
    of what the informer builds from them. Iterating yields ``(key, manifest)`` in key
    order and lets go of each stored value as it is decoded, so only the bytes not yet
    reached and the one manifest at hand exist. An unreadable value is reported to
    ``on_unreadable`` when reached and skipped. One pass only.
    """

    __slots__ = ("_items", "_on_unreadable", "kind")

    def __init__(
        self, kind: str, items: list[tuple[str, bytes]], on_unreadable: Unreadable | None
    ) -> None:
        self.kind = kind
        items.sort(reverse=True)  # popped from the end: key order
        self._items = items
        self._on_unreadable = on_unreadable

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        items, kind = self._items, self.kind
        while items:
            key, data = items.pop()
            try:
                doc = unpack_object(data, kind, key)
            except StoreError as err:
                if self._on_unreadable is not None:
                    self._on_unreadable(kind, key, str(err))
                continue
            yield key, doc


def list_and_watch(
    client: redis.Redis,
    keys: StoreKeys,
    kinds: Iterable[str],
    on_unreadable: Unreadable | None = None,
) -> tuple[dict[str, ListedObjects], str]:
    """A consistent snapshot of ``kinds`` and the stream id it corresponds to.

    One MULTI/EXEC reads every hash and the stream's last id, so each write is either in
    the snapshot or after the id, never both and never neither: watching from the id
    delivers exactly the writes the snapshot misses. The price is one large reply (every
    object of those kinds); informers do this once, at start and after a 410.
    Objects come in key order (see ListedObjects), so consumers iterate deterministically.
    An unreadable stored object (not msgpack, not a map) is left out and reported to
    ``on_unreadable``: one garbage value must not keep every informer from starting.
    """
    kinds = list(kinds)
    with redis_boundary("list_and_watch"):
        pipe = client.pipeline(transaction=True)
        for kind in kinds:
            pipe.hgetall(keys.obj(kind))
        pipe.xrevrange(keys.events, "+", "-", count=1)
        *hashes, last = pipe.execute()
    snapshot: dict[str, ListedObjects] = {}
    for i, kind in enumerate(kinds):
        raw = hashes[i]
        hashes[i] = None  # the reply's dict goes as soon as its pairs are listed
        items = [(_text(k, errors="replace"), v) for k, v in raw.items()]
        del raw
        snapshot[kind] = ListedObjects(kind, items, on_unreadable)
    last_id = _text(last[0][0]) if last else "0-0"
    return snapshot, last_id


def kube_event_rows(clock: Clock, events: Iterable[Mapping[str, str]]) -> list[list[str]]:
    """Kubernetes Events (``kind``, ``key``, ``reason``, ``message``, optional ``type``
    (Normal) and ``action``) as events.lua's rows, stamped with the clock's now."""
    now = rfc3339_micro(clock.now())
    rows: list[list[str]] = []
    for event in events:
        event_type = event.get("type", "Normal")
        if event_type not in KUBE_EVENT_TYPES:
            raise ValueError(f"event type must be Normal or Warning, got {event_type!r}")
        rows.append(
            [
                event["kind"],
                event["key"],
                event_type,
                event["reason"],
                event.get("action", ""),
                event["message"],
                now,
            ]
        )
    return rows


def read_kube_events(
    client: redis.Redis,
    keys: StoreKeys,
    *,
    key: str | None = None,
    reason: str | None = None,
    kind: str | None = None,
) -> list[dict[str, str]]:
    """Recorded Kubernetes Events, oldest first, filtered by object key, reason, kind."""
    out: list[dict[str, str]] = []
    start = "-"
    with redis_boundary("events"):
        while True:
            page: Any = client.xrange(keys.kevents, start, "+", count=_KEVENT_PAGE)
            for entry_id, fields in page:
                row = {_text(k): _text(v) for k, v in fields.items()}
                if key is not None and row.get("key") != key:
                    continue
                if reason is not None and row.get("reason") != reason:
                    continue
                if kind is not None and row.get("kind") != kind:
                    continue
                row["id"] = _text(entry_id)
                out.append(row)
            if len(page) < _KEVENT_PAGE:
                return out
            start = "(" + _text(page[-1][0])
