"""The store as the API reads and writes it: snapshots with their resourceVersion,
creates that refuse an existing name, updates conditioned on a resourceVersion.

Writes use the store's own write path (``ObjectWriter``: compare-and-set in Lua, one
event per write), so the API adds no second copy and no second protocol. A list is one
MULTI/EXEC of the kind's hash and the revision counter, so its resourceVersion is exactly
the state it shows, and a watch from it misses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from cluster_sched.api.manifest import parse_object
from cluster_sched.clock import SystemClock
from cluster_sched.errors import InvalidObjectError, StoreError
from cluster_sched.kubeapi.errors import ApiError, already_exists, invalid, not_found
from cluster_sched.kubeapi.resources import Resource
from cluster_sched.store.accounting import account_applied
from cluster_sched.store.boundary import redis_boundary
from cluster_sched.store.codec import gc_paused, rfc3339, unpack_object
from cluster_sched.store.objects import ObjectWriter, merge_server_fields, text
from cluster_sched.store.scripts import Scripts
from cluster_sched.store.store import DEFAULT_EVENTS_MAXLEN, Store

__all__ = ["ObjectView", "object_key"]


def object_key(resource: Resource, namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if resource.namespaced else name


def _invalid_from(resource: Resource, name: str, err: InvalidObjectError) -> ApiError:
    return invalid(resource.kind, name, err.reason, err.field)


class ObjectView:
    """Reads and writes of stored kinds for the API handlers (thread-safe)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._clock = SystemClock()
        self._scripts = Scripts.register(store.client, store.fence)
        self._writer = ObjectWriter(
            store.client,
            store.keys,
            self._scripts,
            self._clock,
            DEFAULT_EVENTS_MAXLEN,
        )

    def resource_version(self) -> int:
        return self.store.resource_version()

    def snapshot(self, kind: str) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """Every object of ``kind`` in key order, and the resourceVersion of that state."""
        pipe = self.store.client.pipeline(transaction=True)
        pipe.hgetall(self.store.keys.obj(kind))
        pipe.get(self.store.keys.rv)
        try:
            raw, rv = pipe.execute()
        except Exception as exc:  # redis errors: the store is unreachable
            raise StoreError(f"list {kind}: {exc}") from exc
        out = []
        with gc_paused():  # decoding allocates millions of containers, and no cycles
            for key, data in sorted((text(k), v) for k, v in raw.items()):
                try:
                    out.append((key, unpack_object(data, kind, key)))
                except StoreError:
                    continue  # one unreadable object must not break every list
        return out, int(rv or 0)

    def iter_from(
        self, kind: str, after: str, prefix: str = "", chunk: int = 500
    ) -> tuple[Iterator[tuple[str, dict[str, Any]]], int]:
        """Objects of ``kind`` with keys after ``after`` (and starting with ``prefix``) in
        key order, read ``chunk`` at a time as iterated, and the resourceVersion when the
        keys were taken. A limited list uses this so a page of 500 out of 100,000 pods
        decodes about 500 objects, not all of them; the objects read may be newer than
        that version (a full, unlimited list is the exact ``snapshot``)."""
        client, key_of = self.store.client, self.store.keys.obj(kind)
        pipe = client.pipeline(transaction=True)
        pipe.hkeys(key_of)
        pipe.get(self.store.keys.rv)
        raw_keys, rv = pipe.execute()
        keys = sorted(k for k in (text(r) for r in raw_keys) if k > after and k.startswith(prefix))

        def objects() -> Iterator[tuple[str, dict[str, Any]]]:
            for start in range(0, len(keys), chunk):
                part = keys[start : start + chunk]
                values: Any = client.hmget(key_of, part)
                for key, data in zip(part, values, strict=True):
                    if data is None:
                        continue  # deleted since the keys were taken
                    try:
                        yield key, unpack_object(data, kind, key)
                    except StoreError:
                        continue

        return objects(), int(rv or 0)

    def get(self, resource: Resource, key: str, name: str) -> dict[str, Any]:
        obj = self.store.get(resource.kind, key)
        if obj is None:
            raise not_found(resource.group, resource.plural, name)
        return obj

    def validate(self, resource: Resource, doc: dict[str, Any], name: str) -> None:
        """The project's manifest checks (quantities, selectors, ...) as 422 Invalid."""
        try:
            parse_object(doc)
        except InvalidObjectError as err:
            raise _invalid_from(resource, name, err) from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise invalid(resource.kind, name, f"cannot decode: {exc}") from None

    def create(self, resource: Resource, doc: dict[str, Any], name: str) -> dict[str, Any]:
        """Store a new object; 409 AlreadyExists if the name is taken.

        One compare-and-set that expects no object (``ObjectWriter.create``), so of two
        simultaneous creates of one name exactly one gets 201; validated and admitted
        (PriorityClass) as ``Store.apply`` does, and accounted for bind's checks."""
        try:
            with redis_boundary("create"):
                (write,) = self._writer.prepare([doc], "api")
                result = self._writer.create(write)
                if result is not None:
                    account_applied(self._scripts, self.store.keys, [result])
        except InvalidObjectError as err:
            raise _invalid_from(resource, name, err) from None
        if result is None:
            raise already_exists(resource.group, resource.plural, name)
        return result.obj

    def update(
        self,
        resource: Resource,
        key: str,
        name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> dict[str, Any]:
        """Read-modify-write until it wins the compare-and-set. ``mutate`` gets the stored
        object and returns the whole new one (it raises ApiError to refuse, e.g. 409 for a
        stale resourceVersion); server-owned fields are carried over as on apply."""
        now = rfc3339(self._clock.now())

        def merged(old: dict[str, Any]) -> dict[str, Any]:
            new = mutate(old)
            try:
                (write,) = self._writer.prepare([new], "api")
                return merge_server_fields(resource.kind, key, old, write.doc, now)
            except InvalidObjectError as err:
                raise _invalid_from(resource, name, err) from None

        with redis_boundary("update"):
            result = self._writer.guaranteed_update(resource.kind, key, merged)
        if result is None:
            raise not_found(resource.group, resource.plural, name)
        return result.obj

    def delete(self, resource: Resource, key: str, name: str) -> dict[str, Any]:
        obj = self.get(resource, key, name)
        self.store.delete(resource.kind, key)
        return obj
