"""The simulator's value shapes: Go durations, binding results, the result history."""

from __future__ import annotations

import json

import pytest

from cluster_sched.scheduler.explain import simulator as sim


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (10, "10s"), (1.5, "1.5s"), (90, "1m30s"), (3600, "1h0m0s"), (3725, "1h2m5s")],
    ids=["zero", "seconds", "fraction", "minutes", "hour", "mixed"],
)
def test_go_duration_spells_as_time_duration_string(seconds: float, text: str) -> None:
    assert sim.go_duration(seconds) == text


@pytest.mark.parametrize(
    ("failed", "message", "prebind", "bind"),
    [
        ("", "", {"VolumeBinding": "success", "DRA": "success"}, {"DefaultBinder": "success"}),
        ("DRA", "no device", {"VolumeBinding": "success", "DRA": "no device"}, {}),
        (
            "DefaultBinder",
            "conflict",
            {"VolumeBinding": "success", "DRA": "success"},
            {"DefaultBinder": "conflict"},
        ),
        (
            "Coscheduling",
            "rejected",
            {"VolumeBinding": "success", "DRA": "success"},
            {"DefaultBinder": "success", "Coscheduling": "rejected"},
        ),
    ],
    ids=["bound", "prebind-fails", "bind-fails", "permit-wait-fails"],
)
def test_binding_results_stop_at_the_failing_plugin(
    failed: str, message: str, prebind: dict[str, str], bind: dict[str, str]
) -> None:
    got = sim.binding_results(["VolumeBinding", "DRA"], ["DefaultBinder"], failed, message)
    assert got == (prebind, bind)


def test_history_appends_each_attempt_and_survives_a_broken_one() -> None:
    first = {sim.SELECTED_NODE: "", sim.FILTER: "{}"}
    second = {sim.SELECTED_NODE: "n1", sim.FILTER: "{}"}
    ann = sim.with_history({"other": "kept"}, first)
    ann = sim.with_history(ann, second)
    assert ann["other"] == "kept" and ann[sim.SELECTED_NODE] == "n1"
    assert json.loads(ann[sim.HISTORY]) == [first, second]
    broken = sim.with_history({sim.HISTORY: "not json"}, second)
    assert json.loads(broken[sim.HISTORY]) == [second]
