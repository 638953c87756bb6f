"""Pure rules: backoff durations, the PrioritySort key, the stored record format."""

from __future__ import annotations

import msgpack
import pytest

from cluster_sched.errors import StoreError
from cluster_sched.queue import QueuedPodInfo, backoff_duration, priority_sort_key
from cluster_sched.queue.types import timestamp_tiebreak


@pytest.mark.parametrize(
    ("attempts", "expected"),
    [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (60, 10)],
    ids=lambda v: str(v),
)
def test_backoff_doubles_per_attempt_up_to_the_max(attempts: int, expected: float) -> None:
    assert backoff_duration(attempts, 1.0, 10.0) == expected


def test_backoff_never_exceeds_a_max_below_the_initial() -> None:
    assert backoff_duration(1, 5.0, 2.0) == 2.0


def test_priority_sort_key_orders_priority_then_time() -> None:
    early_low = QueuedPodInfo("ns/a", priority=1, timestamp=10.0)
    late_high = QueuedPodInfo("ns/b", priority=9, timestamp=20.0)
    early_high = QueuedPodInfo("ns/c", priority=9, timestamp=10.5)
    ordered = sorted([early_low, late_high, early_high], key=priority_sort_key)
    assert [i.pod_key for i in ordered] == ["ns/c", "ns/b", "ns/a"]


def test_timestamp_tiebreak_is_fixed_width_microseconds() -> None:
    assert timestamp_tiebreak(1.5) == "00000000000001500000"
    assert timestamp_tiebreak(9.0) < timestamp_tiebreak(10.0)
    with pytest.raises(ValueError, match="negative"):
        timestamp_tiebreak(-1.0)


def test_record_round_trips_through_msgpack() -> None:
    original = QueuedPodInfo(
        "ns/p",
        priority=-7,
        timestamp=12.25,
        attempts=3,
        initial_attempt_timestamp=11.0,
        unschedulable_plugins=frozenset({"NodeResourcesFit", "NodeAffinity"}),
        pending_plugins=frozenset({"DynamicResources"}),
        gated=True,
        gating_plugin="SchedulingGates",
        nominated_node_name="node-1",
    )
    assert QueuedPodInfo.unpack(original.pack()) == original


@pytest.mark.parametrize(
    "data",
    [b"\xc1", msgpack.packb([2, "ns/p"]), msgpack.packb({"a": 1}), msgpack.packb([1, "ns/p"])],
    ids=["not-msgpack", "future-version", "a-map", "truncated"],
)
def test_unreadable_record_is_a_store_error(data: bytes) -> None:
    with pytest.raises(StoreError, match="unreadable queued pod record"):
        QueuedPodInfo.unpack(data)


@pytest.mark.parametrize("key", ["", "ns/a\x00b"], ids=["empty", "nul"])
def test_pod_key_is_validated(key: str) -> None:
    with pytest.raises(ValueError, match="invalid pod key"):
        QueuedPodInfo(key)


def test_with_gate_records_the_gating_plugin_as_a_rejector() -> None:
    gated = QueuedPodInfo("ns/p").with_gate("SchedulingGates")
    assert gated.gated and gated.gating_plugin == "SchedulingGates"
    assert gated.unschedulable_plugins == {"SchedulingGates"}
    released = gated.with_gate(None)
    assert not released.gated and released.gating_plugin == ""
