"""The clock seam: every time comparison in the scheduler reads ``now()`` from a Clock.

Timestamps are wall-clock seconds since the epoch (not ``time.monotonic``) because they
are stored in Redis and compared by other processes; a monotonic reading means nothing
outside the process that took it. Tests inject :class:`FakeClock` and ``step`` it, so no
test ever waits for real time to pass. ``--clock virtual`` runs inject a
:class:`VirtualClock`, which the virtual-time driver (``workload.virtual``) moves straight
to the next event when nothing is runnable.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "SystemClock", "VirtualClock"]

#: Where a virtual clock starts (2025-01-01T00:00:00Z): a fixed epoch, so runs repeat
#: exactly, and a plausible one, so timestamps stored in Redis read as dates.
VIRTUAL_EPOCH = 1_735_689_600.0


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


class VirtualClock(FakeClock):
    """Simulated time for a whole scheduler: only the virtual-time driver moves it.

    Unlike FakeClock's, ``sleep`` never advances it: a thread sleeping on simulated time
    would move every other thread's "now" with it. The driver jumps ahead with
    ``advance_to`` when nothing is runnable, so hours of cluster life take seconds.
    """

    __slots__ = ()

    def __init__(self, start: float = VIRTUAL_EPOCH) -> None:
        super().__init__(start)

    def advance_to(self, when: float) -> float:
        """Move to ``when`` (a time in the past is a no-op) and return the new time."""
        with self._lock:
            if when > self._now:
                self._now = float(when)
            return self._now

    def sleep(self, seconds: float) -> None:
        """Yield the thread briefly: simulated time moves only by ``advance_to``."""
        time.sleep(0)

    def __repr__(self) -> str:
        return f"VirtualClock({self.now()!r})"
