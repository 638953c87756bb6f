"""Pod lifetimes and arrival processes: parsing (errors name the field) and the draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.arrivals import parse_arrival, parse_duration, parse_lifetime
from cluster_sched.workload.spec import load_workload
from cluster_sched.workload.virtual import group_phases


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (300, 300.0),
        (2.5, 2.5),
        ("300s", 300.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("1d", 86400.0),
    ],
    ids=["int", "float", "s", "m", "h-m", "ms", "d"],
)
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text, "f") == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "m5", "-3", -3, True, "1h 30m"])
def test_bad_durations_name_the_field(text: Any) -> None:
    with pytest.raises(InvalidObjectError, match=r"lifetime\.fixed"):
        parse_lifetime({"fixed": text}, "lifetime")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"weibull": {}}, "unknown lifetime"),
        ({"exponential": {"mean": 0}}, "mean must be positive"),
        ({"uniform": {"min": "2m", "max": "1m"}}, "max must not be below min"),
        ("300s", "must be one of"),
    ],
    ids=["unknown", "zero-mean", "inverted", "not-a-map"],
)
def test_bad_lifetimes(spec: Any, message: str) -> None:
    with pytest.raises(InvalidObjectError, match=message):
        parse_lifetime(spec, "lifetime")


def test_lifetime_draws() -> None:
    rng = np.random.default_rng(0)
    fixed = parse_lifetime({"fixed": "5m"}, "f")
    assert fixed is not None and list(fixed.draw(rng, 3)) == [300.0] * 3
    exp = parse_lifetime({"exponential": {"mean": "10m"}}, "f")
    assert exp is not None
    assert abs(exp.draw(rng, 20000).mean() - 600) < 20
    uni = parse_lifetime({"uniform": {"min": 10, "max": 20}}, "f")
    assert uni is not None
    draws = uni.draw(rng, 1000)
    assert draws.min() >= 10 and draws.max() <= 20


def test_arrivals() -> None:
    rng = np.random.default_rng(0)
    even = parse_arrival({"rate": 2}, 5, "a")
    assert even is not None and list(even.times(rng, 5)) == [0.0, 0.5, 1.0, 1.5, 2.0]
    poisson = parse_arrival({"poisson": {"count": 10000, "over": "6h"}}, 10000, "a")
    assert poisson is not None
    times = poisson.times(rng, 10000)
    assert times[0] == 0.0 and bool(np.all(np.diff(times) >= 0))
    assert abs(times[-1] - 6 * 3600) < 6 * 3600 * 0.05  # the count spreads over the span
    with pytest.raises(InvalidObjectError, match="rate must be a positive number"):
        parse_arrival({"poisson": {"rate": 0}}, 1, "a")
    with pytest.raises(InvalidObjectError, match="unknown arrival"):
        parse_arrival({"burst": 3}, 1, "a")


GROUPS = """
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {name: phases}
spec:
  podGroups:
  - {name: a, count: 1, wait: false, template: &pod {apiVersion: v1, kind: Pod,
     metadata: {name: p}, spec: {containers: [{name: c, image: i}]}}}
  - {name: b, count: 1, template: *pod}
  - {name: c, count: 1, lifetime: {fixed: 1m}, arrival: {rate: 1}, template: *pod}
"""


def test_groups_start_together_unless_the_previous_one_waits(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(GROUPS)
    w = load_workload(path)
    assert group_phases(w.pod_groups) == [[0, 1], [2]]
    arrivals, lifetimes = w.pod_groups[2].timeline(np.random.default_rng(0))
    assert list(arrivals) == [0.0] and list(lifetimes) == [60.0]
    assert list(w.pod_groups[0].timeline(np.random.default_rng(0))[1]) == [np.inf]


def test_a_bad_lifetime_in_a_workload_names_the_group(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(GROUPS.replace("{fixed: 1m}", "{fixed: soon}"))
    with pytest.raises(InvalidObjectError, match=r"spec.podGroups\[2\].lifetime.fixed"):
        load_workload(path)
