"""apply / get / list / delete: identity, server-owned fields, unchanged writes, errors."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgpack
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from cluster_sched.errors import InvalidObjectError, StoreError
from cluster_sched.store import ApplyAction, EventType, Store
from cluster_sched.testing import make_node, make_pod


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return make_pod(name, namespace).labels(labels).req(cpu="100m").manifest()


def test_create_fills_uid_timestamp_rv_and_namespace(store: Store) -> None:
    doc = pod("web-1")
    del doc["metadata"]["namespace"]
    result = store.apply(doc)
    assert result.action is ApplyAction.CREATED
    assert (result.kind, result.key, result.rv) == ("Pod", "default/web-1", 1)
    stored = store.get("Pod", "default/web-1")
    assert stored == result.obj
    meta = stored["metadata"]
    assert meta["namespace"] == "default"
    assert meta["resourceVersion"] == "1"
    assert meta["creationTimestamp"] == "2024-05-01T12:00:00Z"
    assert meta["uid"] == "00000000-0000-4000-8000-000000000001"
    assert "namespace" not in doc["metadata"], "the caller's manifest is never mutated"


def test_given_uid_and_timestamp_are_kept(store: Store) -> None:
    doc = pod("a")
    doc["metadata"] |= {"uid": "u-1", "creationTimestamp": "2020-01-01T00:00:00Z"}
    meta = store.apply(doc).obj["metadata"]
    assert (meta["uid"], meta["creationTimestamp"]) == ("u-1", "2020-01-01T00:00:00Z")
    assert store.get("Pod", "default/a")["metadata"]["uid"] == "u-1"


def test_cluster_scoped_kinds_are_keyed_by_name(store: Store) -> None:
    node = make_node("n1").manifest()
    node["metadata"]["namespace"] = "ignored"
    result = store.apply(node)
    assert result.key == "n1"
    assert "namespace" not in store.get("Node", "n1")["metadata"]


def test_reapply_is_unchanged_and_writes_nothing(store: Store) -> None:
    first = store.apply(pod("a"))
    again = store.apply(pod("a"))
    assert again.action is ApplyAction.UNCHANGED
    assert again.rv == first.rv and again.event_id == ""
    assert again.obj == first.obj
    assert store.resource_version() == 1
    assert len(store.read_events()) == 1


def test_update_bumps_rv_and_keeps_server_fields(store: Store, clock) -> None:
    first = store.apply(pod("a", app="v1"))
    clock.step(60)
    second = store.apply(pod("a", app="v2"))
    assert second.action is ApplyAction.UPDATED and second.rv == 2
    stored = store.get("Pod", "default/a")
    assert stored["metadata"]["labels"] == {"app": "v2"}
    for field in ("uid", "creationTimestamp"):
        assert stored["metadata"][field] == first.obj["metadata"][field]
    events = store.read_events()
    assert [e.type for e in events] == [EventType.ADDED, EventType.MODIFIED]


def test_reapply_of_a_bound_pod_keeps_binding_and_status(store: Store) -> None:
    uid = store.apply(pod("a")).obj["metadata"]["uid"]
    assert store.bind("default/a", "n1", uid).ok
    bound = store.get("Pod", "default/a")
    assert store.apply(pod("a")).action is ApplyAction.UNCHANGED
    changed = store.apply(pod("a", app="x"))
    assert changed.action is ApplyAction.UPDATED
    assert changed.obj["spec"]["nodeName"] == "n1"
    assert changed.obj["status"] == bound["status"]


def test_a_bound_pod_cannot_be_moved_by_apply(store: Store) -> None:
    store.apply(pod("a"))
    store.bind("default/a", "n1")
    moved = pod("a")
    moved["spec"]["nodeName"] = "n2"
    with pytest.raises(InvalidObjectError) as err:
        store.apply(moved)
    assert err.value.field == "spec.nodeName" and "Pod default/a" in str(err.value)


def test_yaml_datetimes_are_stored_as_rfc3339_and_compare_unchanged(store: Store) -> None:
    doc = pod("a")
    doc["metadata"]["creationTimestamp"] = dt.datetime(2023, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    created = store.apply(doc)
    assert created.obj["metadata"]["creationTimestamp"] == "2023-01-02T03:04:05Z"
    assert store.apply(doc).action is ApplyAction.UNCHANGED


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([1, 2], ""),
        ({"kind": "Deployment", "metadata": {"name": "x"}}, "kind"),
        ({"kind": "Pod"}, "metadata"),
        ({"kind": "Pod", "metadata": {"name": ""}}, "metadata.name"),
        ({"kind": "Pod", "metadata": {"name": "a/b"}}, "metadata.name"),
        ({"kind": "Pod", "metadata": {"name": "a", "namespace": 3}}, "metadata.namespace"),
    ],
    ids=["not-a-map", "unknown-kind", "no-metadata", "empty-name", "slash-name", "bad-ns"],
)
def test_bad_identity_is_rejected(store: Store, doc: Any, field: str) -> None:
    with pytest.raises(InvalidObjectError) as err:
        store.apply(doc, source="w.yaml")
    assert err.value.field == field
    assert str(err.value).startswith("w.yaml")


def test_one_bad_document_stores_nothing(store: Store) -> None:
    docs = [pod("a"), pod("b"), {"kind": "Pod", "metadata": {}}]
    with pytest.raises(InvalidObjectError):
        store.apply_many(docs)
    assert store.count("Pod") == 0 and store.resource_version() == 0


def test_apply_many_thousands_in_order(redis_client: redis.Redis, clock) -> None:
    store = Store(redis_client, clock=clock, batch_size=300)
    docs = [pod(f"p{i}", f"ns{i % 7}") for i in range(3000)]
    docs += [make_node(f"n{i}").manifest() for i in range(200)]
    results = store.apply_many(docs)
    assert [r.key for r in results[:2]] == ["ns0/p0", "ns1/p1"]
    assert all(r.action is ApplyAction.CREATED for r in results)
    assert sorted(r.rv for r in results) == list(range(1, 3201))
    assert store.count("Pod") == 3000 and store.count("Node") == 200
    listed = store.list("Pod")
    keys = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in listed]
    assert keys == sorted(r.key for r in results if r.kind == "Pod")
    assert len({p["metadata"]["uid"] for p in listed}) == 3000
    again = store.apply_many(docs)
    assert {r.action for r in again} == {ApplyAction.UNCHANGED}


def test_duplicate_keys_in_one_batch_become_create_then_update(store: Store) -> None:
    results = store.apply_many([pod("a", v="1"), pod("a", v="2")])
    assert [r.action for r in results] == [ApplyAction.CREATED, ApplyAction.UPDATED]
    assert store.get("Pod", "default/a")["metadata"]["labels"] == {"v": "2"}
    assert store.resource_version() == 2


@pytest.mark.parametrize("batch_size", [1, 2, 3, 500])
def test_the_last_manifest_for_an_object_wins(
    redis_client: redis.Redis, clock, batch_size: int
) -> None:
    store = Store(redis_client, clock=clock, batch_size=batch_size)
    store.apply(pod("a", v="1"))
    docs = [pod("a", v="2"), pod("b"), pod("a", v="1"), pod("c"), pod("a", v="1")]
    results = store.apply_many(docs)
    assert [r.action for r in results] == [
        ApplyAction.UPDATED,
        ApplyAction.CREATED,
        ApplyAction.UPDATED,
        ApplyAction.CREATED,
        ApplyAction.UNCHANGED,
    ]
    assert store.get("Pod", "default/a")["metadata"]["labels"] == {"v": "1"}
    assert [e.key for e in store.read_events()][1:] == [
        "default/a",
        "default/b",
        "default/a",
        "default/c",
    ]


def test_get_many_and_missing(store: Store) -> None:
    store.apply_many([pod("a"), pod("b")])
    got = store.get_many("Pod", ["default/b", "default/x", "default/a"])
    assert [g and g["metadata"]["name"] for g in got] == ["b", None, "a"]
    assert store.get("Pod", "default/x") is None
    with pytest.raises(ValueError, match="unknown kind"):
        store.get("Deployment", "x")


def test_delete_emits_deleted_with_last_state(store: Store) -> None:
    store.apply(pod("a"))
    assert store.delete("Pod", "default/a") is True
    assert store.delete("Pod", "default/a") is False
    assert store.get("Pod", "default/a") is None
    deleted = store.read_events()[-1]
    assert (deleted.type, deleted.key, deleted.rv) == (EventType.DELETED, "default/a", 2)
    assert deleted.obj["metadata"]["name"] == "a"
    assert deleted.obj["metadata"]["resourceVersion"] == "2"


def test_delete_many_mixed_kinds(store: Store) -> None:
    store.apply_many([pod("a"), make_node("n1").manifest()])
    assert store.delete_many([("Node", "n1"), ("Pod", "default/zz"), ("Pod", "default/a")]) == [
        True,
        False,
        True,
    ]
    assert store.count("Pod") == store.count("Node") == 0


@pytest.mark.parametrize(
    "raw",
    [b"\xc1garbage", msgpack.packb([1, 2, 3]), b"\x82\xa1a"],
    ids=["invalid-byte", "not-a-map", "truncated"],
)
def test_unreadable_stored_bytes_name_the_object(
    store: Store, redis_client: redis.Redis, raw: bytes
) -> None:
    redis_client.hset(store.keys.obj("Pod"), "default/bad", raw)
    with pytest.raises(StoreError, match="Pod default/bad"):
        store.get("Pod", "default/bad")
    with pytest.raises(StoreError, match="Pod default/bad"):
        store.list("Pod")
    with pytest.raises(StoreError, match="Pod default/bad"):
        store.apply(pod("bad"))
    with pytest.raises(StoreError, match="Pod default/bad"):
        store.bind("default/bad", "n1")
    assert store.delete("Pod", "default/bad") is True
    assert store.read_events()[-1].obj == {}


def test_unreachable_redis_is_a_store_error() -> None:
    client = redis.Redis(port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    store = Store(client)
    with pytest.raises(StoreError, match="redis unreachable during get") as err:
        store.get("Pod", "default/a")
    assert isinstance(err.value.__cause__, redis.ConnectionError)
    with pytest.raises(StoreError, match="unreachable"):
        store.apply(pod("a"))
    with pytest.raises(StoreError, match="unreachable"):
        store.bind("default/a", "n1")
    with pytest.raises(StoreError, match="unreachable"):
        next(store.watch())


def test_a_decoding_client_is_refused(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses=False"):
        Store(client)
    client.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_both_resp_protocols(redis_url: str, protocol: int) -> None:
    with Store.from_url(redis_url, redis_options={"protocol": protocol}) as store:
        uid = store.apply(pod("a")).obj["metadata"]["uid"]
        assert store.bind("default/a", "n1", uid).ok
        assert store.list("Pod")[0]["spec"]["nodeName"] == "n1"
        snapshot, last_id = store.list_and_watch(["Pod"])
        assert [key for key, _ in snapshot["Pod"]] == ["default/a"]
        events = list(store.watch(stop_when_idle=True, block_ms=10))
        assert [e.rv for e in events] == [1, 2] and events[-1].id == last_id
        store.record_event("Pod", "default/a", "Scheduled", "ok")
        assert store.events(key="default/a")[0]["reason"] == "Scheduled"


def test_prefix_isolates_stores(redis_client: redis.Redis) -> None:
    one, two = Store(redis_client, "{a}"), Store(redis_client, "{b}")
    one.apply(pod("x"))
    assert two.get("Pod", "default/x") is None and two.read_events() == []
    assert all(k.startswith(b"{a}:") for k in redis_client.keys("*"))
