"""Ctrl-C held back across native code that would swallow it.

numba compiles through llvmlite, which calls back into Python from C (its object cache
notifications). A Ctrl-C that lands in such a callback raises KeyboardInterrupt there,
where ctypes can only print it ("Exception ignored ...", a traceback) and carry on: the
run goes on to the end and exits 0, as if the user had not asked it to stop. Inside
:func:`deferred_interrupt` the signal is only recorded; on leaving, the handler that was
in place before gets it (Python's default raises KeyboardInterrupt, ``serve``'s stop flag
is set), so the interruption is late by one compile, never lost.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["deferred_interrupt"]


@contextmanager
def deferred_interrupt(*signums: int) -> Iterator[None]:
    """Record ``signums`` (SIGINT by default) while the block runs, deliver them after.

    Off the main thread signal handlers cannot be changed (and are never run there), so
    the block runs as it is."""
    wanted = signums or (signal.SIGINT,)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)

    previous = {signum: signal.signal(signum, record) for signum in wanted}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(seen):
            signal.raise_signal(signum)  # to the handler restored above
