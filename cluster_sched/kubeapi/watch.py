"""The store's event stream, followed once and fanned out to every API watch.

One thread tails the stream (``Store.watch``) and keeps the most recent events in a
window, as the API server's watch cache does; each watch request replays the window from
its resourceVersion and then waits for new events. resourceVersions in the stream are
consecutive integers, so the event after version ``rv`` sits at a computed index and a
version older than the window is known to be gone: 410 Expired, and the client relists.
Only events are held (a bounded window), never a copy of the objects.

Per event, the cost is one msgpack decode and one JSON encoding, paid by the first watch
that sends it and shared by every other (``CachedEvent.json``); the follower reads the
stream at most every ``READ_INTERVAL`` (one XREAD per batch, not one per write, so a busy
run costs Redis a few dozen reads a second however many watches follow it).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from cluster_sched.errors import StoreError
from cluster_sched.kubeapi.request import dumps
from cluster_sched.store.boundary import redis_boundary
from cluster_sched.store.codec import gc_paused, unpack_object
from cluster_sched.store.results import EventType
from cluster_sched.store.store import Store

__all__ = ["DEFAULT_WINDOW", "CachedEvent", "Expired", "WatchCache"]

#: Most recent events a watch can resume from (older versions answer 410 Expired).
DEFAULT_WINDOW = 50_000
#: Most stream entries one read of the cache's follower takes.
READ_COUNT = 1000
#: A read that did not fill ``READ_COUNT`` is followed by the next one this many seconds
#: after it began, so events gather into batches while the scheduler writes at full speed
#: (the coordinator reads its own watch at most every 20 ms too). A watch's latency grows
#: by at most this much; its events, order and versions do not change.
READ_INTERVAL = 0.02


#: A stream entry's type field (bytes from Redis, text from a decoding client) to its type.
_TYPES: dict[bytes | str, EventType] = {
    **{t.value: t for t in EventType},
    **{t.value.encode(): t for t in EventType},
}


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


class CachedEvent:
    """One stream entry in the window, its object decoded when a watch first reads it.

    The cache follows every write of the run; most are never sent (no watch, or a watch
    of another kind), so the entry keeps the stored bytes and pays the decoding only
    for what some watch reads. The first watch to send it encodes the object as JSON
    once (``json``) and every later watch sends those bytes as they are.
    An object that cannot be decoded makes the event an ERROR with a message, as the
    store's own watch reports one (one bad entry never ends a watch)."""

    __slots__ = ("_error", "_json", "_raw", "id", "key", "kind", "rv", "type")

    def __init__(
        self, entry_id: str, etype: EventType, kind: str, key: str, rv: int, raw: bytes
    ) -> None:
        self.id, self.type, self.kind, self.key, self.rv = entry_id, etype, kind, key, rv
        self._raw: bytes | None = raw
        self._json: bytes | None = None
        self._error: dict[str, Any] = {}

    @classmethod
    def from_entry(cls, entry_id: bytes | str, fields: Any) -> CachedEvent:
        try:
            etype = _TYPES[fields[b"type"]]
            rv_text = _text(fields[b"rv"])
            rv = int(rv_text) if rv_text.isdigit() else 0
            kind, key, raw = _text(fields[b"kind"]), _text(fields[b"key"]), fields[b"obj"]
        except (KeyError, ValueError):
            return cls(_text(entry_id), EventType.ERROR, "", "", 0, b"")
        if not (kind and key and rv > 0):
            etype = EventType.ERROR
        return cls(_text(entry_id), etype, kind, key, rv, raw)

    @property
    def obj(self) -> dict[str, Any]:
        """The object, decoded afresh on each read and never kept: a window of 50,000
        decoded objects would be millions of containers for the collector to walk."""
        if self._raw is None:
            return self._error
        try:
            return unpack_object(self._raw, self.kind, self.key)
        except StoreError as err:
            self._error = {"message": f"watch event {self.id} is unreadable: {err}"}
            self.type = EventType.ERROR
            self._raw = None
            return self._error

    def json(self, obj: dict[str, Any] | None = None) -> bytes:
        """The object as compact JSON (``request.dumps``), encoded by the first watch
        that sends it and kept for the others (the stored bytes stay too: ``obj`` decodes
        those, exactly); ``obj``, when the caller has decoded it already. Read ``type``
        after it: an unreadable object makes the event an ERROR."""
        data = self._json
        if data is None:
            data = self._json = dumps(self.obj if obj is None else obj)
        return data


