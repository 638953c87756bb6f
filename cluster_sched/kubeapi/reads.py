"""get, list and watch: every read the API serves, straight from the store.

Lists carry the resourceVersion of the exact state they show (``ObjectView.snapshot``),
honour ``limit``/``continue`` (key order), label and field selectors, and come as a
Table when asked. A watch replays the store's events after its resourceVersion from the
``WatchCache`` window and then follows new ones: ``""``/``"0"`` or ``sendInitialEvents``
start with ADDED for the current state; an object that starts or stops matching the
selectors arrives as ADDED or DELETED; BOOKMARKs when allowed; and a version older than
the window is one ERROR event with a 410 Expired Status, as the API server sends.
"""

from __future__ import annotations

import base64
import builtins
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_sched.kubeapi import events as kevents
from cluster_sched.kubeapi.errors import ApiError, bad_request, expired, not_found
from cluster_sched.kubeapi.request import Request, Response, Stream, dumps, parse_bool
from cluster_sched.kubeapi.resources import Resource
from cluster_sched.kubeapi.selectors import (
    Selector,
    parse_field_selector,
    parse_label_selector,
)
from cluster_sched.kubeapi.storage import ObjectView, object_key
from cluster_sched.kubeapi.tables import table, wants_table
from cluster_sched.kubeapi.watch import Expired, WatchCache
from cluster_sched.store.results import EventType

__all__ = ["Reads", "Scope"]

#: Events per chunk of a watch's initial ADDED burst (a batch from the stream is one chunk).
WATCH_CHUNK_EVENTS = 500
#: A watch sends a BOOKMARK (when allowed) after this many idle seconds.
BOOKMARK_INTERVAL = 5.0
#: A watch without timeoutSeconds ends after this long (the API server picks 30-60 min).
DEFAULT_WATCH_TIMEOUT = 1800.0
_INITIAL_EVENTS_END = "k8s.io/initial-events-end"
#: A watch event's line up to its object: the line is ``frame + object JSON + b"}\n"``,
#: byte for byte what ``dumps({"type": type, "object": obj})`` gives.
_FRAMES: dict[str, bytes] = {
    t.value: b'{"type":"%s","object":' % t.value.encode() for t in EventType
}


