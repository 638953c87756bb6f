"""When an event may help an unschedulable pod, and where the pod goes then.

Pure decisions, no Redis: the scheduling queue reads pods, asks these functions, and
applies the answers atomically. The rules are upstream's with QueueingHints off:

- a pod no plugin rejected (it failed with an error) is worth retrying on any event;
- an incoming wildcard event (UnschedulableTimeout, ForceActivate) retries every pod;
- otherwise the pod is retried when one of its rejecting plugins registered an event
  that admits the incoming one. A *pending* plugin's event skips backoff.
- a gated pod moves only on events its gating plugin registered.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from cluster_sched.framework.events import ClusterEvent, match_any_cluster_event
from cluster_sched.queue.types import QueuedPodInfo

__all__ = [
    "PluginEvents",
    "Strategy",
    "freeze_plugin_events",
    "is_event_of_interest",
    "strategy_for",
]

#: Plugin name -> the events it registered (its ``events_to_register``).
PluginEvents = Mapping[str, tuple[ClusterEvent, ...]]


class Strategy(enum.Enum):
    """How an event requeues an unschedulable pod (upstream queueingStrategy)."""

    #: The event cannot help: the pod stays in the unschedulable pool.
    SKIP = enum.auto()
    #: Back to backoffQ if it still owes backoff, else activeQ.
    AFTER_BACKOFF = enum.auto()
    #: Straight to activeQ (a Pending plugin's event).
    IMMEDIATELY = enum.auto()


def freeze_plugin_events(
    plugin_events: Mapping[str, Iterable[ClusterEvent]] | None,
) -> PluginEvents:
    return {name: tuple(events) for name, events in (plugin_events or {}).items()}


def is_event_of_interest(event: ClusterEvent, plugin_events: PluginEvents) -> bool:
    """Some plugin registered an event admitting ``event`` (or it is a wildcard).

    The queue ignores other events entirely: it does not even record a move request.
    """
    if event.is_wildcard():
        return True
    return any(match_any_cluster_event(event, events) for events in plugin_events.values())


def gate_admits(info: QueuedPodInfo, event: ClusterEvent, plugin_events: PluginEvents) -> bool:
    """A gated pod may move on ``event`` only if its gating plugin registered it."""
    if not info.gated:
        return True
    return match_any_cluster_event(event, plugin_events.get(info.gating_plugin, ()))


def strategy_for(info: QueuedPodInfo, event: ClusterEvent, plugin_events: PluginEvents) -> Strategy:
    """Upstream isPodWorthRequeuing, with every registered event's hint being Queue."""
    rejectors = info.rejector_plugins
    if not rejectors or event.is_wildcard():
        return Strategy.AFTER_BACKOFF
    strategy = Strategy.SKIP
    for plugin in sorted(rejectors):
        if not match_any_cluster_event(event, plugin_events.get(plugin, ())):
            continue
        if plugin in info.pending_plugins:
            return Strategy.IMMEDIATELY
        strategy = Strategy.AFTER_BACKOFF
    return strategy
