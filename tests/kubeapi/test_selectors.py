"""Label selector strings in apimachinery's full syntax; field selector terms."""

from __future__ import annotations

import pytest

from cluster_sched.kubeapi.errors import ApiError
from cluster_sched.kubeapi.selectors import Selector, parse_field_selector, parse_label_selector

LABELS = {"app": "web", "tier": "front", "rank": "5"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (db, web)", True),
        ("app notin (db,web)", False),
        ("missing notin (a)", True),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("rank>4,rank<6", True),
        ("rank>5", False),
        ("app=web,tier=back", False),
        ("app=web, tier in (front)", True),
    ],
)
def test_label_selector(text: str, matches: bool) -> None:
    reqs = parse_label_selector(text)
    assert Selector(tuple(reqs)).matches({"metadata": {"labels": LABELS}}) is matches


@pytest.mark.parametrize("text", ["app in (a", "=x", "app=a,", "rank>x", "app in a", "a b"])
def test_bad_label_selector_is_400(text: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_label_selector(text)
    assert err.value.code == 400


def test_field_selector_terms_and_values() -> None:
    fields = parse_field_selector(
        "spec.nodeName=n1,status.phase!=Failed", ("spec.nodeName", "status.phase"), "pods"
    )
    sel = Selector(fields=tuple(fields))
    assert sel.matches({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
    assert not sel.matches({"spec": {"nodeName": "n1"}, "status": {"phase": "Failed"}})
    assert not sel.matches({"spec": {}, "status": {}})
    unsched = Selector(
        fields=tuple(parse_field_selector("spec.unschedulable=true", ("spec.unschedulable",), "x"))
    )
    assert unsched.matches({"spec": {"unschedulable": True}})
