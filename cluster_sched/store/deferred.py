"""Two of the store's writes as calls of a :class:`~cluster_sched.store.batch.ScriptBatch`:
a failed attempt's Kubernetes Event and the pod's status, sent with the queue's writes in
one round trip (``scheduler/failure.py``). Each function queues its script now and returns
the function that, called after the batch ran, finishes exactly as ``Store.record_events``
/ ``Store.update_pod_status`` do after their own call; errors come out as their StoreError.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cluster_sched.store import streams
from cluster_sched.store.batch import ScriptBatch
from cluster_sched.store.boundary import redis_boundary
from cluster_sched.store.codec import Encoder, rfc3339
from cluster_sched.store.objects import pack_args, plan_update, text
from cluster_sched.store.podstatus import pod_status_edit
from cluster_sched.store.results import ApplyResult
from cluster_sched.store.store import Store
from cluster_sched.store.update import Update

__all__ = ["record_events_in", "update_pod_status_in"]


def record_events_in(
    store: Store, batch: ScriptBatch, events: list[Mapping[str, str]]
) -> Callable[[], list[str]]:
    """``store.record_events(events)`` as a call of ``batch``; the result: their ids."""
    rows = streams.kube_event_rows(store._clock, events)
    script = store._scripts.events
    args = [store._kevents_maxlen, pack_args(rows)]
    index = batch.add(script.script, script.fence, script.operation, [store.keys.kevents], args)

    def result() -> list[str]:
        with redis_boundary("record_event"):
            return [text(i) for i in batch.reply(index)]

    return result


def update_pod_status_in(
    store: Store,
    batch: ScriptBatch,
    pod_key: str,
    *,
    condition: Mapping[str, Any] | None,
    nominated_node_name: str | None,
    pod_uid: str | None,
    cached: Mapping[str, Any] | None,
) -> Callable[[], ApplyResult | None]:
    """``store.update_pod_status(...)`` whose first compare-and-set (from ``cached``, the
    informer's copy) is a call of ``batch``. What the cached copy cannot settle (none, not
    ours or no change in it, a lost race: apply.lua wrote nothing) is done the usual way
    when the result is asked for, reading the store."""
    edit = pod_status_edit(condition, nominated_node_name, rfc3339(store._clock.now()))
    update = Update("Pod", pod_key, edit, pod_uid, cached)
    plan = None if cached is None else plan_update(0, update, dict(cached), Encoder())[0]
    if plan is None:
        return lambda: store.update("Pod", pod_key, edit, pod_uid, cached)
    writer, script = store._writer, store._scripts.apply
    index = batch.add(script.script, script.fence, script.operation, *writer._cas_call([plan]))

    def result() -> ApplyResult | None:
        with redis_boundary("update Pod"):
            (outcome,) = writer._outcomes([plan], batch.reply(index))
        return outcome if outcome is not None else store.update("Pod", pod_key, edit, pod_uid)

    return result
