"""The coordinator's own bindings, known from the store's reply instead of the watch.

A binding the coordinator's binder made comes back on the watch as a MODIFIED event with
the whole bound manifest, which the informer used to decode again for every pod (the
largest part of its watch time). But the store's reply to ``bind_many`` already says all
there is to know: the binding's resourceVersion, and that bind.lua changed nothing but
spec.nodeName, status.nominatedNodeName (cleared), the PodScheduled condition (set to the
reply's ``condition``) and metadata.resourceVersion. The binder registers each bound pod
here (``ExpectedBindings.expect``, on its own thread, right after the reply); when the
informer meets an entry with a registered resourceVersion, it builds the bound manifest
from the pod it holds (``bound_manifest``) and skips decoding the entry.

Why this is exact: watch events are applied in resourceVersion order, so when the entry
of a binding at rv R is reached, the informer's pod is the stored object as it was just
before R, which is exactly what bind.lua edited (an external write in between, such as a
label change, was applied first). Anything unusual (the pod unknown to the informer, not
the registered key, a manifest part bind.lua would have rewritten as a whole) returns
None and the entry is decoded as before. A binding refused or failed registers nothing:
its pod goes through Unreserve/Forget/requeue as before, and external writers (the API,
apply) are always decoded.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from cluster_sched.store.podstatus import POD_SCHEDULED
from cluster_sched.store.results import BindOutcome, BindResult

__all__ = ["ExpectedBindings", "OwnBinding", "bound_manifest"]

#: Above this many registered bindings, those older than the informer's position are
#: dropped (their entries were passed by a relist and will never be met).
PRUNE_ABOVE = 8192


class OwnBinding(NamedTuple):
    """What a binding at a known resourceVersion wrote: ``key`` bound to ``node`` with
    the PodScheduled=True ``condition``. ``conditions``: ``[condition]``, the conditions
    list of a pod that had none, one list shared by the bindings of a reply whose
    conditions are equal (read-only, as the informer's manifests are). A tuple: one is
    made per binding on the binder thread, which shares the GIL with the loop."""

    key: str
    node: str
    condition: Mapping[str, Any]
    conditions: list[Any] | None = None


class ExpectedBindings:
    """resourceVersion -> OwnBinding for bindings whose watch entries are still ahead.

    Written by binder threads, read and emptied by the coordinator's thread: each
    operation is one dict call (the writers' and ``prune``'s under a lock)."""

    __slots__ = ("_by_rv", "_lock")

    def __init__(self) -> None:
        self._by_rv: dict[int, OwnBinding] = {}
        self._lock = threading.Lock()

    def expect(self, results: Sequence[BindResult]) -> None:
        """Register the bound ones of ``results`` (store replies)."""
        fresh: dict[int, OwnBinding] = {}
        last: Mapping[str, Any] | None = None
        listed: list[Any] = []
        for r in results:
            if r.outcome is not BindOutcome.BOUND or r.rv <= 0 or r.condition is None:
                continue
            if r.condition != last:  # a reply's bindings share one time, so one list
                last, listed = r.condition, [dict(r.condition)]
            fresh[r.rv] = OwnBinding(r.pod_key, r.node_name, r.condition, listed)
        if fresh:
            with self._lock:
                self._by_rv.update(fresh)

    def pop(self, rv: int) -> OwnBinding | None:
        """The registration at ``rv``, removed; None if there is none. Unlocked: one
        dict.pop is atomic against ``expect``'s one dict.update, and ``prune``, the
        only iteration, runs on this same reader thread."""
        return self._by_rv.pop(rv, None)

    def prune(self, applied_rv: int) -> None:
        """Drop registrations at or below ``applied_rv`` when there are many (entries a
        relist went past); a registration is otherwise removed when its entry is met."""
        if len(self._by_rv) <= PRUNE_ABOVE or applied_rv <= 0:
            return
        with self._lock:
            for rv in [rv for rv in self._by_rv if rv <= applied_rv]:
                del self._by_rv[rv]

    def __len__(self) -> int:
        return len(self._by_rv)


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
