"""The watch: ordered gapless events, resuming, consistent list-and-watch, expiry."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from cluster_sched.store import EventType, ResourceExpiredError, Store
from cluster_sched.testing import make_node, make_pod

#: liveness bound for a blocked read to wake (never a timing assertion)
PATIENCE = 60.0


def pod(name: str, **labels: str) -> dict[str, Any]:
    return make_pod(name).labels(labels).manifest()


def drain(store: Store, from_id: str = "0-0", **kwargs: Any) -> list:
    return list(store.watch(from_id, stop_when_idle=True, block_ms=20, **kwargs))


def test_create_update_delete_events_in_order_with_increasing_rv(store: Store) -> None:
    store.apply(pod("a", v="1"))
    store.apply(make_node("n1").manifest())
    store.apply(pod("a", v="2"))
    store.delete("Pod", "default/a")
    events = drain(store)
    assert [(e.type, e.kind, e.key) for e in events] == [
        (EventType.ADDED, "Pod", "default/a"),
        (EventType.ADDED, "Node", "n1"),
        (EventType.MODIFIED, "Pod", "default/a"),
        (EventType.DELETED, "Pod", "default/a"),
    ]
    assert [e.rv for e in events] == [1, 2, 3, 4]
    assert [e.obj["metadata"]["resourceVersion"] for e in events] == ["1", "2", "3", "4"]
    assert events[2].obj["metadata"]["labels"] == {"v": "2"}
    assert store.last_event_id() == events[-1].id


def test_watch_resumes_from_an_id_and_sees_only_later_events(store: Store) -> None:
    store.apply_many([pod("a"), pod("b"), pod("c")])
    second = store.read_events()[1]
    later = drain(store, second.id)
    assert [e.key for e in later] == ["default/c"]
    assert store.read_events(second.id, count=10) == later
    assert drain(store, store.last_event_id()) == []


def test_watch_from_dollar_sees_only_new_events(store: Store) -> None:
    store.apply(pod("a"))
    watch = store.watch("$", block_ms=2000)
    later = threading.Timer(0.05, lambda: store.apply(pod("b")))
    later.start()
    event = next(watch)
    later.join()
    assert (event.key, event.rv) == ("default/b", 2)


def blocked_xread_clients(client: redis.Redis) -> int:
    """Connections Redis reports as blocked in XREAD right now."""
    return sum(
        1 for c in client.client_list() if c.get("cmd") == "xread" and "b" in c.get("flags", "")
    )


def test_blocking_read_wakes_on_a_new_event(store: Store, redis_client: redis.Redis) -> None:
    """A read blocking with no deadline (block_ms=0) returns only because an event came."""
    got: list[list[Any]] = []
    blocked_before = blocked_xread_clients(redis_client)
    reader = threading.Thread(target=lambda: got.append(store.read_events("0-0", block_ms=0)))
    reader.daemon = True  # a broken wake-up must not hang the interpreter at exit
    reader.start()
    # Write only once Redis holds the read blocked, so the event cannot come first.
    while blocked_xread_clients(redis_client) == blocked_before:
        assert reader.is_alive(), "the read returned without an event"
        time.sleep(0.01)
    store.apply(pod("a"))
    reader.join(PATIENCE)
    assert not reader.is_alive(), "the blocked read never woke"
    assert [[e.key for e in events] for events in got] == [["default/a"]]


def test_watch_filters_kinds(store: Store) -> None:
    store.apply_many([pod("a"), make_node("n1").manifest(), pod("b")])
    assert [e.key for e in drain(store, kinds={"Node"})] == ["n1"]


def test_list_and_watch_snapshot_is_consistent_with_the_watch(store: Store) -> None:
    names = [f"p{i}" for i in range(400)]
    started = threading.Event()

    def writer() -> None:
        for i, name in enumerate(names):
            store.apply(pod(name))
            if i == 20:
                started.set()

    t = threading.Thread(target=writer)
    t.start()
    started.wait(10)
    snapshot, last_id = store.list_and_watch()
    t.join()
    listed = {key for key, _ in snapshot["Pod"]}
    watched = [e.key for e in drain(store, last_id)]
    assert listed.isdisjoint(watched), "nothing is seen twice"
    assert listed | set(watched) == {f"default/{n}" for n in names}, "nothing is missed"
    assert len(watched) == len(set(watched))
    assert len(listed) >= 21, "the snapshot was taken while the writer ran"
    assert set(snapshot) == {
        "Namespace",
        "PriorityClass",
        "StorageClass",
        "CSIDriver",
        "DeviceClass",
        "Node",
        "ResourceSlice",
        "CSINode",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "ResourceClaimTemplate",
        "ResourceClaim",
        "PodDisruptionBudget",
        "Service",
        "ReplicaSet",
        "StatefulSet",
        "ReplicationController",
        "Pod",
    }


def test_list_and_watch_of_an_empty_store(store: Store) -> None:
    snapshot, last_id = store.list_and_watch(["Pod", "Node"])
    assert {kind: list(objs) for kind, objs in snapshot.items()} == {"Pod": [], "Node": []}
    assert last_id == "0-0"
    store.apply(pod("a"))
    assert [e.key for e in drain(store, last_id)] == ["default/a"]


def test_events_are_trimmed_to_about_maxlen(redis_client: redis.Redis) -> None:
    store = Store(redis_client, events_maxlen=10)
    store.apply_many([pod(f"p{i}") for i in range(600)])
    assert redis_client.xlen(store.keys.events) < 600
    with pytest.raises(ResourceExpiredError, match="relist"):
        drain(store)


def test_watch_from_a_trimmed_id_expires(store: Store, redis_client: redis.Redis) -> None:
    store.apply_many([pod(f"p{i}") for i in range(10)])
    old = store.read_events()[2].id
    redis_client.xtrim(store.keys.events, maxlen=3, approximate=False)
    with pytest.raises(ResourceExpiredError):
        drain(store, old)
    with pytest.raises(ResourceExpiredError):
        drain(store, "0-0")
    tail = store.read_events()[0]  # still retained: resuming from it is fine
    assert [e.rv for e in drain(store, tail.id)] == [9, 10]


def test_a_watch_that_falls_behind_the_trim_expires(
    store: Store, redis_client: redis.Redis
) -> None:
    store.apply(pod("a"))
    watch = store.watch(count=1, block_ms=20, stop_when_idle=True)
    assert next(watch).rv == 1
    store.apply_many([pod(f"p{i}") for i in range(10)])
    redis_client.xtrim(store.keys.events, maxlen=3, approximate=False)
    with pytest.raises(ResourceExpiredError, match="expected resourceVersion 2"):
        next(watch)


def test_a_malformed_entry_is_an_error_event_and_the_watch_goes_on(
    store: Store, redis_client: redis.Redis
) -> None:
    """An entry the store did not write (no rv, missing fields, not UTF-8) reads as an
    ERROR event (upstream's watch.Error) instead of ending the read: the events after it
    still arrive, and a watch's gap check ignores it (it used no resourceVersion)."""
    store.apply(pod("a"))
    redis_client.xadd(store.keys.events, {"type": "ADDED", "kind": "Pod"})
    redis_client.xadd(store.keys.events, {b"\xff": b"\xfe", b"rv": b"x"})
    store.apply(pod("b"))
    events = store.read_events()
    assert [e.type for e in events] == [
        EventType.ADDED,
        EventType.ERROR,
        EventType.ERROR,
        EventType.ADDED,
    ]
    error = events[1]
    assert (error.kind, error.key, error.rv) == ("Pod", "", 0)
    assert "unreadable" in error.obj["message"] and "\n" not in error.obj["message"]
    assert [(e.type, e.rv) for e in drain(store)] == [
        (EventType.ADDED, 1),
        (EventType.ERROR, 0),
        (EventType.ERROR, 0),
        (EventType.ADDED, 2),
    ]
    assert [e.rv for e in drain(store, "$")] == []


def test_bad_stream_ids_are_still_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="not a stream id"):
        store.read_events("yesterday")


