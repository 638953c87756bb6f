"""compare marks a difference only when Welch's t-test over the seeds finds it (issue 26,
finding 11), never on wall-clock figures of virtual-time runs, and compares ratios as
percentages with differences in percentage points."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.report.compare import FIGURES, aggregate, figure_value
from cluster_sched.report.significance import student_t_sf, welch_t_test


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [
        (12.706, 1.0, 0.05),  # the textbook two-sided 5 % critical values
        (2.228, 10.0, 0.05),
        (2.086, 20.0, 0.05),
        (3.169, 10.0, 0.01),
        (1.96, 1e7, 0.05),  # the normal limit
        (0.0, 5.0, 1.0),
    ],
    ids=["df1", "df10", "df20", "df10-1pct", "normal", "zero"],
)
def test_student_t_two_sided_tail_matches_the_tables(t: float, df: float, p: float) -> None:
    assert student_t_sf(t, df) == pytest.approx(p, abs=2e-4)


@given(st.floats(0.0, 50.0), st.floats(0.0, 50.0), st.floats(1.0, 200.0))
def test_the_tail_shrinks_as_the_statistic_grows(a: float, b: float, df: float) -> None:
    lo, hi = sorted((a, b))
    assert 0.0 <= student_t_sf(hi, df) <= student_t_sf(lo, df) <= 1.0


def test_welch_on_a_textbook_sample() -> None:
    # Two samples with unequal variances; t, Welch-Satterthwaite df and p by hand:
    # means 20.0 / 23.0, variances 2.5 / 10.0, n 5 / 5 -> se² 2.5, t 1.897, df 5.882
    a = [18.0, 19.0, 20.0, 21.0, 22.0]
    b = [19.0, 21.0, 23.0, 25.0, 27.0]
    w = welch_t_test(a, b)
    assert w is not None
    assert w.t == pytest.approx(3.0 / math.sqrt(2.5))
    assert w.df == pytest.approx(2.5**2 / ((0.5**2) / 4 + (2.0**2) / 4))
    assert 0.1 < w.p < 0.11 and not w.significant
    assert welch_t_test([1.0], [2.0, 3.0]) is None


def _run(config: str, seed: int, figures: dict[str, float], clock: str) -> dict[str, Any]:
    return {
        "workload": "w",
        "config": config,
        "seed": seed,
        "figures": figures,
        "placements_sha256": "",
        "history_sha256": "",
        "clock": clock,
    }


def _diff(name: str, base: list[float], other: list[float], clock: str) -> dict[str, Any]:
    runs = [_run("a", s, {name: v}, clock) for s, v in enumerate(base)]
    runs += [_run("b", s, {name: v}, clock) for s, v in enumerate(other)]
    data = aggregate(runs)
    assert "Welch" in data["significance_test"]
    diff: dict[str, Any] = data["differences"]["w"][name]["b"]
    return diff


@pytest.mark.parametrize(
    ("base", "other", "marked"),
    [
        ([1600.0], [1320.0], False),  # one seed: nothing to test a difference against
        ([100.0, 120.0], [125.0, 145.0], False),  # beyond the spread, p = 0.22
        ([100.0, 101.0, 102.0], [90.0, 91.0, 89.0], True),  # p < 0.001
    ],
    ids=["one-seed", "two-noisy-seeds", "clear"],
)
def test_real_clock_differences_are_marked_only_when_significant(
    base: list[float], other: list[float], marked: bool
) -> None:
    diff = _diff("throughput (pods/s)", base, other, "real")
    assert diff["marked"] is marked
    assert diff["verdict"] == ("worse" if marked else "")


def test_wall_clock_figures_of_virtual_runs_are_never_marked() -> None:
    # The same clear difference that is marked on the real clock above.
    diff = _diff("attempt p50 (ms)", [0.10, 0.11, 0.10], [0.50, 0.51, 0.52], "virtual")
    assert not diff["marked"] and diff["p_value"] is None
    decided = _diff("pending pods (max)", [3.0, 4.0, 3.0], [30.0, 31.0, 29.0], "virtual")
    assert decided["marked"] and decided["verdict"] == "worse"


def test_ratios_are_compared_as_percentages_in_points() -> None:
    util = next(f for f in FIGURES if f.path == ("over_time", "utilisation_mean", "cpu"))
    assert util.unit == "%" and "%" in util.name
    assert figure_value({"over_time": {"utilisation_mean": {"cpu": 0.4125}}}, util) == 41.25
    diff = _diff(util.name, [40.0, 41.0, 40.5], [50.0, 50.5, 51.0], "virtual")
    assert diff["delta"] == pytest.approx(10.0)
    assert diff["unit"] == "percentage points" and diff["delta_pct"] is None
