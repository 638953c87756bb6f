"""Priority admission: a pod's priority from its PriorityClass, as the API server does."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.errors import InvalidObjectError
from cluster_sched.store import PriorityClassInfo, PriorityTable, Store, admit_pod
from cluster_sched.testing import make_pod


def priority_class(name: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def spec_of(store: Store, name: str) -> dict[str, Any]:
    return store.get("Pod", f"default/{name}")["spec"]


TABLE = PriorityTable(
    [
        PriorityClassInfo("high", 1000),
        PriorityClassInfo("batch", 10, preemption_policy="Never"),
        PriorityClassInfo("default-low", 5, global_default=True),
        PriorityClassInfo("default-lower", 3, global_default=True),
    ]
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"priorityClassName": "high"},
            {
                "priorityClassName": "high",
                "priority": 1000,
                "preemptionPolicy": "PreemptLowerPriority",
            },
        ),
        (
            {"priorityClassName": "batch"},
            {"priorityClassName": "batch", "priority": 10, "preemptionPolicy": "Never"},
        ),
        (
            {},
            {
                "priorityClassName": "default-lower",
                "priority": 3,
                "preemptionPolicy": "PreemptLowerPriority",
            },
        ),
        (
            {"priorityClassName": "system-node-critical"},
            {
                "priorityClassName": "system-node-critical",
                "priority": 2_000_001_000,
                "preemptionPolicy": "PreemptLowerPriority",
            },
        ),
        ({"priority": 7}, {"priority": 7}),
        (
            {"priorityClassName": "high", "priority": 7},
            {"priorityClassName": "high", "priority": 7},
        ),
    ],
    ids=[
        "class",
        "never-policy",
        "global-default-lowest",
        "system-class",
        "explicit",
        "explicit+class",
    ],
)
def test_admit_pod(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    doc = {"kind": "Pod", "metadata": {"name": "a"}, "spec": dict(spec)}
    admitted = admit_pod(doc, TABLE, "default/a")
    assert admitted["spec"] == expected
    assert doc["spec"] == spec, "the input is not mutated"


def test_no_class_and_no_default_leaves_the_pod_alone() -> None:
    doc = {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": []}}
    assert admit_pod(doc, PriorityTable(), "default/a") is doc


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            {"priorityClassName": "nope"},
            "spec.priorityClassName",
            "no PriorityClass with name nope",
        ),
        ({"priorityClassName": "nope", "priority": 3}, "spec.priorityClassName", "nope"),
        (
            {"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"},
            "spec.preemptionPolicy",
            "Never",
        ),
        ({"priority": "high"}, "spec.priority", "integer"),
        ({"priorityClassName": 3}, "spec.priorityClassName", "string"),
        ({"priority": 2**70}, "spec.priority", "out of the int32 range"),
        ({"priority": -(2**31) - 1}, "spec.priority", "out of the int32 range"),
    ],
    ids=[
        "unknown",
        "unknown-with-priority",
        "policy-contradicts",
        "priority-not-int",
        "name-not-str",
        "priority-2**70",
        "priority-below-int32",
    ],
)
def test_admit_pod_errors(spec: dict[str, Any], field: str, message: str) -> None:
    doc = {"kind": "Pod", "metadata": {"name": "a"}, "spec": spec}
    with pytest.raises(InvalidObjectError) as err:
        admit_pod(doc, TABLE, "ns/a", source="w.yaml")
    assert err.value.field == field and err.value.obj == "Pod ns/a"
    assert message in str(err.value)


def test_store_resolves_priority_from_a_stored_class(store: Store) -> None:
    store.apply(priority_class("high", 1000, preemptionPolicy="Never"))
    store.apply(make_pod("a").priority_class("high").manifest())
    spec = spec_of(store, "a")
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    assert store.apply(make_pod("a").priority_class("high").manifest()).action == "unchanged"


def test_classes_in_the_same_call_are_applied_first(store: Store) -> None:
    results = store.apply_many(
        [make_pod("a").priority_class("late").manifest(), priority_class("late", 42)]
    )
    assert [r.kind for r in results] == ["Pod", "PriorityClass"], "results keep input order"
    assert results[1].rv < results[0].rv
    assert spec_of(store, "a")["priority"] == 42


def test_global_default_applies_to_pods_without_a_class(store: Store) -> None:
    store.apply(priority_class("everyone", 100, globalDefault=True))
    store.apply(make_pod("a").manifest())
    spec = spec_of(store, "a")
    assert (spec["priorityClassName"], spec["priority"]) == ("everyone", 100)


def test_unknown_class_is_an_error_and_the_pod_is_not_stored(store: Store) -> None:
    with pytest.raises(InvalidObjectError) as err:
        store.apply_many(
            [make_pod("ok").manifest(), make_pod("a").priority_class("nope").manifest()]
        )
    assert "Pod default/a" in str(err.value) and err.value.field == "spec.priorityClassName"
    assert store.count("Pod") == 0


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (priority_class("x", "high"), "value"),
        (priority_class("x", True), "value"),
        (priority_class("x", 2_000_000_000), "value"),
        (priority_class("x", -(2**70)), "value"),
        (priority_class("x", 1, globalDefault="yes"), "globalDefault"),
        (priority_class("x", 1, preemptionPolicy="Sometimes"), "preemptionPolicy"),
    ],
    ids=["str", "bool", "too-high", "below-int32", "default-not-bool", "bad-policy"],
)
def test_bad_priority_classes_are_rejected(store: Store, doc: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObjectError) as err:
        store.apply(doc)
    assert err.value.field == field and err.value.obj == "PriorityClass x"
    assert store.count("PriorityClass") == 0


def test_a_value_msgpack_cannot_hold_is_refused_before_anything_is_written(store: Store) -> None:
    """An integer past 64 bits in a field no parser reads: refused by name, and the
    other objects of the call are not stored either."""
    bad = make_pod("a").manifest()
    bad["spec"]["extra"] = 2**70
    with pytest.raises(InvalidObjectError) as err:
        store.apply_many([make_pod("ok").manifest(), bad], source="w.yaml")
    assert str(err.value).startswith("w.yaml: Pod default/a: cannot be stored")
    assert store.count("Pod") == 0
