"""What a process does once the reader of its stdout is gone.

A closed pipe makes every later write fail, and the interpreter's final flush of what is
still buffered fails again, printing "Exception ignored ... BrokenPipeError" on stderr.
Pointing stdout at /dev/null lets the process finish quietly: the CLI (``explain ... |
head``: exit 141) and the feeder child whose parent was killed."""

from __future__ import annotations

import os
import sys

__all__ = ["stdout_reader_gone"]


def stdout_reader_gone() -> None:
    """Later writes to stdout, and the final flush, go to /dev/null."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):
        pass
