"""gc_policy: survivors of full collections are frozen inside the scope, and only there."""

from __future__ import annotations

import gc
import time

import pytest

import cluster_sched.gc_policy as gc_policy


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_survivors_of_a_full_collection_are_frozen_inside_the_scope_only() -> None:
    gc.unfreeze()
    keep = [_Cycle() for _ in range(100)]
    with gc_policy.survivors_frozen():
        assert gc.get_freeze_count() == 0
        gc.collect()
        assert gc.get_freeze_count() >= len(keep)
        with gc_policy.survivors_frozen():  # nested: still one callback
            assert gc.callbacks.count(gc_policy._freeze_after_full) == 1
        assert gc.get_freeze_count() >= len(keep)  # the inner scope did not unfreeze
    assert gc.get_freeze_count() == 0
    assert gc_policy._freeze_after_full not in gc.callbacks


def test_idle_collection_frees_cycles_that_died_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.unfreeze()
    with gc_policy.survivors_frozen():
        garbage = [_Cycle() for _ in range(50)]
        gc.collect()  # the cycles survive (still referenced) and are frozen
        del garbage  # now unreachable, but frozen: a full collection does not see them
        assert gc.collect() == 0
        assert not gc_policy.collect_when_idle()  # the interval has not passed
        monkeypatch.setattr(gc_policy, "IDLE_FULL_INTERVAL", 0.0)
        monkeypatch.setattr(gc_policy, "IDLE_QUIET", 0.0)
        counts: list[int] = []

        def count(phase: str, info: dict[str, int]) -> None:
            if phase == "stop" and info["generation"] == 2:
                counts.append(info["collected"])

        gc.callbacks.append(count)
        try:
            assert gc_policy.collect_when_idle()
        finally:
            gc.callbacks.remove(count)
        assert counts and counts[0] >= 50
    assert not gc_policy.collect_when_idle()  # outside the scope: never


def test_no_idle_collection_until_the_loop_has_been_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An empty turn between busy ones (waiting a few ms for bindings or arrivals) is
    not idle: the full collection waits until no turn had work for IDLE_QUIET."""
    monkeypatch.setattr(gc_policy, "IDLE_FULL_INTERVAL", 0.0)
    with gc_policy.survivors_frozen():
        gc_policy.note_busy()
        assert not gc_policy.collect_when_idle()  # busy a moment ago
        monkeypatch.setattr(gc_policy, "IDLE_QUIET", 0.05)
        time.sleep(0.1)
        assert gc_policy.collect_when_idle()  # quiet long enough
        gc_policy.note_busy()
        assert not gc_policy.collect_when_idle()


def test_young_collections_are_rarer_inside_the_scope_and_restored_after() -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, *before[1:])
    try:
        with gc_policy.survivors_frozen():
            assert gc.get_threshold() == (gc_policy.YOUNG_THRESHOLD, *before[1:])
            with gc_policy.survivors_frozen():
                assert gc.get_threshold()[0] == gc_policy.YOUNG_THRESHOLD
            assert gc.get_threshold()[0] == gc_policy.YOUNG_THRESHOLD
        assert gc.get_threshold() == (700, *before[1:])
    finally:
        gc.set_threshold(*before)


def test_what_start_up_left_alive_is_frozen_inside_the_scope_only() -> None:
    """``freeze_started`` (the coordinator's, once the cluster is loaded): what is alive
    then is walked by no later collection; outside the policy's scope nothing happens."""
    gc.unfreeze()
    loaded = [_Cycle() for _ in range(100)]  # never collected: young, not frozen
    assert not gc_policy.freeze_started()
    assert gc.get_freeze_count() == 0
    with gc_policy.survivors_frozen():
        assert gc.get_freeze_count() == 0
        assert gc_policy.freeze_started()
        assert gc.get_freeze_count() >= len(loaded)
        assert not any(gc.is_tracked(o) and o in gc.get_objects(0) for o in loaded[:3])
    assert gc.get_freeze_count() == 0
