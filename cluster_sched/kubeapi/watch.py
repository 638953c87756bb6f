"""The store's event stream, followed once and fanned out to every API watch.

One thread tails the stream (``Store.watch``) and keeps the most recent events in a
window, as the API server's watch cache does; each watch request replays the window from
its resourceVersion and then waits for new events. resourceVersions in the stream are
consecutive integers, so the event after version ``rv`` sits at a computed index and a
version older than the window is known to be gone: 410 Expired, and the client relists.
Only events are held (a bounded window), never a copy of the objects.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from cluster_sched.errors import StoreError
from cluster_sched.store.results import EventType, ResourceExpiredError, WatchEvent
from cluster_sched.store.store import Store
from cluster_sched.store.streams import decode_entry

__all__ = ["DEFAULT_WINDOW", "Expired", "WatchCache"]

#: Most recent events a watch can resume from (older versions answer 410 Expired).
DEFAULT_WINDOW = 50_000

_log = logging.getLogger(__name__)


class Expired(Exception):
    """The requested resourceVersion is older than the window."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class WatchCache:
    """A window of the stream's latest events; ``since(rv)`` is what follows ``rv``."""

    def __init__(self, store: Store, window: int = DEFAULT_WINDOW, block_ms: int = 200) -> None:
        self._store = store
        self._window = window
        self._block_ms = block_ms
        self._cond = threading.Condition()
        self._events: list[WatchEvent] = []
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
        events = [decode_entry(i, f) for i, f in reversed(raw)]
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
        while not self._stop.is_set():
            try:
                for event in self._store.watch(
                    self._last_id, block_ms=self._block_ms, stop_when_idle=True
                ):
                    self._append(event)
                    if self._stop.is_set():
                        return
            except ResourceExpiredError:
                _log.warning("watch cache: stream trimmed past us; restarting the window")
                self._prefill()
            except StoreError as exc:
                _log.warning("watch cache: %s", exc)
                self._stop.wait(1.0)

    def _append(self, event: WatchEvent) -> None:
        with self._cond:
            self._last_id = event.id
            if event.type is EventType.ERROR and not event.rv:
                return
            if self._events and event.rv != self._events[-1].rv + 1:
                self._events = []  # a gap: only versions after it can be served
            self._events.append(event)
            self._last_rv = max(self._last_rv, event.rv)
            if len(self._events) > 2 * self._window:
                del self._events[: len(self._events) - self._window]
            self._cond.notify_all()

    def since(self, rv: int, timeout: float) -> list[WatchEvent]:
        """Events with resourceVersion > ``rv``, waiting up to ``timeout`` seconds for
        one; raises Expired when ``rv`` is older than the window."""
        with self._cond:
            events = self._after(rv)
            if events or timeout <= 0 or self._stop.is_set():
                return events
            self._cond.wait(timeout)
            return self._after(rv)

    def _after(self, rv: int) -> list[WatchEvent]:
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