@dataclass(frozen=True, slots=True)
class _Watch:
    """One watch request's parameters, checked."""

    scope: Scope
    selector: Selector
    rv_text: str
    initial: bool
    bookmarks: bool
    deadline: float
    as_table: bool
    alive: Callable[[], bool]


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a request points: a resource, a namespace ("" all) and maybe a name."""

    resource: Resource
    namespace: str = ""
    name: str = ""
    subresource: str = ""


def selector_for(resource: Resource, query: Mapping[str, str]) -> Selector:
    labels = parse_label_selector(query.get("labelSelector", ""))
    fields = parse_field_selector(
        query.get("fieldSelector", ""), resource.selectable_fields, resource.plural
    )
    getters: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = ()
    if resource.view == "events":
        getters = (("source", lambda e: str((e.get("source") or {}).get("component", ""))),)
    return Selector(tuple(labels), tuple(fields), getters)


def _in_scope(obj: Mapping[str, Any], namespace: str) -> bool:
    if not namespace:
        return True
    meta = obj.get("metadata")
    return isinstance(meta, Mapping) and meta.get("namespace") == namespace


def _encode_continue(rv: int, key: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": key}).encode()).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: invalid continue token") from None


def _limit(query: Mapping[str, str]) -> int:
    raw = query.get("limit", "")
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"limit must be an integer, not {raw!r}") from None
    return max(value, 0)


class Reads:
    def __init__(self, view: ObjectView, cache: WatchCache) -> None:
        self.view = view
        self.cache = cache

    # --- objects of a scope ---------------------------------------------------------

    def _objects(self, scope: Scope) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        r = scope.resource
        if r.view == "events":
            rows = kevents.event_rows(self.view.store)
            rv = self.view.resource_version()
            uids = kevents.uids_for(self.view.store, rows)
            out = []
            for row in rows:
                core = kevents.core_event(row, uids.get((row["kind"], row["key"]), ""), str(rv))
                obj = kevents.event_v1(core) if r.group else core
                out.append((f"{core['metadata']['namespace']}/{core['metadata']['name']}", obj))
            return out, rv
        if not r.stored:
            return [], self.view.resource_version()
        return self.view.snapshot(r.kind)

    def get(self, scope: Scope, request: Request) -> Response:
        r = scope.resource
        if r.view == "events" or not r.stored:
            objs, _ = self._objects(scope)
            key = object_key(r, scope.namespace, scope.name)
            for k, obj in objs:
                if k == key:
                    return Response(200, obj)
            raise not_found(r.group, r.plural, scope.name)
        obj = self.view.get(r, object_key(r, scope.namespace, scope.name), scope.name)
        if wants_table(request.accept):
            return Response(200, table(r, [obj], str(_rv_of(obj))))
        return Response(200, obj)

    def list(self, scope: Scope, request: Request) -> Response:
        q = request.query
        r = scope.resource
        if parse_bool(q.get("sendInitialEvents")):
            raise ApiError(422, "Invalid", "sendInitialEvents is forbidden for list")
        selector = selector_for(r, q)
        limit = _limit(q)
        start = ""
        token_rv = 0
        if q.get("continue"):
            token_rv, start = _decode_continue(q["continue"])
        objs: Iterable[tuple[str, dict[str, Any]]]
        if limit and r.stored and not r.view:
            prefix = f"{scope.namespace}/" if scope.namespace and r.namespaced else ""
            objs, rv = self.view.iter_from(r.kind, start, prefix)
        else:
            objs, rv = self._objects(scope)
        if token_rv:
            rv = token_rv  # every page of a list reports the version of its first
        wanted = q.get("resourceVersion", "")
        if wanted not in ("", "0") and wanted.isdigit() and int(wanted) > rv:
            raise ApiError(
                504,
                "Timeout",
                f"Too large resource version: {wanted}, current: {rv}",
                {
                    "causes": [
                        {
                            "reason": "ResourceVersionTooLarge",
                            "message": "Too large resource version",
                        }
                    ],
                    "retryAfterSeconds": 1,
                },
            )
        items: list[dict[str, Any]] = []
        token = ""
        last_key = ""
        for key, obj in objs:
            if start and key <= start:
                continue
            if scope.namespace and not _in_scope(obj, scope.namespace):
                continue
            if not selector.empty and not selector.matches(obj):
                continue
            if limit and len(items) >= limit:
                token = _encode_continue(rv, last_key)
                break
            items.append(obj)
            last_key = key
        if wants_table(request.accept):
            include = q.get("includeObject", "Metadata")
            return Response(
                200, table(r, items, str(rv), include_object=include, continue_token=token)
            )
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
        return Response(
            200,
            {
                "kind": f"{r.kind}List",
                "apiVersion": r.api_version,
                "metadata": meta,
                "items": items,
            },
        )

    # --- watch ----------------------------------------------------------------------

    def watch(self, scope: Scope, request: Request, alive: Callable[[], bool]) -> Stream:
        q = request.query
        r = scope.resource
        selector = selector_for(r, q)
        if scope.name:
            from cluster_sched.kubeapi.selectors import FieldRequirement

            selector = Selector(
                selector.labels,
                (*selector.fields, FieldRequirement("metadata.name", False, scope.name)),
                selector.getters,
            )
        initial = parse_bool(q.get("sendInitialEvents"))
        if initial and q.get("resourceVersionMatch") != "NotOlderThan":
            raise ApiError(
                422,
                "Invalid",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        rv_text = q.get("resourceVersion", "")
        if rv_text not in ("", "0") and not rv_text.isdigit():
            raise bad_request(f"invalid resource version: {rv_text!r}")
        bookmarks = parse_bool(q.get("allowWatchBookmarks"))
        try:
            timeout = float(q.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        except ValueError:
            raise bad_request("timeoutSeconds must be a number") from None
        as_table = wants_table(request.accept)
        w = _Watch(
            scope,
            selector,
            rv_text,
            initial,
            bookmarks,
            time.monotonic() + timeout,
            as_table,
            alive,
        )
        if scope.resource.view == "events":
            return Stream(self._watch_kube_events(w))
        # The starting state is read before the reply's headers go out: a client that
        # writes once it has them sees those writes as changes after it.
        start = self._watch_start(w)
        return Stream(self._watch_events(w, start))

    def _encode(
        self,
        scope: Scope,
        etype: str,
        obj: Mapping[str, Any],
        as_table: bool,
        first: builtins.list[bool],
    ) -> bytes:
        if as_table and etype not in ("ERROR", "BOOKMARK"):
            obj = table(scope.resource, [obj], str(_rv_of(obj)), with_columns=first[0])
            first[0] = False
        return dumps({"type": etype, "object": obj}) + b"\n"

    def _bookmark(self, scope: Scope, rv: int, end: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if end:
            meta["annotations"] = {_INITIAL_EVENTS_END: "true"}
        return {
            "kind": scope.resource.kind,
            "apiVersion": scope.resource.api_version,
            "metadata": meta,
        }

    def _watch_start(
        self, w: _Watch
    ) -> tuple[int, set[str], builtins.list[tuple[str, dict[str, Any]]] | None]:
        """(cursor, keys matching the selector, the initial objects to send or None)."""
        scope, selector = w.scope, w.selector
        if w.initial or w.rv_text in ("", "0"):
            objs, cursor = self._objects(scope)
            initial = [
                (key, obj)
                for key, obj in objs
                if _in_scope(obj, scope.namespace) and selector.matches(obj)
            ]
            return cursor, {key for key, _ in initial}, initial
        members: set[str] = set()
        if not selector.empty and scope.resource.stored:
            snapshot, _ = self.view.snapshot(scope.resource.kind)
            members = {k for k, o in snapshot if selector.matches(o)}
        return int(w.rv_text), members, None

    def _watch_events(
        self,
        w: _Watch,
        start: tuple[int, set[str], builtins.list[tuple[str, dict[str, Any]]] | None],
    ) -> Iterator[bytes]:
        scope, selector, initial = w.scope, w.selector, w.initial
        bookmarks, deadline, as_table, alive = w.bookmarks, w.deadline, w.as_table, w.alive
        first = [True]
        r = scope.resource
        cursor, members, initial_objs = start
        filtered = not selector.empty
        plain = not filtered and not as_table
        in_namespace = f"{scope.namespace}/" if scope.namespace else ""
        if initial_objs is not None:
            for begin in range(0, len(initial_objs), WATCH_CHUNK_EVENTS):
                part = initial_objs[begin : begin + WATCH_CHUNK_EVENTS]
                yield b"".join(
                    self._encode(scope, "ADDED", obj, as_table, first) for _, obj in part
                )
            if initial and bookmarks:
                yield self._encode(
                    scope, "BOOKMARK", self._bookmark(scope, cursor, True), False, first
                )
        last_sent = time.monotonic()
        while alive() and time.monotonic() < deadline:
            try:
                batch = self.cache.since(cursor, timeout=1.0)
            except Expired as exc:
                status = expired(str(exc)).status()
                yield json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"
                return
            # A batch's events go out as one chunk (each still its own line): one
            # write and flush per batch, not per event, on both ends of the socket.
            out: builtins.list[bytes] = []
            for ev in batch:
                cursor = ev.rv
                if ev.kind != r.kind or not r.stored:
                    continue
                if in_namespace and not ev.key.startswith(in_namespace):
                    continue  # the key is "namespace/name" (``storage.object_key``)
                if plain:  # the stored event as it is: its JSON, encoded once for all
                    data = ev.json()
                    out.append(_FRAMES[ev.type] + data + b"}\n")
                    continue
                obj = ev.obj  # decoded here, once per event and filtered watch
                etype = ev.type.value
                if filtered:
                    match = ev.type is not EventType.DELETED and selector.matches(obj)
                    was = ev.key in members
                    if ev.type is EventType.DELETED:
                        if not was:
                            continue
                        members.discard(ev.key)
                    elif match and not was:
                        members.add(ev.key)
                        etype = "ADDED"
                    elif not match and was:
                        members.discard(ev.key)
                        etype = "DELETED"
                    elif not match:
                        continue
                if as_table:
                    out.append(self._encode(scope, etype, obj, as_table, first))
                else:
                    out.append(_FRAMES[etype] + ev.json(obj) + b"}\n")
            if out:
                yield b"".join(out)
                last_sent = time.monotonic()
            if bookmarks and time.monotonic() - last_sent >= BOOKMARK_INTERVAL:
                cursor = max(cursor, self.cache.last_rv)
                yield self._encode(scope, "BOOKMARK", self._bookmark(scope, cursor), False, first)
                last_sent = time.monotonic()
            elif not batch:
                yield b""  # lets the server notice a closed connection

    def _watch_kube_events(self, w: _Watch) -> Iterator[bytes]:
        scope, selector, rv_text, initial = w.scope, w.selector, w.rv_text, w.initial
        bookmarks, deadline, as_table, alive = w.bookmarks, w.deadline, w.as_table, w.alive
        first = [True]
        store = self.view.store
        last_id = kevents.last_row_id(store)
        if initial or rv_text in ("", "0"):
            objs, rv = self._objects(scope)
            for _, obj in objs:
                if _in_scope(obj, scope.namespace) and selector.matches(obj):
                    yield self._encode(scope, "ADDED", obj, as_table, first)
            if initial and bookmarks:
                yield self._encode(scope, "BOOKMARK", self._bookmark(scope, rv, True), False, first)
        while alive() and time.monotonic() < deadline:
            rows = kevents.rows_after(store, last_id, 1000)
            if not rows:
                yield b""
                continue
            last_id = rows[-1]["id"]
            now_rv = str(self.view.resource_version())
            uids = kevents.uids_for(store, rows)
            for row in rows:
                core = kevents.core_event(row, uids.get((row["kind"], row["key"]), ""), now_rv)
                obj = kevents.event_v1(core) if scope.resource.group else core
                if _in_scope(obj, scope.namespace) and selector.matches(obj):
                    yield self._encode(scope, "ADDED", obj, as_table, first)


def _rv_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return rv if isinstance(rv, str) else "0"
