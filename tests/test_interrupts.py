"""ctrl_c_never_swallowed: a Ctrl-C handled inside a garbage-collector callback or a
``__del__`` (where Python can only print an exception and drop it) still stops the
command, a few milliseconds later; anywhere else it raises at once, as Python's own."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from cluster_sched.interrupts import ctrl_c_never_swallowed


@pytest.fixture(autouse=True)
def ctrl_c_deliverable() -> Any:
    """Python's own SIGINT handler for each test. A process started in the background of a
    non-interactive shell (``cmd &``, as a CI script may) inherits SIGINT ignored, and
    Python then leaves it ignored: no Ctrl-C would ever arrive to test."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> list[type[BaseException]]:
    """The exceptions Python dropped ("Exception ignored in ..."), by type."""
    dropped: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: dropped.append(info.exc_type))
    return dropped


def _wait_for_interrupt(seconds: float = 2.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.001)


def _interrupt_here() -> None:
    """Send SIGINT and loop: Python runs the handler at the loop's next backward jump,
    in this frame (a bare return would leave it to the caller's frame)."""
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):
        pass


def _interrupt_from_gc_callback(done: list[str]) -> Callable[[str, dict[str, Any]], None]:
    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and not done:
            _interrupt_here()
            done.append("callback ran to its end")

    return callback


def test_ctrl_c_inside_a_gc_callback_is_delivered_after_it(
    unraisable: list[type[BaseException]],
) -> None:
    done: list[str] = []
    callback = _interrupt_from_gc_callback(done)
    with ctrl_c_never_swallowed(), pytest.raises(KeyboardInterrupt):
        gc.callbacks.append(callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(callback)
        _wait_for_interrupt()
    assert done == ["callback ran to its end"]
    assert unraisable == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_it_the_gc_callback_swallows_ctrl_c(unraisable: list[type[BaseException]]) -> None:
    """What the handler is for: Python's own handler raises inside the callback, the
    collector prints the exception and drops it, and nothing stops the loop."""
    done: list[str] = []
    callback = _interrupt_from_gc_callback(done)
    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    _wait_for_interrupt(0.2)  # no KeyboardInterrupt: it was lost
    assert done == []  # the callback itself was cut short
    assert unraisable == [KeyboardInterrupt]


def test_ctrl_c_inside_del_is_delivered_after_it(unraisable: list[type[BaseException]]) -> None:
    class Interrupting:
        def __del__(self) -> None:
            _interrupt_here()

    with ctrl_c_never_swallowed(), pytest.raises(KeyboardInterrupt):
        Interrupting()  # freed at once: __del__ runs here
        _wait_for_interrupt()
    assert unraisable == []


def test_a_ctrl_c_still_deferred_when_the_command_ends_is_raised_not_lost(
    monkeypatch: pytest.MonkeyPatch, unraisable: list[type[BaseException]]
) -> None:
    """The command ends while its resend is still waiting: the resend is cancelled and
    the interruption raised in its place (it was dropped, exit 0, before)."""
    import cluster_sched.interrupts as interrupts

    monkeypatch.setattr(interrupts, "RESEND_AFTER", 60.0)  # it cannot fire during the test
    done: list[str] = []
    callback = _interrupt_from_gc_callback(done)
    left = False
    with pytest.raises(KeyboardInterrupt), ctrl_c_never_swallowed():
        gc.callbacks.append(callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(callback)
        left = True  # deferred: nothing raised in the body
    assert left and done == ["callback ran to its end"]
    assert interrupts._resends == []  # the timer was settled, not left to fire later
    assert unraisable == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_elsewhere_ctrl_c_raises_at_once() -> None:
    reached = False
    with ctrl_c_never_swallowed(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs within a few bytecodes
            pass
        reached = True
    assert not reached


def test_off_the_main_thread_it_changes_nothing() -> None:
    seen: list[object] = []

    def body() -> None:
        with ctrl_c_never_swallowed():
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen == [signal.default_int_handler]


def test_ctrl_c_inside_a_weakref_callback_the_collector_runs_is_delivered_after_it(
    unraisable: list[type[BaseException]],
) -> None:
    """A Ctrl-C handled in any frame the collector runs, not only the callbacks the frame
    check names: here a weakref callback of a cycle being freed (as when the signal,
    caught by another thread, reaches the main thread after the frame it hit returned)."""

    class Node:
        other: Any

    done: list[str] = []

    def on_freed(_ref: Any) -> None:
        _interrupt_here()
        done.append("callback ran to its end")

    with ctrl_c_never_swallowed(), pytest.raises(KeyboardInterrupt):
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the collector frees it
        ref = weakref.ref(a, on_freed)
        del a, b
        gc.collect()
        _wait_for_interrupt()
    assert done == ["callback ran to its end"]
    assert unraisable == []
    assert ref() is None
