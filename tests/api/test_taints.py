"""Taint/toleration matching as upstream ToleratesTaint and the TaintToleration plugin."""

from __future__ import annotations

import pytest

from cluster_sched.api.objects import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, Taint, Toleration
from cluster_sched.api.taints import (
    count_intolerable_prefer_no_schedule,
    find_matching_untolerated_taint,
    toleration_tolerates_taint,
)

TAINT = Taint(key="dedicated", value="gpu", effect=NO_SCHEDULE)

TOLERATES_CASES = [
    (
        "equal-match",
        Toleration(key="dedicated", operator="Equal", value="gpu", effect=NO_SCHEDULE),
        True,
    ),
    (
        "equal-other-value",
        Toleration(key="dedicated", operator="Equal", value="cpu", effect=NO_SCHEDULE),
        False,
    ),
    ("empty-operator-is-equal", Toleration(key="dedicated", operator="", value="gpu"), True),
    (
        "exists-ignores-value",
        Toleration(key="dedicated", operator="Exists", effect=NO_SCHEDULE),
        True,
    ),
    ("empty-effect-matches-all", Toleration(key="dedicated", operator="Exists"), True),
    ("other-effect", Toleration(key="dedicated", operator="Exists", effect=NO_EXECUTE), False),
    ("other-key", Toleration(key="team", operator="Exists"), False),
    ("empty-key-exists-matches-all", Toleration(operator="Exists"), True),
    (
        "empty-key-exists-effect-filter",
        Toleration(operator="Exists", effect=PREFER_NO_SCHEDULE),
        False,
    ),
    ("unknown-operator", Toleration(key="dedicated", operator="Gt", value="gpu"), False),
]


@pytest.mark.parametrize(
    ("tol", "want"), [c[1:] for c in TOLERATES_CASES], ids=[c[0] for c in TOLERATES_CASES]
)
def test_toleration_tolerates_taint(tol: Toleration, want: bool) -> None:
    assert toleration_tolerates_taint(tol, TAINT) is want


NODE_TAINTS = (
    Taint(key="soft", effect=PREFER_NO_SCHEDULE),
    Taint(key="a", value="1", effect=NO_SCHEDULE),
    Taint(key="b", effect=NO_EXECUTE),
)
FILTER_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})

UNTOLERATED_CASES = [
    ("no-tolerations-first-hard-taint", (), NODE_TAINTS[1]),
    ("first-tolerated-reports-next", (Toleration(key="a", value="1"),), NODE_TAINTS[2]),
    (
        "all-tolerated",
        (Toleration(key="a", value="1"), Toleration(key="b", operator="Exists")),
        None,
    ),
    ("wildcard", (Toleration(operator="Exists"),), None),
    (
        "wrong-effect-toleration",
        (Toleration(key="a", value="1", effect=NO_EXECUTE),),
        NODE_TAINTS[1],
    ),
]


@pytest.mark.parametrize(
    ("tols", "want"), [c[1:] for c in UNTOLERATED_CASES], ids=[c[0] for c in UNTOLERATED_CASES]
)
def test_find_matching_untolerated_taint(tols: tuple[Toleration, ...], want: Taint | None) -> None:
    assert find_matching_untolerated_taint(NODE_TAINTS, tols, FILTER_EFFECTS) == want


def test_untolerated_taint_ignores_effects_outside_filter() -> None:
    assert find_matching_untolerated_taint(NODE_TAINTS[:1], (), FILTER_EFFECTS) is None
    assert (
        find_matching_untolerated_taint(NODE_TAINTS, (), frozenset({PREFER_NO_SCHEDULE}))
        == NODE_TAINTS[0]
    )


PREFER_TAINTS = (
    Taint(key="a", effect=PREFER_NO_SCHEDULE),
    Taint(key="b", value="x", effect=PREFER_NO_SCHEDULE),
    Taint(key="c", effect=NO_SCHEDULE),
)

COUNT_CASES = [
    ("none-tolerated", (), 2),
    ("one-tolerated", (Toleration(key="a", operator="Exists", effect=PREFER_NO_SCHEDULE),), 1),
    ("empty-effect-counts", (Toleration(key="b", value="x"),), 1),
    (
        "noschedule-toleration-ignored",
        (Toleration(key="a", operator="Exists", effect=NO_SCHEDULE),),
        2,
    ),
    ("wildcard", (Toleration(operator="Exists"),), 0),
]


@pytest.mark.parametrize(
    ("tols", "want"), [c[1:] for c in COUNT_CASES], ids=[c[0] for c in COUNT_CASES]
)
def test_count_intolerable_prefer_no_schedule(tols: tuple[Toleration, ...], want: int) -> None:
    assert count_intolerable_prefer_no_schedule(PREFER_TAINTS, tols) == want
