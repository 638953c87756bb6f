"""Whole-object writes: prepare in Python, compare-and-set in Lua, retry on conflict.

This is etcd's GuaranteedUpdate. A batch is read with one pipelined HMGET per kind; each
object is merged with what is stored (server-owned fields survive a re-apply) and compared
with it (no-op writes are skipped, as the API server skips them); the rest go to
``apply.lua`` in one call, each conditioned on the resourceVersion that was read. An
object someone else wrote in between comes back as a conflict and is read and merged
again, so a bind racing an apply is never undone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import msgpack  # type: ignore[import-untyped]
import redis

from cluster_sched.clock import Clock
from cluster_sched.errors import InvalidObjectError, StoreError
from cluster_sched.store.admission import (
    PriorityClassInfo,
    PriorityTable,
    admit_pod,
    needs_priority,
    priority_class_info,
)
from cluster_sched.store.codec import (
    Encoder,
    gc_paused,
    pack,
    rfc3339,
    uid_for_rv,
    unpack_object,
)
from cluster_sched.store.kinds import StoreKeys, describe, normalize
from cluster_sched.store.results import ApplyAction, ApplyResult
from cluster_sched.store.scripts import Scripts
from cluster_sched.store.update import Update

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "ObjectWriter",
    "Update",
    "Write",
    "merge_server_fields",
    "pack_args",
    "text",
    "unpack_reply",
]

#: How often one object is re-read and re-tried after losing a compare-and-set race.
DEFAULT_MAX_ATTEMPTS = 16
#: Stored fields the API server owns: a manifest that omits them keeps the stored values.
_SERVER_METADATA = ("uid", "creationTimestamp")
# apply.lua reply codes
_CONFLICT, _UNREADABLE = -1, -2


def _chunks(writes: Sequence[Write], size: int) -> list[tuple[list[Write], set[tuple[str, str]]]]:
    """At most ``size`` writes per chunk, and no object twice in one chunk (its second
    manifest must be compared with what the first one stored)."""
    out: list[tuple[list[Write], set[tuple[str, str]]]] = []
    chunk: list[Write] = []
    idents: set[tuple[str, str]] = set()
    for w in writes:
        ident = (w.kind, w.key)
        if len(chunk) >= size or ident in idents:
            out.append((chunk, idents))
            chunk, idents = [], set()
        chunk.append(w)
        idents.add(ident)
    if chunk:
        out.append((chunk, idents))
    return out


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def pack_args(value: Any) -> bytes:
    """Script arguments as one msgpack blob, in the old raw-string format: Redis's
    ``cmsgpack`` predates the bin type and rejects it."""
    return msgpack.packb(value, use_bin_type=False)


def unpack_reply(reply: Any) -> list[Any]:
    """A script's msgpack-encoded reply array (one bulk string parses far faster than
    thousands of RESP elements)."""
    return msgpack.unpackb(reply, raw=False) or []


@dataclass(frozen=True, slots=True)
class Write:
    """One object to apply: ``index`` is its position in the caller's list."""

    index: int
    kind: str
    key: str
    doc: dict[str, Any]


@dataclass(slots=True)
class _Planned:
    write: Write
    old: dict[str, Any] | None
    new: dict[str, Any]
    #: The object split where apply.lua stamps uid / resourceVersion (Encoder.pack_object).
    head: bytes
    tail: bytes
    set_uid: bool


def _stored_rv(obj: Mapping[str, Any]) -> str:
    """The resourceVersion as apply.lua reads it: the string, or "" if there is none."""
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return rv if isinstance(rv, str) else ""


def _rv_int(obj: Mapping[str, Any]) -> int:
    rv = _stored_rv(obj)
    return int(rv) if rv.isdigit() else 0


def merge_server_fields(
    kind: str, key: str, old: Mapping[str, Any] | None, doc: Mapping[str, Any], now: str
) -> dict[str, Any]:
    """The object to store when ``doc`` is applied over ``old`` (None: a create).

    A fresh dict (``doc`` is never mutated) without metadata.resourceVersion (the script
    sets it). On create, creationTimestamp defaults to ``now``. On update, uid,
    creationTimestamp and status are kept unless ``doc`` states them, and a bound pod
    keeps its spec.nodeName; a manifest naming another node is rejected, since the API
    server never lets a pod move.
    """
    new = dict(doc)
    meta = dict(doc["metadata"])
    new["metadata"] = meta
    meta.pop("resourceVersion", None)
    if old is None:
        if not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = now
        return new
    old_meta = old.get("metadata")
    if isinstance(old_meta, Mapping):
        for field in _SERVER_METADATA:
            if not meta.get(field) and old_meta.get(field):
                meta[field] = old_meta[field]
    if "status" not in new and "status" in old:
        new["status"] = old["status"]
    if kind == "Pod":
        old_spec, spec = old.get("spec"), new.get("spec")
        bound = old_spec.get("nodeName") if isinstance(old_spec, Mapping) else None
        if bound and isinstance(spec, Mapping):
            wanted = spec.get("nodeName")
            if not wanted:
                new["spec"] = {**spec, "nodeName": bound}
            elif wanted != bound:
                raise InvalidObjectError(
                    f"the pod is bound to node {bound!r} and cannot move to {wanted!r}",
                    obj=describe(kind, key),
                    field="spec.nodeName",
                )
    return new


