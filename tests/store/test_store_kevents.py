"""Kubernetes Events: recorded with their reason and read back, filtered."""

from __future__ import annotations

import pytest

from cluster_sched.store import Store


def test_record_and_filter_events(store: Store, clock) -> None:
    store.record_event("Pod", "default/a", "Scheduled", "Successfully assigned default/a to n1")
    clock.step(1.5)
    store.record_event(
        "Pod", "default/b", "FailedScheduling", "0/3 nodes are available", type="Warning"
    )
    store.record_event("Pod", "default/a", "Preempted", "Preempted by pod default/c on node n1")
    everything = store.events()
    assert [e["reason"] for e in everything] == ["Scheduled", "FailedScheduling", "Preempted"]
    assert everything[1] == {
        "id": everything[1]["id"],
        "kind": "Pod",
        "key": "default/b",
        "type": "Warning",
        "reason": "FailedScheduling",
        "action": "",
        "message": "0/3 nodes are available",
        "time": "2024-05-01T12:00:01.500000Z",
    }
    assert [e["reason"] for e in store.events(key="default/a")] == ["Scheduled", "Preempted"]
    assert [e["key"] for e in store.events(reason="FailedScheduling")] == ["default/b"]
    assert store.events(key="default/a", reason="FailedScheduling") == []
    assert store.events(kind="Node") == []


def test_record_events_in_one_round_trip_and_paging(store: Store) -> None:
    ids = store.record_events(
        {"kind": "Pod", "key": f"default/p{i}", "reason": "Scheduled", "message": "ok"}
        for i in range(12_000)
    )
    assert len(ids) == 12_000 and ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
    assert len(store.events(reason="Scheduled")) == 12_000
    assert [e["key"] for e in store.events(key="default/p11999")] == ["default/p11999"]


def test_event_type_is_checked(store: Store) -> None:
    with pytest.raises(ValueError, match="Normal or Warning"):
        store.record_event("Pod", "default/a", "Scheduled", "x", type="Info")
