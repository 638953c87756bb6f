"""Quantities: upstream's grammar, exact arithmetic and round-up rules."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.api.quantity import (
    INT64_MAX,
    exact_quantity,
    format_quantity,
    parse_quantity,
)
from cluster_sched.errors import InvalidObjectError, QuantityError

KI, MI, GI = 2**10, 2**20, 2**30

# (text, cpu milli-units, memory units) — cases from upstream's quantity tests.
PARSE_CASES = [
    ("0", 0, 0),
    ("0n", 0, 0),
    ("0Ki", 0, 0),
    ("-0", 0, 0),
    ("1", 1000, 1),
    ("+1", 1000, 1),
    ("9", 9000, 9),
    ("100m", 100, 1),
    ("1500m", 1500, 2),
    ("5n", 1, 1),
    ("4u", 1, 1),
    ("3m", 3, 1),
    ("0.1m", 1, 1),
    ("8k", 8_000_000, 8000),
    ("50k", 50_000_000, 50_000),
    ("7M", 7 * 10**9, 7 * 10**6),
    ("6G", 6 * 10**12, 6 * 10**9),
    ("5T", 5 * 10**15, 5 * 10**12),
    ("2P", 2 * 10**18, 2 * 10**15),
    ("1E", None, 10**18),  # 10**21 milli-cores: past int64
    ("1Ki", 1024 * 1000, KI),
    ("8Ki", 8 * KI * 1000, 8 * KI),
    ("7Mi", 7 * MI * 1000, 7 * MI),
    ("6Gi", 6 * GI * 1000, 6 * GI),
    ("5Ti", 5 * 2**40 * 1000, 5 * 2**40),
    ("4Pi", 4 * 2**50 * 1000, 4 * 2**50),
    ("3Ei", None, 3 * 2**60),
    ("8Ei", None, INT64_MAX),  # binary: clamped to int64, as upstream's parser does
    ("-16Ei", None, -INT64_MAX),
    ("1e3", 1_000_000, 1000),
    ("1E6", 10**9, 10**6),
    ("1e+3", 1_000_000, 1000),
    ("1E-3", 1, 1),
    ("12e-3", 12, 1),
    ("1.1E-3", 2, 1),
    ("0.5", 500, 1),
    (".5", 500, 1),
    ("5.", 5000, 5),
    ("1.0", 1000, 1),
    ("1.5", 1500, 2),
    (".001", 1, 1),
    (".0001k", 100, 1),
    ("100.035k", 100_035_000, 100_035),
    ("0.5Gi", 512 * MI * 1000, 512 * MI),
    ("1.5Gi", 1536 * MI * 1000, 1536 * MI),
    ("0.5Ki", 512_000, 512),
    ("-1", -1000, -1),
    ("-1.5", -1500, -2),
    ("-100m", -100, -1),
    ("  2Gi ", 2 * GI * 1000, 2 * GI),
    ("9223372036854775807", None, INT64_MAX),
    ("9223372036854775807m", INT64_MAX, 9223372036854776),
    ("9223372036854775.808", None, 9223372036854776),
    ("1e-999999999", 1, 1),
]


@pytest.mark.parametrize(
    ("text", "cpu", "memory"), PARSE_CASES, ids=[c[0].strip() or "blank" for c in PARSE_CASES]
)
def test_parse_table(text: str, cpu: int | None, memory: int) -> None:
    """``None``: the cpu amount does not fit int64 milli-units and is rejected."""
    if cpu is None:
        with pytest.raises(QuantityError, match="beyond the int64 range"):
            parse_quantity(text, resource="cpu")
    else:
        assert parse_quantity(text, resource="cpu") == cpu
    assert parse_quantity(text, resource="memory") == memory


# Amounts the scheduler cannot hold in an int64: upstream's API server stores them, and
# its MilliValue()/Value() then wrap silently; rejected here with the limit in the message.
TOO_LARGE = [
    ("9223372036854775808", "memory"),
    ("1e20", "memory"),
    ("100E", "ephemeral-storage"),
    ("1e999999999", "memory"),
    ("-1e999999999", "memory"),
    (str(2**80), "cpu"),
    ("1Ei", "cpu"),
    ("9223372036854775.808", "cpu"),
    ("1e20", "example.com/gpu"),
]


@pytest.mark.parametrize(("text", "resource"), TOO_LARGE, ids=[f"{t}-{r}" for t, r in TOO_LARGE])
def test_beyond_int64_is_rejected_with_the_limit(text: str, resource: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text, resource=resource)
    limit = f"{INT64_MAX}m of cpu" if resource == "cpu" else str(INT64_MAX)
    assert f"at most {limit}" in str(info.value)
    assert repr(text)[:40] in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "cpu", "memory"),
    [
        (2, 2000, 2),
        (0, 0, 0),
        (0.5, 500, 1),
        (1e-05, 1, 1),
        (1.5e9, 1_500_000_000_000, 1_500_000_000),
    ],
    ids=["int", "zero", "float", "float-exponent", "big-float"],
)
def test_yaml_numbers(value: int | float, cpu: int, memory: int) -> None:
    assert parse_quantity(value, resource="cpu") == cpu
    assert parse_quantity(value, resource="memory") == memory


MALFORMED = [
    "4x",
    "",
    "   ",
    "1.2.3",
    "Mi",
    ".",
    "+",
    "-",
    "1e",
    "1K",
    "1ki",
    "1i",
    "0.1mi",
    "0.1am",
    "aoeu",
    "1 1",
    "1+1.0M",
    "-3.01e-",
    "1..0",
    "e3",
    "1Gi3",
    "--1",
    "x" * 2000,
]


@pytest.mark.parametrize("text", MALFORMED, ids=[m[:10] or "empty" for m in MALFORMED])
def test_malformed_raises_naming_value(text: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text, resource="cpu")
    assert isinstance(info.value, InvalidObjectError)
    message = str(info.value)
    assert (repr(text) if len(text) < 40 else "...") in message
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "value",
    [True, None, [1], float("inf"), float("nan")],
    ids=["bool", "none", "list", "inf", "nan"],
)
def test_non_quantity_types_raise(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value, resource="memory")  # type: ignore[arg-type]


def test_bool_after_int_is_not_served_from_cache() -> None:
    assert parse_quantity(1, resource="memory") == 1
    with pytest.raises(QuantityError):
        parse_quantity(True, resource="memory")


@pytest.mark.parametrize(
    ("text", "resource", "exact"),
    [
        ("0.5", "memory", Fraction(1, 2)),
        ("1.0001n", "memory", Fraction(2, 10**9)),  # nano round-up at parse time
        ("0.5m", "cpu", Fraction(1, 2)),
        ("2Gi", "memory", 2 * GI),
        ("1.5", "cpu", 1500),
    ],
    ids=["half-byte", "nano-roundup", "half-milli", "binary", "cpu"],
)
def test_exact_quantity(text: str, resource: str, exact: Fraction | int) -> None:
    assert exact_quantity(text, resource=resource) == exact


@pytest.mark.parametrize(
    ("value", "resource", "text"),
    [
        (1500, "cpu", "1500m"),
        (2000, "cpu", "2"),
        (0, "cpu", "0"),
        (2 * GI, "memory", "2Gi"),
        (1536 * MI, "memory", "1536Mi"),
        (1000, "memory", "1000"),
        (-3 * MI, "memory", "-3Mi"),
        (4 * KI, "ephemeral-storage", "4Ki"),
        (2 * MI, "hugepages-2Mi", "2Mi"),
        (1024, "pods", "1024"),
        (7, "example.com/gpu", "7"),
    ],
    ids=[
        "milli",
        "whole-cpu",
        "zero",
        "gi",
        "mi",
        "plain-bytes",
        "negative",
        "ephemeral",
        "hugepages",
        "pods",
        "extended",
    ],
)
def test_format_quantity(value: int, resource: str, text: str) -> None:
    assert format_quantity(value, resource) == text


RESOURCES = st.sampled_from(["cpu", "memory", "pods", "ephemeral-storage"])
DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def _expected(amount: Fraction, resource: str) -> int | None:
    """The canonical integer, or None where it does not fit int64 (a QuantityError)."""
    scaled = amount * 1000 if resource == "cpu" else amount
    rounded = math.ceil(scaled) if scaled >= 0 else math.floor(scaled)
    return rounded if -INT64_MAX <= rounded <= INT64_MAX else None


def _parsed(text: str, resource: str) -> int | None:
    try:
        return parse_quantity(text, resource=resource)
    except QuantityError:
        return None


@given(st.integers(-(2**62), 2**62), RESOURCES)
def test_format_parse_round_trip(value: int, resource: str) -> None:
    assert parse_quantity(format_quantity(value, resource), resource=resource) == value


@given(st.integers(0, 10**15), st.sampled_from(sorted(DECIMAL)), RESOURCES)
def test_decimal_suffix_scaling(number: int, suffix: str, resource: str) -> None:
    amount = Fraction(number) * Fraction(10) ** DECIMAL[suffix]
    assert _parsed(f"{number}{suffix}", resource) == _expected(amount, resource)


@given(st.integers(0, 10**6), st.sampled_from(sorted(BINARY)), RESOURCES)
def test_binary_suffix_scaling(number: int, suffix: str, resource: str) -> None:
    amount = min(Fraction(number * 2 ** BINARY[suffix]), Fraction(INT64_MAX))  # clamped
    assert _parsed(f"{number}{suffix}", resource) == _expected(amount, resource)


@given(st.integers(0, 10**9), st.integers(-12, 12), RESOURCES)
def test_decimal_exponent(mantissa: int, exponent: int, resource: str) -> None:
    amount = Fraction(mantissa) * Fraction(10) ** exponent
    if amount and amount < Fraction(1, 10**9):
        amount = Fraction(1, 10**9)  # upstream rounds non-zero amounts up to a nano-unit
    assert _parsed(f"{mantissa}e{exponent}", resource) == _expected(amount, resource)


@given(st.integers(0, 10**6), st.text("0123456789", min_size=1, max_size=6), RESOURCES)
def test_fractions_round_up(whole: int, frac: str, resource: str) -> None:
    text = f"{whole}.{frac}"
    amount = Fraction(text)
    nano = Fraction(math.ceil(amount * 10**9), 10**9)
    value = parse_quantity(text, resource=resource)
    assert value == _expected(nano, resource)
    scaled = amount * (1000 if resource == "cpu" else 1)
    assert value >= scaled and value - scaled < 1


@given(st.integers(1, 10**12), st.sampled_from(["", "m", "k", "Mi", "Gi", "e3", "e-2"]), RESOURCES)
def test_sign_is_symmetric(number: int, suffix: str, resource: str) -> None:
    text = f"{number}{suffix}"
    value = _parsed(text, resource)
    assert _parsed(f"-{text}", resource) == (None if value is None else -value)
    assert _parsed(f"+{text}", resource) == value


@given(st.integers(0, 10**6), st.integers(0, 10**4), RESOURCES)
def test_parse_is_ceil_of_exact(whole: int, frac: int, resource: str) -> None:
    text = f"{whole}.{frac:04d}"
    assert parse_quantity(text, resource=resource) == math.ceil(
        exact_quantity(text, resource=resource)
    )
