"""RunStats keeps its per-pod columns compactly and they still read as before."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_sched.scheduler.stats import PlacementLog, RunStats


def test_the_placement_log_reads_as_the_list_of_tuples_it_replaces() -> None:
    stats = RunStats()
    assert not stats.placement_log and len(stats.placement_log) == 0
    stats.on_bound("default/a", "n1", 1.5, cpu=100, memory=2**40)
    stats.on_bound("default/b", "n2", 2.5, cpu=0, memory=0)
    stats.on_unbound("default/a", 3.0)
    entries = [
        (1.5, "default/a", "n1", 100, 2**40),
        (2.5, "default/b", "n2", 0, 0),
        (3.0, "default/a", "", 0, 0),
    ]
    log = stats.placement_log
    assert list(log) == entries and log == entries and len(log) == 3
    assert log[0] == entries[0] and log[-1] == entries[-1]
    assert log[1:] == entries[1:] and log[5:] == []
    assert sorted(log, key=lambda e: -e[0])[0] == entries[2]
    assert PlacementLog(entries) == log
    with pytest.raises(IndexError):
        log[3]


def test_attempt_seconds_is_a_float_column() -> None:
    stats = RunStats()
    for s in (0.25, 0.5):
        stats.attempt_seconds.append(s)
    assert list(stats.attempt_seconds) == [0.25, 0.5]
    assert np.asarray(stats.attempt_seconds).dtype == np.float64
    assert stats.summary(0)["attempt_latency_ms"]["p50"] == 375.0
