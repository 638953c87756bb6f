"""When an event may help an unschedulable pod, and where the pod goes then.

Pure decisions, no Redis: the scheduling queue reads pods, asks these functions, and
applies the answers atomically. The rules are upstream's with QueueingHints on (the
SchedulerQueueingHints gate is GA and locked on in v1.35), ``isPodWorthRequeuing``:

- a pod no plugin rejected (it failed with an error) is worth retrying on any event;
- an incoming wildcard event (UnschedulableTimeout, ForceActivate) retries every pod,
  unless it names one pod (``new`` is that pod): then only that one;
- otherwise each rejecting plugin that registered an event admitting the incoming one
  is asked through its QueueingHintFn (none: Queue; one that raises: Queue, so a buggy
  hint cannot strand a pod). Queue from a *pending* plugin skips backoff; Queue from an
  unschedulable plugin requeues after backoff; all QueueSkip leaves the pod waiting;
- a gated pod moves only on events its gating plugin registered.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from cluster_sched.framework.events import (
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
    match_any_cluster_event,
    with_hint,
)
from cluster_sched.queue.types import QueuedPodInfo

__all__ = [
    "PluginEvents",
    "Strategy",
    "freeze_plugin_events",
    "interested_plugins",
    "is_event_of_interest",
    "run_hint",
    "strategy_for",
]

log = logging.getLogger(__name__)

#: Plugin name -> the events it registered (its ``events_to_register``), with hints.
PluginEvents = Mapping[str, tuple[ClusterEventWithHint, ...]]


class Strategy(enum.IntEnum):
    """How an event requeues an unschedulable pod (upstream queueingStrategy); a
    larger value wins when several events or plugins answer."""

    #: The event cannot help: the pod stays in the unschedulable pool.
    SKIP = 0
    #: Back to backoffQ if it still owes backoff, else activeQ.
    AFTER_BACKOFF = 1
    #: Straight to activeQ (a Pending plugin's event).
    IMMEDIATELY = 2


def freeze_plugin_events(
    plugin_events: Mapping[str, Iterable[ClusterEvent | ClusterEventWithHint]] | None,
) -> PluginEvents:
    return {
        name: tuple(with_hint(e) for e in events) for name, events in (plugin_events or {}).items()
    }


def is_event_of_interest(event: ClusterEvent, plugin_events: PluginEvents) -> bool:
    """Some plugin registered an event admitting ``event`` (or it is a wildcard).

    The queue ignores other events entirely: it does not even record them for pods in
    flight.
    """
    if event.is_wildcard():
        return True
    return any(match_any_cluster_event(event, events) for events in plugin_events.values())


def interested_plugins(event: ClusterEvent, plugin_events: PluginEvents) -> frozenset[str]:
    """Plugins with a registration admitting ``event``: only pods one of them rejected
    can be requeued by it (computed once per event, not once per waiting pod)."""
    return frozenset(
        name for name, events in plugin_events.items() if match_any_cluster_event(event, events)
    )


def gate_admits(info: QueuedPodInfo, event: ClusterEvent, plugin_events: PluginEvents) -> bool:
    """A gated pod may move on ``event`` only if its gating plugin registered it."""
    if not info.gated:
        return True
    return match_any_cluster_event(event, plugin_events.get(info.gating_plugin, ()))


def run_hint(fn: QueueingHintFn, plugin: str, pod: Any, old: Any, new: Any) -> QueueingHint:
    """One QueueingHintFn call; an exception counts as Queue (upstream's rule)."""
    try:
        return fn(pod, old, new)
    except Exception:
        log.exception("QueueingHintFn of %s failed for pod %s: treated as Queue", plugin, pod)
        return QueueingHint.QUEUE


def _targets_other_pod(info: QueuedPodInfo, new: Any) -> bool:
    if new is None:
        return False
    target = new if isinstance(new, str) else getattr(new, "key", None)
    return target != info.pod_key


def strategy_for(
    info: QueuedPodInfo,
    event: ClusterEvent,
    plugin_events: PluginEvents,
    pod: Any = None,
    old: Any = None,
    new: Any = None,
) -> Strategy:
    """Upstream isPodWorthRequeuing. ``pod`` is the waiting pod's object (None when it
    is unknown: a hint cannot judge it, so it counts as Queue)."""
    rejectors = info.rejector_plugins
    if not rejectors:
        return Strategy.AFTER_BACKOFF
    if event.is_wildcard():
        return Strategy.SKIP if _targets_other_pod(info, new) else Strategy.AFTER_BACKOFF
    strategy = Strategy.SKIP
    for plugin in sorted(rejectors):
        for registration in plugin_events.get(plugin, ()):
            registered = with_hint(registration)  # tolerate unfrozen plain events
            if not registered.event.matches(event):
                continue
            fn = registered.queueing_hint_fn
            skip = QueueingHint.QUEUE_SKIP
            if fn is not None and pod is not None and run_hint(fn, plugin, pod, old, new) is skip:
                continue
            if plugin in info.pending_plugins:
                return Strategy.IMMEDIATELY
            if not info.pending_plugins:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
            break  # this plugin said Queue; its other registrations cannot say more
    return strategy