def _same(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether storing ``new`` would change nothing but the resourceVersion."""
    if old.keys() != new.keys():
        return False
    for field, value in new.items():
        if field == "metadata":
            old_meta = old[field]
            if not isinstance(old_meta, Mapping):
                return False
            old_meta = {k: v for k, v in old_meta.items() if k != "resourceVersion"}
            if old_meta != value:
                return False
        elif old[field] != value:
            return False
    return True


def _check_storable(kind: str, key: str, doc: Mapping[str, Any], source: str) -> None:
    """InvalidObjectError if msgpack cannot hold ``doc``: an integer past 64 bits or a
    YAML ``!!set`` in a field no parser looked at. Checked before anything is written
    (packing costs about 2 us per pod), so such a manifest never half-applies a batch."""
    try:
        pack(doc)
    except (TypeError, ValueError, OverflowError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if len(reason) > 200:
            reason = reason[:200] + "..."
        raise InvalidObjectError(
            f"cannot be stored: {reason}", obj=describe(kind, key), source=source
        ) from None


class ObjectWriter:
    """The write path shared by apply, apply_many and the pod-status updates."""

    def __init__(
        self,
        client: redis.Redis,
        keys: StoreKeys,
        scripts: Scripts,
        clock: Clock,
        events_maxlen: int,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts
        self._clock = clock
        self._maxlen = events_maxlen
        self._max_attempts = max_attempts

    # --- preparing ----------------------------------------------------------------

    def prepare(self, docs: Sequence[Mapping[str, Any]], source: str) -> list[Write]:
        """Validate and admit every document; PriorityClasses are ordered first."""
        normalized = [normalize(doc, source) for doc in docs]
        classes: dict[str, PriorityClassInfo] = {}
        for kind, key, doc in normalized:
            if kind == "PriorityClass":
                classes[key] = priority_class_info(doc, source)
        if any(kind == "Pod" and needs_priority(doc) for kind, _, doc in normalized):
            table = PriorityTable(self._stored_classes())
            for info in classes.values():
                table.add(info)
            normalized = [
                (kind, key, admit_pod(doc, table, key, source) if kind == "Pod" else doc)
                for kind, key, doc in normalized
            ]
        for kind, key, doc in normalized:
            _check_storable(kind, key, doc, source)
        writes = [Write(i, kind, key, doc) for i, (kind, key, doc) in enumerate(normalized)]
        return [w for w in writes if w.kind == "PriorityClass"] + [
            w for w in writes if w.kind != "PriorityClass"
        ]

    def _stored_classes(self) -> list[PriorityClassInfo]:
        raw: Any = self._client.hgetall(self._keys.obj("PriorityClass"))
        infos = []
        for name, data in raw.items():
            obj = unpack_object(data, "PriorityClass", text(name))
            infos.append(priority_class_info(obj, source="stored"))
        return infos

    # --- applying -----------------------------------------------------------------

    def apply(self, writes: Sequence[Write], batch_size: int) -> list[ApplyResult]:
        """Write ``writes`` in chunks; chunk i+1 is read and encoded while chunk i's script
        runs in Redis (a second thread waits on the socket), so Python and Redis work
        overlap. Events follow input order: a script is sent only after the previous
        chunk, including its conflict retries, is finished; and an object named twice is
        never read before its earlier write has landed (a chunk ends at a repeated key,
        and a chunk sharing keys with the one in flight waits for it), so the later
        manifest always wins."""
        results: list[ApplyResult | None] = [None] * len(writes)
        encoder = Encoder()
        chunks = _chunks(writes, batch_size)
        if len(chunks) == 1:  # nothing to overlap with: skip the thread
            planned = self._plan(chunks[0][0], results, encoder)
            self._finish(planned, self._compare_and_set(planned), results, encoder)
            return results  # type: ignore[return-value]
        with gc_paused(), ThreadPoolExecutor(1) as io:
            in_flight: Future[list[ApplyResult | None]] | None = None
            in_flight_plan: list[_Planned] = []
            in_flight_idents: set[tuple[str, str]] = set()
            for chunk, idents in chunks:
                if in_flight is not None and not idents.isdisjoint(in_flight_idents):
                    self._finish(in_flight_plan, in_flight.result(), results, encoder)
                    in_flight = None
                planned = self._plan(chunk, results, encoder)
                if in_flight is not None:
                    self._finish(in_flight_plan, in_flight.result(), results, encoder)
                in_flight_plan, in_flight_idents = planned, idents
                in_flight = io.submit(self._compare_and_set, planned)
            if in_flight is not None:
                self._finish(in_flight_plan, in_flight.result(), results, encoder)
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    def _read(self, writes: Sequence[Write]) -> list[bytes | None]:
        by_kind: dict[str, list[int]] = defaultdict(list)
        for i, w in enumerate(writes):
            by_kind[w.kind].append(i)
        pipe = self._client.pipeline(transaction=False)
        for kind, idxs in by_kind.items():
            pipe.hmget(self._keys.obj(kind), [writes[i].key for i in idxs])
        out: list[bytes | None] = [None] * len(writes)
        for idxs, values in zip(by_kind.values(), pipe.execute(), strict=True):
            for i, value in zip(idxs, values, strict=True):
                out[i] = value
        return out

    def _plan(
        self, writes: Sequence[Write], results: list[ApplyResult | None], encoder: Encoder
    ) -> list[_Planned]:
        """Read the stored objects, merge, and encode; UNCHANGED results are final here."""
        now = rfc3339(self._clock.now())
        planned: list[_Planned] = []
        for w, raw in zip(writes, self._read(writes), strict=True):
            old = None if raw is None else unpack_object(raw, w.kind, w.key)
            new = merge_server_fields(w.kind, w.key, old, w.doc, now)
            set_uid = old is None and not new["metadata"].get("uid")
            if set_uid:
                new["metadata"].pop("uid", None)
            head, tail = encoder.pack_object(new, set_uid)
            if encoder.converted:  # compare what will be stored, not the datetimes
                new = unpack_object(pack(new), w.kind, w.key)
            if old is not None and _same(old, new):
                results[w.index] = ApplyResult(
                    w.kind, w.key, ApplyAction.UNCHANGED, _rv_int(old), old
                )
                continue
            planned.append(_Planned(w, old, new, head, tail, set_uid))
        return planned

    def _finish(
        self,
        planned: Sequence[_Planned],
        outcomes: Sequence[ApplyResult | None],
        results: list[ApplyResult | None],
        encoder: Encoder,
    ) -> None:
        """Record outcomes; re-read, re-merge and re-send the writes that lost a race."""
        for _ in range(self._max_attempts):
            lost = []
            for p, outcome in zip(planned, outcomes, strict=True):
                if outcome is None:
                    lost.append(p.write)
                else:
                    results[p.write.index] = outcome
            if not lost:
                return
            planned = self._plan(lost, results, encoder)
            outcomes = self._compare_and_set(planned)
        w = lost[0]
        raise StoreError(
            f"apply {describe(w.kind, w.key)}: still conflicting after "
            f"{self._max_attempts} attempts (too many concurrent writers)"
        )

    def _compare_and_set(self, planned: Sequence[_Planned]) -> list[ApplyResult | None]:
        """Run apply.lua; per item the result, or None when it lost a race."""
        if not planned:
            return []
        return self._outcomes(planned, self._scripts.apply(*self._cas_call(planned)))

    def _cas_call(self, planned: Sequence[_Planned]) -> tuple[list[Any], list[Any]]:
        """apply.lua's keys and args for ``planned``."""
        kinds: dict[str, int] = {}
        items = []
        for p in planned:
            w = p.write
            k = kinds.setdefault(w.kind, len(kinds) + 1)
            expected = "0" if p.old is None else _stored_rv(p.old)
            items.append((k, w.key, expected, 1 if p.set_uid else 0, p.head, p.tail))
        keys = [self._keys.rv, self._keys.events, *(self._keys.obj(kind) for kind in kinds)]
        return keys, [self._maxlen, pack_args(list(kinds)), pack_args(items)]

    def _outcomes(self, planned: Sequence[_Planned], raw: Any) -> list[ApplyResult | None]:
        """apply.lua's reply: per item the result, or None when it lost a race."""
        reply = unpack_reply(raw)
        out: list[ApplyResult | None] = []
        for i, p in enumerate(planned):
            code, detail = reply[2 * i], reply[2 * i + 1]
            w = p.write
            if code == _CONFLICT:
                out.append(None)
                continue
            if code == _UNREADABLE:
                raise StoreError(f"stored {describe(w.kind, w.key)} is unreadable: {text(detail)}")
            rv = int(code)
            meta = p.new["metadata"]
            meta["resourceVersion"] = str(rv)
            if p.set_uid:
                meta["uid"] = uid_for_rv(rv)
            action = ApplyAction.CREATED if p.old is None else ApplyAction.UPDATED
            out.append(ApplyResult(w.kind, w.key, action, rv, p.new, text(detail)))
        return out

    def create(self, write: Write) -> ApplyResult | None:
        """Store ``write`` only if no object has its key: one apply.lua item expecting
        "must not exist", so of two racing creates exactly one wins (etcd's Create with
        its ``version == 0`` comparison). None if the key is taken."""
        now = rfc3339(self._clock.now())
        new = merge_server_fields(write.kind, write.key, None, write.doc, now)
        set_uid = not new["metadata"].get("uid")
        if set_uid:
            new["metadata"].pop("uid", None)
        head, tail = Encoder().pack_object(new, set_uid)
        (outcome,) = self._compare_and_set([_Planned(write, None, new, head, tail, set_uid)])
        return outcome

    # --- read-modify-write ----------------------------------------------------------

    def guaranteed_update(
        self,
        kind: str,
        key: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any] | None],
        uid: str | None = None,
        cached: Mapping[str, Any] | None = None,
    ) -> ApplyResult | None:
        """Apply ``mutate`` (stored object → new object, or None for "no change") until
        it wins the compare-and-set; None if the object is gone or its uid is not ``uid``."""
        return self.guaranteed_update_many([Update(kind, key, mutate, uid, cached)])[0]

    def guaranteed_update_many(self, updates: Sequence[Update]) -> list[ApplyResult | None]:
        """``guaranteed_update`` for several objects at once: per attempt one read (a
        pipelined HMGET per kind; none for the first attempt of an update with a cached
        object) and one compare-and-set script for all of them; those that lost a race are
        read and mutated again. A cached object that fails the uid precondition or makes
        no change is read too, never trusted for the answer (etcd's origStateIsCurrent).
        Results in order, each None if its object is gone or has another uid. Two updates
        of one object in a batch are fine (the second loses the first round and is read
        again), but cost a round."""
        results: list[ApplyResult | None] = [None] * len(updates)
        todo = list(range(len(updates)))
        encoder = Encoder()
        for attempt in range(self._max_attempts):
            if not todo:
                return results
            first = attempt == 0
            reads = [
                Write(i, updates[i].kind, updates[i].key, {})
                for i in todo
                if not (first and updates[i].cached is not None)
            ]
            stored = {w.index: raw for w, raw in zip(reads, self._read(reads), strict=True)}
            planned: list[_Planned] = []
            again: list[int] = []
            for i in todo:
                u = updates[i]
                if i in stored:
                    raw = stored[i]
                    if raw is None:
                        continue
                    old = unpack_object(raw, u.kind, u.key)
                else:
                    old = dict(u.cached or {})
                plan, ours = plan_update(i, u, old, encoder)
                if plan is None:
                    if i not in stored:
                        again.append(i)  # the cached copy may be stale: ask the store
                    elif ours:
                        results[i] = ApplyResult(
                            u.kind, u.key, ApplyAction.UNCHANGED, _rv_int(old), old
                        )
                    continue
                planned.append(plan)
            todo = again
            for p, outcome in zip(planned, self._compare_and_set(planned), strict=True):
                if outcome is None:
                    todo.append(p.write.index)
                else:
                    results[p.write.index] = outcome
        if not todo:
            return results
        u = updates[todo[0]]
        raise StoreError(
            f"update {describe(u.kind, u.key)}: still conflicting after {self._max_attempts} attempts"
        )


def plan_update(
    index: int, u: Update, old: dict[str, Any], encoder: Encoder
) -> tuple[_Planned | None, bool]:
    """``u.mutate`` applied to ``old`` and encoded (None: not ours, or no change), and
    whether ``old`` passed the uid precondition."""
    meta = old.get("metadata")
    ours = u.uid is None or (isinstance(meta, Mapping) and meta.get("uid") == u.uid)
    new = u.mutate(old) if ours else None
    if new is None:
        return None, ours
    meta = {k: v for k, v in (new.get("metadata") or {}).items() if k != "resourceVersion"}
    new = {**new, "metadata": meta}
    head, tail = encoder.pack_object(new, set_uid=False)
    return _Planned(Write(index, u.kind, u.key, new), old, new, head, tail, False), ours
