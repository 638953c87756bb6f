"""Read-modify-writes of several objects at once (``Store.update_many``), and the first
attempt from a cached copy (etcd's GuaranteedUpdate with a cached existing object):
written without a read when the copy is current, read and decided again otherwise."""

from __future__ import annotations

import copy
from typing import Any

import redis

from cluster_sched.store import Store
from cluster_sched.store.objects import Update
from cluster_sched.store.results import ApplyAction


def _labelled(value: str) -> Any:
    def mutate(old: dict[str, Any]) -> dict[str, Any] | None:
        labels = dict((old.get("metadata") or {}).get("labels") or {})
        if labels.get("l") == value:
            return None
        new = copy.deepcopy(old)
        new["metadata"]["labels"] = {**labels, "l": value}
        return new

    return mutate


def _ns(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _reads(client: redis.Redis) -> int:
    return int((client.info("commandstats").get("cmdstat_hmget") or {}).get("calls", 0))


def _label(store: Store, name: str) -> str:
    doc = store.get("Namespace", name) or {}
    return str(doc["metadata"]["labels"].get("l", ""))


def test_update_many_updates_each_in_order(store: Store) -> None:
    store.apply_many([_ns("a"), _ns("b", l="x")])
    since = store.last_event_id()
    results = store.update_many(
        [
            Update("Namespace", "a", _labelled("x")),
            Update("Namespace", "b", _labelled("x")),
            Update("Namespace", "gone", _labelled("x")),
            Update("Namespace", "b", _labelled("y"), uid="not-its-uid"),
        ]
    )
    assert [r.action if r else None for r in results] == [
        ApplyAction.UPDATED,
        ApplyAction.UNCHANGED,
        None,
        None,
    ]
    assert [(ev.key, ev.rv) for ev in store.read_events(since)] == [("a", results[0].rv)]  # type: ignore[union-attr]
    assert (_label(store, "a"), _label(store, "b")) == ("x", "x")


def test_a_current_cached_copy_is_written_without_a_read(
    store: Store, redis_client: redis.Redis
) -> None:
    store.apply(_ns("a"))
    seen = store.get("Namespace", "a")
    before = _reads(redis_client)
    (result,) = store.update_many([Update("Namespace", "a", _labelled("x"), cached=seen)])
    assert _reads(redis_client) == before
    assert result is not None and result.action is ApplyAction.UPDATED
    assert _label(store, "a") == "x"


def test_a_stale_cached_copy_loses_and_the_stored_object_is_used(store: Store) -> None:
    store.apply(_ns("a"))
    seen = store.get("Namespace", "a")
    store.apply(_ns("a", other="kept"))  # written after the copy was taken
    result = store.update("Namespace", "a", _labelled("x"), cached=seen)
    assert result is not None and result.action is ApplyAction.UPDATED
    doc = store.get("Namespace", "a") or {}
    assert doc["metadata"]["labels"] == {"other": "kept", "l": "x"}


def test_a_cached_copy_that_needs_no_change_is_checked_against_the_store(
    store: Store,
) -> None:
    """No change on the copy is no answer: the stored object may differ (here it does)."""
    store.apply(_ns("a", l="x"))
    seen = store.get("Namespace", "a")
    store.apply(_ns("a", l="y"))
    result = store.update("Namespace", "a", _labelled("x"), cached=seen)
    assert result is not None and result.action is ApplyAction.UPDATED
    assert _label(store, "a") == "x"


def test_a_cached_copy_of_an_object_since_deleted_writes_nothing(store: Store) -> None:
    store.apply(_ns("a"))
    seen = store.get("Namespace", "a")
    store.delete("Namespace", "a")
    assert store.update("Namespace", "a", _labelled("x"), cached=seen) is None
    assert store.get("Namespace", "a") is None
