"""Fuzzed raw records: stream entries, stored objects, queue records, and garbage written
into a real Redis under a running informer. Decoders either decode or raise the one
error their caller quarantines; the informer never raises for content."""

from __future__ import annotations

import contextlib
from typing import Any

import msgpack
import redis
from hypothesis import given
from hypothesis import strategies as st

from cluster_sched.errors import StoreError
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.store.codec import unpack_object
from cluster_sched.store.results import EventType
from cluster_sched.store.store import Store
from cluster_sched.store.streams import decode_entry
from tests.fuzz.strategies import POD, fuzz_settings, json_values, mutate


def _packed(value: Any) -> bytes:
    try:
        return msgpack.packb(value)
    except (TypeError, ValueError, OverflowError):
        return b"\xc1"


blobs = st.one_of(st.binary(max_size=64), json_values.map(_packed), mutate(POD).map(_packed))
field_values = st.one_of(
    blobs, st.sampled_from([b"Pod", b"Node", b"ADDED", b"MODIFIED", b"DELETED", b"ERROR", b"1"])
)
entries = st.dictionaries(
    st.sampled_from([b"kind", b"key", b"type", b"rv", b"obj", b"other"]), field_values, max_size=6
)


@fuzz_settings()
@given(entry_id=st.sampled_from([b"1-0", "2-1"]), fields=entries)
def test_stream_entries_decode_to_an_event_never_an_exception(
    entry_id: bytes | str, fields: dict[bytes, bytes]
) -> None:
    event = decode_entry(entry_id, fields)
    if event.type is EventType.ERROR:
        assert "\n" not in str(event.obj.get("message", ""))


@fuzz_settings()
@given(data=blobs)
def test_stored_objects_decode_or_raise_store_error(data: bytes) -> None:
    try:
        assert isinstance(unpack_object(data, "Pod", "default/p"), dict)
    except StoreError as err:
        assert "\n" not in str(err)


queue_records = st.one_of(
    blobs,
    st.lists(json_values, min_size=1, max_size=12).map(lambda xs: _packed([1, *xs])),
)


@fuzz_settings()
@given(data=queue_records)
def test_queue_records_decode_or_raise_what_quarantine_catches(data: bytes) -> None:
    # What escapes here is what the queue quarantines (queue/base.py); anything else
    # would crash the coordinator.
    with contextlib.suppress(StoreError, ValueError, UnicodeDecodeError):
        QueuedPodInfo.unpack(data)


def _informer(store: Store) -> Informer:
    return Informer(
        store, InformerHandlers(on_pod=lambda old, new: None, on_node=lambda o, n: None)
    )


@fuzz_settings(share=0.25)
@given(
    stored=st.dictionaries(st.sampled_from(["default/a", "x", "ns/b"]), blobs, max_size=3),
    stream=st.lists(entries, max_size=4),
)
def test_informer_survives_garbage_in_redis(
    redis_client: redis.Redis, stored: dict[str, bytes], stream: list[dict[bytes, bytes]]
) -> None:
    redis_client.flushall()
    store = Store(redis_client)
    store.apply(dict(POD))
    for key, data in stored.items():
        redis_client.hset(store.keys.obj("Pod"), key, data)
    informer = _informer(store)
    informer.list_and_watch()
    for fields in stream:
        if fields:
            redis_client.xadd(store.keys.events, fields)  # type: ignore[arg-type]
    informer.poll()
    assert "default/p" in informer.pods
