"""Kubernetes resource quantities (``500m``, ``1.5Gi``, ``12e6``) as exact integers.

The grammar is upstream's ``resource.Quantity``::

    <quantity>        ::= <signedNumber><suffix>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

Arithmetic is exact (``Fraction``/``int``, never float), with upstream's two roundings:

1. at parse time a non-zero amount is rounded *away from zero* to a whole nano-unit
   ("if you want some resources, you should get some resources");
2. ``cpu`` is read with ``MilliValue()`` and everything else with ``Value()``: both are
   ``ceil`` for positive amounts and round away from zero for negative ones.

Where this differs from upstream, on purpose:

- a number needs at least one digit. Upstream's scanner accepts ``"."``, ``"+"`` and
  ``"Mi"`` as zero, which is never what a manifest author meant.
- the scheduler reads every quantity as an int64 (cpu in milli-units), as upstream's
  ``Value()``/``MilliValue()`` do. Upstream's parser clamps a binary-suffixed magnitude
  (``16Ei``) to int64 base units and we do the same; it keeps any other magnitude
  exactly, and ``MilliValue()`` / ``Value()`` then silently wrap past int64 (``cpu: 1Ei``
  or ``memory: 1e20`` reach the scheduler as garbage). Such a quantity is rejected here,
  with the largest accepted value in the message: 9223372036854775807 units, or
  9223372036854775807m of cpu (about 9.2e15 cores).
- quantity strings longer than 1000 characters are rejected.
- leading/trailing blanks are ignored, as upstream's JSON/YAML unmarshalling does.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from cluster_sched.errors import QuantityError

__all__ = [
    "INT64_MAX",
    "exact_quantity",
    "format_quantity",
    "parse_quantity",
    "quantity_pair",
]

#: Largest magnitude a quantity may have (upstream's ``maxAllowed``).
INT64_MAX = 2**63 - 1

_NANO = 10**9
_MAX_TEXT = 1000

_QUANTITY_RE = re.compile(
    r"([+-]?)([0-9]*)(?:\.([0-9]*))?"
    r"(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?[0-9]+))?"
)
_DECIMAL_SUFFIX = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_BY_SIZE = sorted(_BINARY_SUFFIX.items(), key=lambda kv: -kv[1])

#: Resources measured in bytes: format_quantity shows them with binary suffixes.
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})

Amount = int | Fraction


def _invalid(text: object, why: str) -> QuantityError:
    return QuantityError(f"quantity {text!r} is not a valid Kubernetes quantity: {why}")


def _as_text(value: object) -> str:
    """Manifests carry quantities as strings or bare YAML/JSON numbers."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise _invalid(value, "empty")
        return text
    if isinstance(value, bool):
        raise _invalid(value, "expected a string or a number, got a boolean")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _invalid(value, "not a finite number")
        # repr is the shortest string that reads back as the same float, which is what
        # the manifest author typed in practically every case ("0.5", "1e-05").
        return repr(value)
    raise _invalid(value, f"expected a string or a number, got {type(value).__name__}")


class _TooLarge(Exception):
    """A magnitude past int64 base units; _canonical names the limit of the resource."""


