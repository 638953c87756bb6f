"""Pod lifetimes and arrival processes of a Workload's pod groups (virtual-time runs).

A pod group may say how long its pods run once bound and when they arrive::

    lifetime: {fixed: 300s}                    # or 300, "5m", "1h30m"
    lifetime: {exponential: {mean: 600s}}
    lifetime: {uniform: {min: 60s, max: 10m}}
    arrival: {rate: 2}                          # evenly spaced, pods per second
    arrival: {poisson: {rate: 2}}               # exponential gaps, mean rate
    arrival: {poisson: {count: 10000, over: 6h}} # the rate that spreads count over a span

Times are seconds from the start of the group. Every draw comes from a
``numpy.random.Generator`` seeded from the run's seed and the group's index, so one seed
gives one cluster history, whatever the machine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.errors import InvalidObjectError

__all__ = ["Arrival", "Lifetime", "parse_arrival", "parse_duration", "parse_lifetime"]

_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration(value: Any, field_: str, source: str = "") -> float:
    """Seconds from a number or a Go-style duration (``300s``, ``5m``, ``1h30m``)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        pos, total = 0, 0.0
        for m in _DURATION.finditer(text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if text and pos == len(text):
            return total
    raise InvalidObjectError(
        f"must be a duration (seconds, or like 300s, 5m, 1h30m), got {value!r}",
        obj="Workload",
        field=field_,
        source=source,
    )


def _bad(message: str, field_: str, source: str) -> InvalidObjectError:
    return InvalidObjectError(message, obj="Workload", field=field_, source=source)


@dataclass(frozen=True, slots=True)
class Lifetime:
    """How long a bound pod runs before it completes (seconds)."""

    kind: str  # fixed | exponential | uniform
    a: float
    b: float = 0.0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """float64[n] lifetimes."""
        if self.kind == "fixed":
            return np.full(n, self.a)
        if self.kind == "exponential":
            return rng.exponential(self.a, n)
        return rng.uniform(self.a, self.b, n)


def parse_lifetime(value: Any, field_: str, source: str = "") -> Lifetime | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or len(value) != 1:
        raise _bad(
            "must be one of {fixed: D}, {exponential: {mean: D}}, {uniform: {min: D, max: D}}",
            field_,
            source,
        )
    ((kind, arg),) = value.items()
    where = f"{field_}.{kind}"
    if kind == "fixed":
        return Lifetime("fixed", parse_duration(arg, where, source))
    if kind == "exponential" and isinstance(arg, Mapping):
        mean = parse_duration(arg.get("mean"), f"{where}.mean", source)
        if mean <= 0:
            raise _bad("mean must be positive", f"{where}.mean", source)
        return Lifetime("exponential", mean)
    if kind == "uniform" and isinstance(arg, Mapping):
        lo = parse_duration(arg.get("min"), f"{where}.min", source)
        hi = parse_duration(arg.get("max"), f"{where}.max", source)
        if hi < lo:
            raise _bad("max must not be below min", where, source)
        return Lifetime("uniform", lo, hi)
    raise _bad(f'unknown lifetime "{kind}" (fixed, exponential, uniform)', field_, source)


@dataclass(frozen=True, slots=True)
class Arrival:
    """When a group's pods arrive: evenly at ``rate`` pods/s, or as a Poisson process."""

    kind: str  # rate | poisson
    rate: float

    def times(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """float64[n] arrival times (seconds from the group's start), non-decreasing."""
        if n == 0:
            return np.zeros(0)
        if self.kind == "rate":
            return np.arange(n, dtype=np.float64) / self.rate
        gaps = rng.exponential(1.0 / self.rate, n)
        gaps[0] = 0.0  # the first pod opens the group
        return np.cumsum(gaps)


def parse_arrival(value: Any, count: int, field_: str, source: str = "") -> Arrival | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or len(value) != 1:
        raise _bad(
            "must be {rate: R} or {poisson: {rate: R}} or {poisson: {count: N, over: D}}",
            field_,
            source,
        )
    ((kind, arg),) = value.items()
    where = f"{field_}.{kind}"
    if kind == "rate":
        rate = arg
    elif kind == "poisson" and isinstance(arg, Mapping):
        if "over" in arg:
            span = parse_duration(arg.get("over"), f"{where}.over", source)
            rate = (count / span) if span > 0 else 0
        else:
            rate = arg.get("rate")
    else:
        raise _bad(f'unknown arrival "{kind}" (rate, poisson)', field_, source)
    if not isinstance(rate, int | float) or isinstance(rate, bool) or rate <= 0:
        raise _bad(f"rate must be a positive number, got {rate!r}", where, source)
    return Arrival(kind, float(rate))
