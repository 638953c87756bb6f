"""Ctrl-C that always stops the command, even when it lands inside a callback.

Python raises KeyboardInterrupt in whatever Python frame runs when the signal is
handled. Some frames are called from C code that can only report an exception and carry
on ("Exception ignored in: ...", a traceback on stderr): the garbage collector's
callbacks (``gc_policy`` registers one, run at every collection), ``__del__`` methods,
and llvmlite's callbacks while numba compiles. A Ctrl-C raised there is lost: the run
goes on to the end and exits 0. :func:`ctrl_c_never_swallowed` (the CLI's ``main``)
installs a handler that, inside such a frame, sends the signal again a few
milliseconds later instead of raising, by when the callback has returned: the
interruption is late by one callback, never lost.

A process-directed SIGINT may be caught by another thread's C handler and run on the
main thread a little later, by when the frame that was interrupted has returned and the
collector is running something the frame check cannot name (a weakref callback, a
finalizer of an object from elsewhere). So while a collection runs (between its
``start`` and ``stop`` callbacks, tracked by a callback of our own registered first),
the signal is sent again too.

When the command ends, a resend still waiting is not dropped (the interruption would be
lost): it is cancelled and KeyboardInterrupt raised in its place. A resend whose timer
had already fired is waited for while the handler is still ours, so its signal cannot
arrive after the previous handler is back (or once the interpreter has reset SIGINT to
its default on the way out: the process then died of SIGINT, status -2, not 130).
"""

from __future__ import annotations

import gc
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["ctrl_c_never_swallowed"]

#: Seconds before a deferred Ctrl-C is sent again: far longer than a callback runs.
RESEND_AFTER = 0.005


class _Resend(threading.Timer):
    """Signals the main thread once, after ``RESEND_AFTER`` seconds, unless cancelled
    first; ``sent`` says which happened. The signal goes to the main thread itself (not
    the process, which may hand it to any thread) so that a blocking call there returns
    at once to run the handler."""

    def __init__(self, signum: int) -> None:
        super().__init__(RESEND_AFTER, self._send, (signum,))
        self.daemon = True
        self.sent = False

    def _send(self, signum: int) -> None:
        self.sent = True
        main = threading.main_thread().ident
        if main is not None:
            signal.pthread_kill(main, signum)


_resends: list[_Resend] = []

#: True between a collection's "start" and "stop" callbacks (``_track_collection``).
_collecting = [False]


def _track_collection(phase: str, info: dict[str, int]) -> None:
    _collecting[0] = phase == "start"


def _inside_callback(frame: FrameType | None) -> bool:
    """True if a frame on the stack is one whose exceptions C code would swallow."""
    callbacks = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    while frame is not None:
        code = frame.f_code
        if code in callbacks or code.co_name == "__del__":
            return True
        if str(frame.f_globals.get("__name__", "")).startswith("llvmlite."):
            return True  # numba's compiler, whose object-cache hooks are ctypes callbacks
        frame = frame.f_back
    return False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _collecting[0] or _inside_callback(frame):
        resend = _Resend(signum)
        _resends.append(resend)
        resend.start()
        return
    raise KeyboardInterrupt


@contextmanager
def ctrl_c_never_swallowed() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, except inside a callback (see the module's
    docstring), for the duration. Off the main thread handlers cannot be set: no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    gc.callbacks.insert(0, _track_collection)
    try:
        yield
    finally:
        try:
            _settle_resends()
        finally:
            signal.signal(signal.SIGINT, previous)
            gc.callbacks.remove(_track_collection)
            _collecting[0] = False


def _settle_resends() -> None:
    """Resolve the deferred Ctrl-Cs before the handler is restored: every resend is
    cancelled, then waited for. One that had fired has interrupted the main thread by
    then (our handler raises for it, here at the latest); one cancelled before it fired
    raises here instead, so the interruption is late, never lost."""
    unsent = False
    while _resends:  # the handler may defer again while we wait: those are settled too
        resends = list(_resends)
        _resends.clear()
        for resend in resends:
            resend.cancel()
        for resend in resends:
            resend.join()
            unsent = unsent or not resend.sent
    if unsent:
        raise KeyboardInterrupt
