"""Ranges of the command line's numeric options, as argparse types.

A value outside its range is an argparse error: one line, exit code 2 (``cli_args.
CliParser``), never a traceback from deep inside the run that finally trips on it.
This module imports nothing of the project, so any command's options can use it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["int_at_least", "port", "seconds", "seed"]


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def seconds(*, zero: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds, > 0 (``zero``: >= 0)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
            bound = "0 or more" if zero else "more than 0"
            raise argparse.ArgumentTypeError(f"must be {bound} seconds, got {text}")
        return value

    parse.__name__ = "seconds"
    return parse


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {value}")
    return value


#: A seed: numpy's generators take non-negative integers only.
seed = int_at_least(0)
