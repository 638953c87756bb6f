"""The coordinator's own bindings, known from their watch entries' mark, not decoded.

A binding the coordinator's binder made comes back on the watch as a MODIFIED event with
the whole bound manifest, which the informer used to decode again for every pod (the
largest part of its watch time). But bind.lua changes nothing but spec.nodeName,
status.nominatedNodeName (cleared), the PodScheduled condition and
metadata.resourceVersion, so the entry's key, rv, node and condition are all there is to
know. The binder passes the informer's mark (``OwnMark.mark``, random per informer) to
``Store.bind_many``, in process or in a Ray binding task, and bind.lua writes it into
each binding's entry with the node and the condition's bytes (fields ``by``, ``node``,
``cond``). When the informer meets an entry with its mark, it builds the bound manifest
from the pod it holds (``bound_manifest``) and skips decoding ``obj``. The entry says it
all by itself, so it does not matter whether the binder's reply arrived first: a Ray
task's reply (one per ~250 jobs, every 250 ms at most) usually arrives after the watch
entries of its bindings, which an earlier design, registering each binding from the
reply by its resourceVersion, then had to decode in full.

Why this is exact: watch events are applied in resourceVersion order, so when the entry
of a binding at rv R is reached, the informer's pod is the stored object as it was just
before R, which is exactly what bind.lua edited (an external write in between, such as a
label change, was applied first). Only bind.lua writes the mark, and only into the
entry of a binding it made: a binding refused (conflict, over-commit, uid mismatch of a
re-created pod) or fenced (a lost lease: the whole script is refused) writes no entry;
another binder's (the API, another coordinator, a former coordinator's task) has no mark
or another one, and is decoded as before. Anything unusual (the pod unknown to the
informer or bound already, a manifest part bind.lua would have rewritten as a whole, an
unreadable mark field) returns None and the entry is decoded as before.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, NamedTuple

import msgpack  # type: ignore[import-untyped]

from cluster_sched.store.podstatus import POD_SCHEDULED

__all__ = ["OwnBinding", "OwnMark", "bound_manifest"]

#: Distinct conditions kept decoded (one per second of binding: lastTransitionTime).
CONDITIONS_KEPT = 64


class OwnBinding(NamedTuple):
    """What a binding wrote: ``key`` bound to ``node`` with the PodScheduled=True
    ``condition``. ``conditions``: ``[condition]``, the conditions list of a pod that had
    none, one list shared by every binding with equal condition bytes (read-only, as the
    informer's manifests are)."""

    key: str
    node: str
    condition: Mapping[str, Any]
    conditions: list[Any] | None = None


class OwnMark:
    """The informer's mark, and the reading of entries that carry it.

    ``mark`` goes to the binder (``Store.bind_many(mark=...)``); an entry is ours when
    its ``by`` field is ``raw``, and ``binding`` reads its ``key``, ``node`` and
    ``cond`` fields. Used by the informer's thread only (the binder reads ``mark``)."""

    __slots__ = ("_conditions", "mark", "raw")

    def __init__(self, mark: str | None = None) -> None:
        self.mark = mark if mark is not None else secrets.token_hex(8)
        self.raw = self.mark.encode()
        #: condition bytes -> (condition, [condition]), or None when unreadable
        self._conditions: dict[bytes, tuple[dict[str, Any], list[Any]] | None] = {}

    def binding(self, fields: Mapping[bytes, bytes]) -> OwnBinding | None:
        """The binding a marked entry records; None if a field does not read as one."""
        key, node, cond = fields.get(b"key"), fields.get(b"node"), fields.get(b"cond")
        if key is None or node is None or cond is None:
            return None
        try:
            known = self._conditions[cond]
        except KeyError:
            known = self._decoded(cond)
        if known is None:
            return None
        try:
            return OwnBinding(key.decode(), node.decode(), known[0], known[1])
        except UnicodeDecodeError:
            return None

    def _decoded(self, cond: bytes) -> tuple[dict[str, Any], list[Any]] | None:
        """``cond`` decoded as the watch decodes objects (one list shared by all
        bindings with these bytes); None unless a map, as bind.lua's condition is."""
        try:
            value = msgpack.unpackb(cond, raw=False, strict_map_key=False)
        except Exception:  # msgpack raises several unrelated types for bad input
            value = None
        known = (value, [dict(value)]) if isinstance(value, dict) else None
        if len(self._conditions) >= CONDITIONS_KEPT:
            self._conditions.clear()
        self._conditions[cond] = known
        return known


def bound_manifest(
    raw: Mapping[str, Any],
    node: str,
    rv: int,
    condition: Mapping[str, Any],
    fresh: list[Any] | None = None,
) -> dict[str, Any] | None:
    """The manifest bind.lua makes of ``raw`` when it binds it to ``node`` at ``rv``
    with ``condition``; None where bind.lua would rewrite a whole part that is not a map
    (or a condition that is not one), which the caller leaves to decoding.

    spec.nodeName set; status.nominatedNodeName removed; in status.conditions the first
    PodScheduled entry replaced by ``condition`` unless its status is already "True",
    ``condition`` appended when there is none, the list made ``[condition]`` when there
    is no list (``fresh`` when given: that list, shared); metadata.resourceVersion the
    decimal ``rv``."""
    meta, spec, status = raw.get("metadata"), raw.get("spec"), raw.get("status")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return None
    if status is None:
        status = {}
    elif not isinstance(status, dict):
        return None
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        edited = _with_scheduled(conditions, condition)
        if edited is None:
            return None
    else:
        edited = fresh if fresh is not None else [dict(condition)]
    if status:
        new_status = {k: v for k, v in status.items() if k != "nominatedNodeName"}
        new_status["conditions"] = edited
    else:
        new_status = {"conditions": edited}
    return {
        **raw,
        "metadata": {**meta, "resourceVersion": str(rv)},
        "spec": {**spec, "nodeName": node},
        "status": new_status,
    }


def _with_scheduled(conditions: list[Any], condition: Mapping[str, Any]) -> list[Any] | None:
    """bind.lua's edit_conditions on a list; None if an entry before the PodScheduled
    one is not a map with a string type (bind.lua would not read it the same way)."""
    for i, c in enumerate(conditions):
        if not isinstance(c, dict) or not isinstance(c.get("type", ""), str):
            return None
        if c.get("type") == POD_SCHEDULED:
            if c.get("status") == "True":
                return conditions
            return [*conditions[:i], dict(condition), *conditions[i + 1 :]]
    return [*conditions, dict(condition)]