def _entries(reply: Any) -> list[tuple[Any, Any]]:
    """The entries of an XREAD/XREVRANGE reply (RESP2 or RESP3 shapes)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        (value,) = reply.values()
        return list(value[0]) if value and isinstance(value[0], list) else list(value)
    if isinstance(reply[0], (list, tuple)) and len(reply[0]) == 2 and isinstance(reply[0][1], list):
        return list(reply[0][1])
    return list(reply)


_log = logging.getLogger(__name__)


class Expired(Exception):
    """The requested resourceVersion is older than the window."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class WatchCache:
    """A window of the stream's latest events; ``since(rv)`` is what follows ``rv``."""

    def __init__(
        self,
        store: Store,
        window: int = DEFAULT_WINDOW,
        block_ms: int = 200,
        interval: float = READ_INTERVAL,
    ) -> None:
        self._store = store
        self._interval = interval
        self._window = window
        self._block_ms = block_ms
        self._cond = threading.Condition()
        self._events: list[CachedEvent] = []
        #: rv of the newest event seen (or the counter when the window was started)
        self._last_rv = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_id = "0-0"

    def start(self) -> None:
        self._prefill()
        self._thread = threading.Thread(target=self._follow, name="kubeapi-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def last_rv(self) -> int:
        with self._cond:
            return self._last_rv

    def _prefill(self) -> None:
        """Load the newest ``window`` events, so watches from a version listed before
        the server started still resume."""
        client, keys = self._store.client, self._store.keys
        pipe = client.pipeline(transaction=True)
        pipe.xrevrange(keys.events, "+", "-", count=self._window)
        pipe.get(keys.rv)
        raw, counter = pipe.execute()
        events = [CachedEvent.from_entry(i, f) for i, f in reversed(raw)]
        events = [e for e in events if e.rv > 0]
        # keep only the gapless tail (the window must be consecutive versions)
        start = len(events)
        while start > 0 and (start == len(events) or events[start - 1].rv == events[start].rv - 1):
            start -= 1
        events = events[start:]
        with self._cond:
            self._events = events
            self._last_rv = events[-1].rv if events else int(counter or 0)
            self._last_id = raw[0][0].decode() if raw else "0-0"
            if not raw:
                self._last_id = "0-0"

    def _follow(self) -> None:
        """Read the stream after the last entry seen, ``READ_COUNT`` at a time and at
        most every ``READ_INTERVAL``. Entries trimmed before they were read show as a
        gap in resourceVersions: ``_append`` restarts the window after it (watches from
        before it get 410 Expired)."""
        client, stream = self._store.client, self._store.keys.events
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                with redis_boundary("watch cache"):
                    reply = client.xread(
                        {stream: self._last_id}, count=READ_COUNT, block=self._block_ms
                    )
            except StoreError as exc:
                _log.warning("watch cache: %s", exc)
                self._stop.wait(1.0)
                continue
            with gc_paused():
                batch = [CachedEvent.from_entry(i, f) for i, f in _entries(reply)]
            if batch:
                self._append(batch)
            if len(batch) < READ_COUNT:  # caught up: let the next batch gather
                self._stop.wait(self._interval - (time.monotonic() - began))

    def _append(self, batch: list[CachedEvent]) -> None:
        with self._cond:
            for event in batch:
                self._last_id = event.id
                if event.type is EventType.ERROR and not event.rv:
                    continue
                if self._events and event.rv != self._events[-1].rv + 1:
                    self._events = []  # a gap: only versions after it can be served
                self._events.append(event)
                self._last_rv = max(self._last_rv, event.rv)
            if len(self._events) > 2 * self._window:
                del self._events[: len(self._events) - self._window]
            self._cond.notify_all()

    def since(self, rv: int, timeout: float) -> list[CachedEvent]:
        """Events with resourceVersion > ``rv``, waiting up to ``timeout`` seconds for
        one; raises Expired when ``rv`` is older than the window."""
        with self._cond:
            events = self._after(rv)
            if events or timeout <= 0 or self._stop.is_set():
                return events
            self._cond.wait(timeout)
            return self._after(rv)

    def _after(self, rv: int) -> list[CachedEvent]:
        events = self._events
        if not events:
            if rv < self._last_rv:
                raise Expired(rv, self._last_rv)
            return []
        first = events[0].rv
        if rv < first - 1:
            raise Expired(rv, first - 1)
        index = rv - first + 1
        return events[index:] if index < len(events) else []

    def snapshot_info(self) -> dict[str, Any]:
        with self._cond:
            return {
                "events": len(self._events),
                "oldest": self._events[0].rv if self._events else None,
                "newest": self._last_rv,
            }