@lru_cache(maxsize=1 << 16)
def _base_amount(text: str) -> Amount:
    """Exact value of ``text`` in base units after the nano round-up.

    A binary-suffixed magnitude beyond int64 is clamped to it (upstream's ``maxAllowed``);
    any other is a QuantityError (see the module docstring).
    """
    if not text:
        raise _invalid(text, "empty")
    if len(text) > _MAX_TEXT:
        raise _invalid(text[:40] + "...", f"longer than {_MAX_TEXT} characters")
    m = _QUANTITY_RE.fullmatch(text)
    if m is None:
        raise _invalid(text, "expected a number with an optional suffix such as 500m, 2Gi or 1e3")
    sign, whole, frac, suffix, exponent = m.groups()
    frac = frac or ""
    if not whole and not frac:
        raise _invalid(text, "no digits")
    mantissa = int((whole + frac).lstrip("0") or "0")
    if mantissa == 0:
        return 0
    negative = sign == "-"
    if suffix in _BINARY_SUFFIX:
        two, ten = _BINARY_SUFFIX[suffix], -len(frac)
    else:
        two = 0
        ten = (
            int(exponent) if exponent is not None else _DECIMAL_SUFFIX.get(suffix or "", 0)
        ) - len(frac)
    # Bound the magnitude (10**low <= |value| < 10**high) so an absurd exponent never
    # builds a 10**huge integer; 0.30 < log10(2) < 0.31.
    digits = len(str(mantissa)) + ten
    low, high = digits - 1 + (two * 30) // 100, digits + (two * 31 + 99) // 100
    if low >= 19:
        if not two:
            raise _TooLarge
        return -INT64_MAX if negative else INT64_MAX
    if high <= -10:
        amount: Amount = Fraction(1, _NANO)  # non-zero and below a nano-unit
    else:
        exact = Fraction(mantissa << two) * (Fraction(10) ** ten)
        amount = Fraction(-((-exact * _NANO) // 1), _NANO)  # round up to a nano-unit
        if amount > INT64_MAX:
            if not two:
                raise _TooLarge
            amount = Fraction(INT64_MAX)
    if amount.denominator == 1:
        amount = int(amount)
    return -amount if negative else amount


@lru_cache(maxsize=1 << 16)
def _canonical(text: str, milli: bool) -> tuple[int, Amount]:
    """(rounded, exact) amount in canonical units: milli-units when ``milli``.

    QuantityError when the rounded amount does not fit int64 (``cpu: 1Ei``).
    """
    try:
        base = _base_amount(text)
    except _TooLarge:
        base = None
    rounded: Amount | None = None
    exact: Amount = 0
    if base is not None:
        exact = base * 1000 if milli else base
        if isinstance(exact, Fraction):
            if exact.denominator == 1:
                exact = int(exact)
            rounded = math.ceil(exact) if exact > 0 else math.floor(exact)
        else:
            rounded = exact
    if rounded is None or not -INT64_MAX <= rounded <= INT64_MAX:
        limit = f"{INT64_MAX}m of cpu" if milli else str(INT64_MAX)
        raise _invalid(text, f"beyond the int64 range the scheduler reads (at most {limit})")
    return int(rounded), exact


def parse_quantity(value: str | int | float, *, resource: str) -> int:
    """Parse a quantity into the scheduler's canonical integer for ``resource``.

    ``cpu`` becomes milli-cores (upstream ``MilliValue()``), every other resource whole
    units (``Value()``); both round up. Raises QuantityError naming the value.
    """
    return _canonical(_as_text(value), resource == "cpu")[0]


def exact_quantity(value: str | int | float, *, resource: str) -> Amount:
    """The same amount as parse_quantity, before the final round-up.

    Upstream sums a pod's container quantities exactly and rounds the total once; pod
    request aggregation uses this to reproduce that (``0.5`` + ``0.5`` bytes is 1, not 2).
    """
    return _canonical(_as_text(value), resource == "cpu")[1]


def quantity_pair(value: str | int | float, *, resource: str) -> tuple[int, Amount]:
    """``(parse_quantity(...), exact_quantity(...))`` in one cached lookup."""
    return _canonical(_as_text(value), resource == "cpu")


def format_quantity(value: int, resource: str) -> str:
    """Render a canonical integer for people: ``1500m``, ``2``, ``2Gi``, ``1000``.

    ``parse_quantity(format_quantity(v, r), resource=r) == v`` for every int64 ``v``.
    """
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value and (resource in _BYTE_RESOURCES or resource.startswith("hugepages-")):
        sign, magnitude = ("-", -value) if value < 0 else ("", value)
        for suffix, shift in _BINARY_BY_SIZE:
            if magnitude & ((1 << shift) - 1) == 0:
                return f"{sign}{magnitude >> shift}{suffix}"
    return str(value)
