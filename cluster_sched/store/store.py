"""The cluster-object store: Kubernetes objects in Redis, every write a watch event.

Layout (``{cs}`` is the prefix, a hash tag so every key lives in one Redis Cluster slot)::

    {cs}:obj:<Kind>   hash   "ns/name" (or "name") -> msgpack manifest dict
    {cs}:rv           string global resourceVersion counter, INCR once per write
    {cs}:events       stream type, kind, key, rv, obj (msgpack)  -- the watch
    {cs}:kevents      stream kind, key, type, reason, action, message, time

Writes follow the API server: ``apply`` reads, decides in Python (defaults, server-owned fields
carried over, Priority admission, "unchanged") and writes with a compare-and-set on the
resourceVersion it read, retried on conflict (etcd's GuaranteedUpdate); ``bind`` is decided
entirely inside Redis so a binding is one round trip. Every write, in the same Lua script, bumps
the counter and appends its event, so the stream is gapless and in resourceVersion order.

Stored objects put ``metadata`` first and ``uid``, ``resourceVersion`` first within it
(``codec.Encoder.pack_object``): scripts stamp and find them without walking the object.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import redis

from cluster_sched.clock import Clock, SystemClock
from cluster_sched.errors import StoreError
from cluster_sched.store import streams
from cluster_sched.store.accounting import account_applied, pod_requests
from cluster_sched.store.boundary import redis_boundary
from cluster_sched.store.codec import pack, rfc3339, rfc3339_micro, unpack_each, unpack_object
from cluster_sched.store.fence import Fence
from cluster_sched.store.kinds import KINDS, StoreKeys, check_kind
from cluster_sched.store.objects import ObjectWriter, Update, pack_args, text, unpack_reply
from cluster_sched.store.podstatus import pod_status_edit, scheduled_condition
from cluster_sched.store.results import (
    ApplyResult,
    Binding,
    BindingRequest,
    BindOutcome,
    BindResult,
    WatchEvent,
    bind_envelope_item,
    bind_outcome,
)
from cluster_sched.store.scripts import Scripts

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_EVENTS_MAXLEN",
    "DEFAULT_LEASE_NAME",
    "DEFAULT_PREFIX",
    "Store",
]

#: Key prefix; the braces make it a Redis Cluster hash tag.
DEFAULT_PREFIX = "{cs}"
#: Approximate cap on each stream's length, so memory stays bounded on long runs.
DEFAULT_EVENTS_MAXLEN = 1_000_000
#: The lease (resourceNamespace/resourceName) a store's writes are fenced by by default.
DEFAULT_LEASE_NAME = "kube-system/kube-scheduler"
#: Objects per round trip in apply_many / bindings per bind_many script call.
DEFAULT_BATCH_SIZE = 500


def _check_client(client: redis.Redis) -> redis.Redis:
    """Payloads are msgpack bytes; a client that decodes replies to str would corrupt them."""
    if client.connection_pool.connection_kwargs.get("decode_responses"):
        raise ValueError("the store needs a redis client with decode_responses=False")
    return client


class Store:
    """Kubernetes objects in Redis; see the module docstring for layout and semantics.

    Thread-safe as redis-py is (a connection per call from the pool). Objects are plain
    manifest dicts; returned dicts are fresh per call but callers should not mutate the
    ``obj`` of results they pass on. Every method raises StoreError when Redis cannot be
    reached or holds bytes that are not a manifest.
    """

    def __init__(
        self,
        client: redis.Redis,
        prefix: str = DEFAULT_PREFIX,
        *,
        events_maxlen: int = DEFAULT_EVENTS_MAXLEN,
        kevents_maxlen: int = DEFAULT_EVENTS_MAXLEN,
        batch_size: int = DEFAULT_BATCH_SIZE,
        clock: Clock | None = None,
        fence: Fence | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._client = _check_client(client)
        self._owned: redis.Redis | None = None
        self._keys = StoreKeys(prefix)
        self._events_maxlen = events_maxlen
        self._kevents_maxlen = kevents_maxlen
        self._batch_size = batch_size
        self._clock: Clock = clock or SystemClock()
        self._fence = fence or Fence(self._keys.lease(DEFAULT_LEASE_NAME))
        self._scripts = Scripts.register(self._client, self._fence)
        self._writer = ObjectWriter(
            self._client, self._keys, self._scripts, self._clock, events_maxlen
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        prefix: str = DEFAULT_PREFIX,
        *,
        redis_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Store:
        """A store on its own client for ``url`` (``redis_options`` go to redis-py);
        ``close()`` releases it. ``kwargs`` are the constructor's."""
        options = {"socket_timeout": 10.0, **(redis_options or {}), "decode_responses": False}
        client = redis.Redis.from_url(url, **options)
        store = cls(client, prefix, **kwargs)
        store._owned = client
        return store

    @property
    def keys(self) -> StoreKeys:
        return self._keys

    @property
    def client(self) -> redis.Redis:
        return self._client

    @property
    def fence(self) -> Fence:
        """The lease key and fencing token every write of this store carries (shared and
        mutable: the leader elector sets the token; 0 writes unfenced)."""
        return self._fence

    def close(self) -> None:
        """Release the client ``from_url`` created (never a caller's client)."""
        if self._owned is not None:
            self._owned.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads ----------------------------------------------------------------------

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """The stored object, or None."""
        check_kind(kind)
        with redis_boundary("get"):
            data = self._client.hget(self._keys.obj(kind), key)
        return None if data is None else unpack_object(data, kind, key)  # type: ignore[arg-type]

    def get_many(self, kind: str, keys: Sequence[str]) -> builtins.list[dict[str, Any] | None]:
        """Objects for ``keys`` in order (None where absent), in one round trip."""
        check_kind(kind)
        if not keys:
            return []
        with redis_boundary("get_many"):
            raw: Any = self._client.hmget(self._keys.obj(kind), list(keys))
        return [
            None if d is None else unpack_object(d, kind, k) for k, d in zip(keys, raw, strict=True)
        ]

    def list(self, kind: str) -> builtins.list[dict[str, Any]]:
        """Every object of ``kind``, sorted by key (HSCAN: no single huge reply)."""
        check_kind(kind)
        with redis_boundary("list"):
            items = sorted(
                (text(k), v) for k, v in self._client.hscan_iter(self._keys.obj(kind), count=1000)
            )
        return [unpack_object(data, kind, key) for key, data in items]

    def iter_list(self, kind: str) -> Iterator[dict[str, Any]]:
        """``list``, read now and decoded one object at a time as iterated: only the
        stored bytes (a few hundred per object) are held, not every decoded manifest (a
        million pods' dicts are gigabytes). Same order and objects as ``list``."""
        check_kind(kind)
        with redis_boundary("list"):
            items = sorted(
                (text(k), v) for k, v in self._client.hscan_iter(self._keys.obj(kind), count=1000)
            )
        return unpack_each(kind, items)

    def count(self, kind: str) -> int:
        check_kind(kind)
        with redis_boundary("count"):
            return int(self._client.hlen(self._keys.obj(kind)))  # type: ignore[arg-type]

    def resource_version(self) -> int:
        """The last resourceVersion handed out (0 before the first write)."""
        with redis_boundary("resource_version"):
            value = self._client.get(self._keys.rv)
        return int(value) if value is not None else 0  # type: ignore[arg-type]

    # --- writes ---------------------------------------------------------------------

    def apply(self, doc: Mapping[str, Any], *, source: str = "") -> ApplyResult:
        """Create or update one object (see ``apply_many``)."""
        return self.apply_many([doc], source=source)[0]

    def apply_many(
        self, docs: Iterable[Mapping[str, Any]], *, source: str = ""
    ) -> builtins.list[ApplyResult]:
        """Create or update objects, ``batch_size`` per two round trips; results in order.

        Like ``kubectl apply`` against the API server: uid and creationTimestamp are filled
        on create and kept on update, as are a bound pod's spec.nodeName and a status the
        manifest does not state; pods get their priority from their PriorityClass (classes
        in the same call are applied first, so a file may define and use them). A write
        that changes nothing is reported UNCHANGED and emits no event.

        Every document is validated (identity, PriorityClass, admission) before anything
        is written, so one bad manifest raises InvalidObjectError and stores nothing.
        """
        with redis_boundary("apply"):
            prepared = self._writer.prepare(list(docs), source)
            results = self._writer.apply(prepared, self._batch_size)
            account_applied(self._scripts, self._keys, results)
            return results

    def delete(self, kind: str, key: str) -> bool:
        """Delete one object; False if it did not exist. Emits DELETED."""
        return self.delete_many([(kind, key)])[0]

    def delete_many(self, items: Sequence[tuple[str, str]]) -> builtins.list[bool]:
        """Delete ``(kind, key)`` pairs in one round trip; whether each existed."""
        for kind, _ in items:
            check_kind(kind)
        out: list[bool] = []
        with redis_boundary("delete"):
            for start in range(0, len(items), self._batch_size):
                chunk = items[start : start + self._batch_size]
                kinds: dict[str, int] = {}
                envelope = [(kinds.setdefault(kind, len(kinds) + 1), key) for kind, key in chunk]
                keys = [
                    self._keys.rv,
                    self._keys.events,
                    *self._keys.fit,
                    *(self._keys.obj(k) for k in kinds),
                ]
                args: list[Any] = [self._events_maxlen, pack_args(list(kinds)), pack_args(envelope)]
                reply = unpack_reply(self._scripts.delete(keys=keys, args=args))
                out += [int(rv) > 0 for rv in reply[0::2]]
        return out

    # --- binding --------------------------------------------------------------------

    def bind(
        self,
        pod_key: str,
        node_name: str,
        pod_uid: str | None = None,
        requests: Mapping[str, int] | None = None,
        *,
        scheduled_event: bool = False,
        check_fit: bool = False,
        fit_skips: Sequence[str] = (),
    ) -> BindResult:
        """Bind one pod (the pods/binding subresource); see ``bind_many``.

        Raises StoreError if the stored pod is unreadable.
        """
        result = self.bind_many(
            [(pod_key, node_name, pod_uid, requests, fit_skips)],
            scheduled_events=scheduled_event,
            check_fit=check_fit,
        )[0]
        if result.outcome is BindOutcome.UNREADABLE:
            raise StoreError(result.message)
        return result

    def bind_many(
        self,
        bindings: Iterable[Binding],
        *,
        scheduled_events: bool = False,
        check_fit: bool = False,
        mark: str = "",
    ) -> builtins.list[BindResult]:
        """Bind ``(pod_key, node_name, pod_uid[, requests[, fit_skips]])`` tuples
        atomically, each independently, in one script call per ``batch_size``.

        A binding is a conflict (no write, no event) when the pod is gone, its uid is not
        ``pod_uid`` (None: any uid), it is terminating or scheduling-gated, or it already
        has a spec.nodeName, so concurrent binders never bind a pod twice. With
        ``check_fit`` (the scheduler's binder) it is refused as OVER_COMMITTED (with an
        ``OverCommit`` Warning Event) when the node's allocatable cannot hold ``requests``
        (but the ``fit_skips`` resources; ``fit_skips`` None: unchecked) besides the pods
        bound there; without, it binds as the API server does. Either way the requests
        are counted on the node (omitted: read from the stored pod). Success sets
        spec.nodeName and PodScheduled=True, clears status.nominatedNodeName, bumps the
        resourceVersion and emits MODIFIED (with the binder's ``mark``, its node and
        condition: ``scheduler/own_bindings.py``); with ``scheduled_events`` the same
        script records the pod's ``Scheduled`` Event (never a binding without it).
        """
        todo = [BindingRequest(*b) for b in bindings]
        for b in todo:
            if not isinstance(b.node_name, str) or not b.node_name:
                raise ValueError(f"bind {b.pod_key}: node name must be a non-empty string")
        missing = [b.pod_key for b in todo if b.requests is None]
        known: dict[str, dict[str, int]] = {}
        if missing:
            with redis_boundary("bind"):
                raw: Any = self._client.hmget(self._keys.obj("Pod"), missing)
            known = {k: pod_requests(d) for k, d in zip(missing, raw, strict=True)}
        now = self._clock.now()
        scheduled = scheduled_condition(rfc3339(now))
        condition = pack(scheduled)
        results: list[BindResult] = []
        keys = self._keys
        with redis_boundary("bind"):
            for start in range(0, len(todo), self._batch_size):
                chunk = todo[start : start + self._batch_size]
                envelope = pack_args(
                    [
                        bind_envelope_item(
                            b, b.requests if b.requests is not None else known[b.pod_key], check_fit
                        )
                        for b in chunk
                    ]
                )
                reply = unpack_reply(
                    self._scripts.bind(
                        keys=[keys.rv, keys.events, keys.obj("Pod"), keys.kevents, *keys.fit],
                        args=[
                            self._events_maxlen,
                            "Pod",
                            condition,
                            envelope,
                            self._kevents_maxlen,
                            rfc3339_micro(now),
                            "1" if scheduled_events else "0",
                            mark,
                        ],
                    )
                )
                codes, rvs, details = reply[0::3], reply[1::3], reply[2::3]
                for b, code, rv, detail in zip(chunk, codes, rvs, details, strict=True):
                    outcome = bind_outcome(code)
                    results.append(
                        BindResult(
                            b.pod_key,
                            b.node_name,
                            outcome,
                            int(rv),
                            text(detail),
                            b.uid,
                            scheduled if outcome is BindOutcome.BOUND else None,
                        )
                    )
        return results

    # --- pod status (the scheduler's failure handler and preemption) ------------------

    def update_pod_status(
        self,
        pod_key: str,
        *,
        condition: Mapping[str, Any] | None = None,
        nominated_node_name: str | None = None,
        pod_uid: str | None = None,
        cached: Mapping[str, Any] | None = None,
    ) -> ApplyResult | None:
        """Set a status condition and/or nominatedNodeName ("" clears it) in one write, as
        ``updatePod`` patches status: UNCHANGED if neither differs, else as ``update``."""
        edit = pod_status_edit(condition, nominated_node_name, rfc3339(self._clock.now()))
        return self.update("Pod", pod_key, edit, pod_uid, cached)

    def update(
        self,
        kind: str,
        key: str,
        mutate: Callable[[dict[str, Any]], Any],
        uid: str | None = None,
        cached: Mapping[str, Any] | None = None,
    ) -> ApplyResult | None:
        """Read (``cached``: first try this copy unread, see ``Update``), ``mutate`` (None:
        no change), compare-and-set till it wins; None: gone/not uid."""
        with redis_boundary(f"update {kind}"):
            return self._writer.guaranteed_update(kind, key, mutate, uid, cached)

    def update_many(self, updates: Sequence[Update]) -> builtins.list[ApplyResult | None]:
        """``update`` for several objects, two round trips per attempt for all of them."""
        with redis_boundary("update"):
            return self._writer.guaranteed_update_many(updates)

    def set_nominated_node_names(
        self, nominations: Iterable[tuple[str, str, str | None, Mapping[str, Any] | None]]
    ) -> builtins.list[ApplyResult | None]:
        """``set_nominated_node_name`` for ``(pod_key, node_name, pod_uid, cached)`` at once
        (``cached``: the pod as last seen, tried first unread; see ``Update``)."""
        now = rfc3339(self._clock.now())
        edits = [(k, pod_status_edit(None, n, now), u, c) for k, n, u, c in nominations]
        return self.update_many([Update("Pod", k, e, u, c) for k, e, u, c in edits])

    def set_nominated_node_name(
        self, pod_key: str, node_name: str, pod_uid: str | None = None
    ) -> ApplyResult | None:
        """Set (or with "" clear) status.nominatedNodeName; see ``update_pod_status``."""
        return self.update_pod_status(pod_key, nominated_node_name=node_name, pod_uid=pod_uid)

    def update_pod_status_condition(
        self, pod_key: str, condition: Mapping[str, Any], pod_uid: str | None = None
    ) -> ApplyResult | None:
        """Set one status condition (UpdatePodCondition rules); see ``update_pod_status``."""
        return self.update_pod_status(pod_key, condition=condition, pod_uid=pod_uid)

    # --- watch ----------------------------------------------------------------------

    def read_events(
        self,
        from_id: str = "0-0",
        count: int = streams.DEFAULT_READ_COUNT,
        block_ms: int | None = None,
    ) -> builtins.list[WatchEvent]:
        """Up to ``count`` events after stream id ``from_id``, waiting up to ``block_ms``
        for the first (None: return at once)."""
        return streams.read_events(self._client, self._keys, from_id, count, block_ms)

    def watch(
        self,
        from_id: str = "0-0",
        *,
        kinds: Collection[str] | None = None,
        block_ms: int = streams.DEFAULT_BLOCK_MS,
        count: int = streams.DEFAULT_READ_COUNT,
        stop_when_idle: bool = False,
    ) -> Iterator[WatchEvent]:
        """Yield events after ``from_id`` ("$": only new ones) as they arrive; raises
        ResourceExpiredError if some were trimmed before this watch read them."""
        return streams.watch(
            self._client,
            self._keys,
            from_id,
            kinds=kinds,
            block_ms=block_ms,
            count=count,
            stop_when_idle=stop_when_idle,
        )

    def list_and_watch(
        self, kinds: Iterable[str] = KINDS, on_unreadable: streams.Unreadable | None = None
    ) -> tuple[dict[str, streams.ListedObjects], str]:
        """``(snapshot, last_id)``: every object of ``kinds`` by kind (each iterated once,
        ``(key, manifest)`` in key order, decoded as taken), and the stream id to ``watch``
        from; consistent (one MULTI/EXEC), see streams.list_and_watch. Unreadable objects
        are left out and reported to ``on_unreadable(kind, key, why)`` when reached."""
        return streams.list_and_watch(
            self._client, self._keys, [check_kind(k) for k in kinds], on_unreadable
        )

    def last_event_id(self) -> str:
        """The id of the newest watch event ("0-0" if there is none)."""
        with redis_boundary("last_event_id"):
            last: Any = self._client.xrevrange(self._keys.events, "+", "-", count=1)
        return text(last[0][0]) if last else "0-0"

    # --- Kubernetes Events ------------------------------------------------------------

    def record_event(
        self,
        kind: str,
        key: str,
        reason: str,
        message: str,
        type: str = "Normal",
        action: str = "",
    ) -> str:
        """Record a Kubernetes Event about an object (Scheduled, FailedScheduling,
        Preempted, ...); returns its stream id."""
        row = {"kind": kind, "key": key, "reason": reason, "message": message}
        return self.record_events([{**row, "type": type, "action": action}])[0]

    def record_events(self, events: Iterable[Mapping[str, str]]) -> builtins.list[str]:
        """Record several Events in one round trip (dicts with the ``record_event`` args);
        fenced like every other write."""
        rows = streams.kube_event_rows(self._clock, events)
        if not rows:
            return []
        with redis_boundary("record_event"):
            ids = self._scripts.events(
                keys=[self._keys.kevents], args=[self._kevents_maxlen, pack_args(rows)]
            )
        return [text(i) for i in ids]

    def events(
        self, key: str | None = None, reason: str | None = None, kind: str | None = None
    ) -> builtins.list[dict[str, str]]:
        """Recorded Events oldest first, optionally only those about ``key``, with
        ``reason``, about ``kind``. Each dict has id, kind, key, type, reason, action,
        message and time (RFC 3339, microseconds)."""
        return streams.read_kube_events(self._client, self._keys, key=key, reason=reason, kind=kind)