def test_unreadable_event_object_is_an_error_event_naming_it(
    store: Store, redis_client: redis.Redis
) -> None:
    fields = {"type": "ADDED", "kind": "Pod", "key": "default/x", "rv": "1", "obj": b"\xc1"}
    redis_client.xadd(store.keys.events, fields)
    (event,) = store.read_events()
    assert event.type is EventType.ERROR
    assert (event.kind, event.key, event.rv) == ("Pod", "default/x", 1)
    assert "Pod default/x" in event.obj["message"]


def test_list_and_watch_skips_and_reports_unreadable_objects(
    store: Store, redis_client: redis.Redis
) -> None:
    store.apply_many([pod("a"), pod("b")])
    redis_client.hset(store.keys.obj("Pod"), "default/junk", b"\xc1\x00garbage")
    redis_client.hset(store.keys.obj("Pod"), "default/list", b"\x93\x01\x02\x03")
    reported: list[tuple[str, str, str]] = []
    snapshot, last_id = store.list_and_watch(
        ["Pod"], on_unreadable=lambda *args: reported.append(args)
    )
    assert reported == [], "reported when the listing reaches them"
    assert [key for key, _ in snapshot["Pod"]] == ["default/a", "default/b"]
    assert [(kind, key) for kind, key, _ in reported] == [
        ("Pod", "default/junk"),
        ("Pod", "default/list"),
    ]
    assert all("unreadable" in why for _, _, why in reported)
    assert last_id == store.last_event_id()
