"""The clock seam: every time comparison in the scheduler reads ``now()`` from a Clock.

Timestamps are wall-clock seconds since the epoch (not ``time.monotonic``) because they
are stored in Redis and compared by other processes; a monotonic reading means nothing
outside the process that took it. Tests inject :class:`FakeClock` and ``step`` it, so no
test ever waits for real time to pass.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Source of "now" and of waiting; injected wherever time matters."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (a fake clock advances instead of waiting)."""
        ...


class SystemClock:
    """The real wall clock."""

    __slots__ = ()

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


class FakeClock:
    """A clock that only moves when told to: ``step(seconds)`` or ``sleep(seconds)``.

    Thread-safe, because the queue's background flusher reads it while a test steps it.
    """

    __slots__ = ("_lock", "_now")

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> float:
        """Advance by ``seconds`` (never backwards) and return the new time."""
        if seconds < 0:
            raise ValueError(f"a clock cannot step backwards ({seconds} s)")
        with self._lock:
            self._now += seconds
            return self._now

    def sleep(self, seconds: float) -> None:
        """Sleeping on a fake clock advances it, so code that sleeps finishes at once."""
        if seconds > 0:
            self.step(seconds)

    def __repr__(self) -> str:
        return f"FakeClock({self.now()!r})"
