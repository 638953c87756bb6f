"""deferred_interrupt: a signal that lands inside the block reaches the handler that was
in place before, after the block — never inside it, never lost."""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

import pytest

from cluster_sched.interrupts import deferred_interrupt


def test_ctrl_c_inside_the_block_is_raised_after_it() -> None:
    reached_end = False
    with pytest.raises(KeyboardInterrupt), deferred_interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        reached_end = True  # the handler ran (it only records): the block goes on
    assert reached_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_previous_handler_gets_the_signal_once() -> None:
    got: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        got.append(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with deferred_interrupt(signal.SIGTERM):
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            assert got == []
        assert got == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_no_signal_leaves_the_handler_as_it_was() -> None:
    with deferred_interrupt():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_off_the_main_thread_the_block_runs_unchanged() -> None:
    seen: list[object] = []

    def body() -> None:
        with deferred_interrupt():
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen == [signal.default_int_handler]
