"""The scheduling queue, kept in Redis (upstream ``PriorityQueue``).

A queued pod is in exactly one of:

- **activeQ**: ready; popped in QueueSort order (a ZSET: score and member come from the
  QueueSort plugin's ``sort_key``, so Redis' order *is* the plugin's order);
- **backoffQ**: failed recently; waits until ``timestamp + backoff(attempts)`` (a ZSET
  scored by that expiry), then moves to activeQ;
- **unschedulable pool**: rejected; waits for a cluster event one of its rejecting
  plugins registered, or for podMaxInUnschedulablePodsDuration (gated pods wait here
  too, and are never popped);
- **in flight**: popped, its scheduling cycle running; ``done`` or
  ``add_unschedulable_if_not_present`` ends that (``pop_many`` and the ``_many``
  forms do the same for a batch in one round trip, see ``cycles``).

Every move is one Lua script, so any number of processes may share a queue: pops are
ZPOPMIN (never the same pod twice), adds never overwrite a concurrent move, and a
decision taken in Python on a read of a pod (event requeueing, activate, update) is
applied only if the pod's revision is unchanged. Time comes from the injected clock and
reaches the scripts as ARGV. Blocked pops wait on a Redis list that every script that
fills activeQ pushes to, so a pod added by another process wakes them.

This is upstream's queue with QueueingHints (GA, always on): an event moves a waiting
pod only if a QueueingHintFn of a plugin that rejected it says Queue (see
``requeueing``), and a pod whose attempt fails is judged against the events seen during
its cycle (see ``inflight``). With SchedulerPopFromBackoffQ (default on), PreEnqueue
runs when a pod enters backoffQ, not when it leaves, and an empty activeQ pops the head
of backoffQ (``cycles``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgpack  # type: ignore[import-untyped]

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.errors import StoreError
from cluster_sched.framework import events as ev
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
from cluster_sched.queue import requeueing as rq
from cluster_sched.queue.base import (
    BATCH,
    DEFAULT_BACKOFF_FLUSH_INTERVAL,
    DEFAULT_LEFTOVER_FLUSH_INTERVAL,
    IncomingHook,
    Queued,
    log,
)
from cluster_sched.queue.cycles import POP_WAIT_SLICE, CycleQueue
from cluster_sched.queue.scripts import Placement, as_text, num_arg
from cluster_sched.queue.store_errors import translate_redis_errors
from cluster_sched.queue.types import Location, QueuedPodInfo

__all__ = [
    "DEFAULT_BACKOFF_FLUSH_INTERVAL",
    "DEFAULT_LEFTOVER_FLUSH_INTERVAL",
    "POP_WAIT_SLICE",
    "IncomingHook",
    "SchedulingQueue",
]

#: Pods moved per flush_backoff.lua call.
FLUSH_LIMIT = 1000

_POD_TOPOLOGY_SPREAD = "PodTopologySpread"
_ACTIVE = Location.ACTIVE.value
_UNSCHEDULABLE = Location.UNSCHEDULABLE.value
_SCALE_DOWN = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCALE_DOWN)


class SchedulingQueue(CycleQueue):
    """Pods waiting to be scheduled, shared through Redis (see the module docstring).

    Lifecycle: ``run()`` starts the background flushes, ``close()`` stops them and
    wakes blocked pops; a ``with`` block does both. The nominator sharing the queue's
    prefix is ``queue.nominator``. Popping and returning pods (one or a batch per
    round trip) come from :class:`~cluster_sched.queue.cycles.CycleQueue`.
    """

    # --- adding and popping --------------------------------------------------------

    @translate_redis_errors("add pods to the scheduling queue")
    def add(self, info: QueuedPodInfo) -> Location | None:
        """Add a new pod (upstream Add): to activeQ, or the pool if PreEnqueue gates it.

        ``info.timestamp`` orders it among equals: stamp it with ``queue.clock.now()``
        (or the pod's creation time when replaying a workload). Returns where it went;
        None if it is in flight (being scheduled) or gated while already queued.
        Built through ``_placement`` like every other move: :meth:`add_many`'s one-pass
        form of the same arguments is checked against it (tests/queue/test_bulk_add.py).
        """
        now = self._clock.now()
        info = self._admit(info)
        placement = self._placement(
            info, Location.UNSCHEDULABLE if info.gated else Location.ACTIVE, now
        )
        try:
            (reply,) = self._scripts.add(self._keys, [placement])
        finally:
            self._placed([placement])
        if not reply:
            return None
        self._emit(reply, ev.EVENT_UNSCHEDULED_POD_ADD.label)
        where = Location(reply)
        if where is Location.ACTIVE and info.nominated_node_name:
            self.nominator.add_nominated_pod(info.pod_key, info.nominated_node_name, info.priority)
        return where

    @translate_redis_errors("add pods to the scheduling queue")
    def add_many(self, infos: Sequence[QueuedPodInfo]) -> list[Location | None]:
        """:meth:`add` for many pods, a thousand per script call.

        A burst of new pods is the commonest write of the loop, so the batch is built
        in one pass without a ``Placement`` per pod: PreEnqueue, the QueueSort key and
        the packed record of each pod go straight into the script's arguments (those
        :meth:`_placement` would give), the metrics hook is called only when one is
        set, and only pods carrying a nomination visit the nominator. The state left
        and the results are those of the pods added one at a time, in order."""
        now = self._clock.now()
        pre_enqueue, sort_key = self._pre_enqueue, self._sort_key
        packer = msgpack.Packer(use_bin_type=True)
        args: list[str | bytes] = []
        nominated: list[tuple[int, QueuedPodInfo]] = []
        gated = active = False
        for i, info in enumerate(infos):
            if pre_enqueue is not None:
                info = info.with_gate(pre_enqueue(info))
            if info.gated:
                dest, first = _UNSCHEDULABLE, info.initial_attempt_timestamp
                gated = True
            else:
                dest, active = _ACTIVE, True
                first = info.initial_attempt_timestamp
                if first is None:
                    first = now
                if info.nominated_node_name:
                    nominated.append((i, info))
            score, tiebreak = sort_key(info)
            key = info.pod_key
            args += [
                key,
                dest,
                num_arg(info.timestamp),
                repr(float(score)),
                f"{tiebreak}\x00{key}",
                packer.pack(info.wire(first)),
                str(info.attempts or 0),
            ]
        results: list[Location | None] = []
        for start in range(0, len(args), 7 * BATCH):
            try:
                results += self._scripts.add_args(self._keys, args[start : start + 7 * BATCH])
            finally:
                self._pool_writes += gated
                self.active_writes += active
        if self._on_incoming is not None:
            label = ev.EVENT_UNSCHEDULED_POD_ADD.label
            for where in results:
                if where is not None:
                    self._emit(where.value, label)
        for i, info in nominated:
            if results[i] is Location.ACTIVE:
                self.nominator.add_nominated_pod(
                    info.pod_key, info.nominated_node_name, info.priority
                )
        return results

    # --- moving on events ----------------------------------------------------------

    @translate_redis_errors("activate pods")
    def activate(self, pod_keys: Iterable[str]) -> int:
        """Move the given pods from backoffQ / the pool to activeQ (upstream Activate).

        A pod in flight records a ForceActivate event for itself instead, so it goes to
        backoffQ, not the pool, when its attempt fails. Returns how many pods were
        activated.
        """
        keys = list(pod_keys)
        now = self._clock.now()
        queued = self._read(keys)
        placements: list[Placement] = []
        sources: list[Location | None] = []
        for key in keys:
            q = queued.get(key)
            if q is None or q.where not in (Location.UNSCHEDULABLE, Location.BACKOFF):
                continue
            # Leaving backoffQ skips PreEnqueue: it ran when the pod entered backoffQ.
            info = self._admit(q.info) if q.where is Location.UNSCHEDULABLE else q.info
            dest = Location.UNSCHEDULABLE if info.gated else Location.ACTIVE
            placements.append(self._placement(info, dest, now, q.rev))
            sources.append(q.where)
        results = self._apply(placements, sources, event_label=ev.FORCE_ACTIVATE)
        moved = {p.pod_key for p, r in zip(placements, results, strict=True) if r}
        tag = self.event_tag()
        for key in keys:
            if key not in moved:  # in flight: retried when its attempt fails
                self.in_flight_events.record_for_pod(key, tag, [ev.EVENT_FORCE_ACTIVATE], None, key)
        return sum(1 for r in results if r == Location.ACTIVE)

    @translate_redis_errors("move pods on a cluster event")
    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        pre_check: Callable[[QueuedPodInfo], bool] | None = None,
        *,
        old: Any = None,
        new: Any = None,
        changes: Sequence[tuple[Any, Any]] | None = None,
    ) -> int:
        """Requeue unschedulable pods ``event`` may help (upstream
        MoveAllToActiveOrBackoffQueue): ``old`` / ``new`` are the changed object before
        and after, for the rejecting plugins' QueueingHintFns (``changes``: several
        objects changed the same way, e.g. a burst of node adds: one scan of the pool, a
        pod moves if a hint says Queue for any of them). ``pre_check`` narrows the
        candidates. The event is recorded for pods in flight. Returns how many pods left
        the pool."""
        if not rq.is_event_of_interest(event, self._plugin_events):
            return 0
        change = tuple(changes) if changes is not None else ((old, new),)
        candidates = self._unschedulable()
        if pre_check is not None:
            candidates = [q for q in candidates if pre_check(q.info)]
        return self._move_pods(((q, change) for q in candidates), event, change)

    def _cross_topology_candidates(
        self, pods: Sequence[Pod], matches: Callable[[QueuedPodInfo, Pod], bool]
    ) -> list[tuple[Queued, list[Pod]]]:
        """Upstream getUnschedulablePodsWithCrossTopologyTerm, for several pods at once:
        each waiting pod with the ``pods`` it may care about: those its required affinity
        terms match (``matches`` decides: the caller holds the pod objects), and, if
        PodTopologySpread rejected it, those of its namespace. One scan of the pool."""
        found = []
        for q in self._unschedulable():
            namespace = q.info.pod_key.split("/", 1)[0]
            spread = _POD_TOPOLOGY_SPREAD in q.info.unschedulable_plugins
            concerning = [
                p for p in pods if (spread and namespace == p.namespace) or matches(q.info, p)
            ]
            if concerning:
                found.append((q, concerning))
        return found

    @translate_redis_errors("move pods on an assigned pod")
    def assigned_pod_added(self, pod: Pod, matches: Callable[[QueuedPodInfo], bool]) -> int:
        """A bound pod appeared: requeue pods it may help (affinity / spread)."""
        return self.assigned_pods_added([pod], lambda info, _pod: matches(info))

    @translate_redis_errors("move pods on assigned pods")
    def assigned_pods_added(
        self, pods: Sequence[Pod], matches: Callable[[QueuedPodInfo, Pod], bool]
    ) -> int:
        """:meth:`assigned_pod_added` for a batch of bound pods: one scan of the
        unschedulable pool instead of one per pod; each pod is its own AssignedPodAdd
        (new object) for the hints and for pods in flight."""
        event = ev.EVENT_ASSIGNED_POD_ADD
        if not pods or not rq.is_event_of_interest(event, self._plugin_events):
            return 0
        found = self._cross_topology_candidates(pods, matches)
        return self._move_pods(
            ((q, [(None, p) for p in concerning]) for q, concerning in found),
            event,
            [(None, p) for p in pods],
        )

    @translate_redis_errors("move pods on an assigned pod")
    def assigned_pod_updated(
        self,
        pod: Pod,
        matches: Callable[[QueuedPodInfo], bool],
        event: ClusterEvent = ev.EVENT_ASSIGNED_POD_UPDATE,
        old: Pod | None = None,
    ) -> int:
        """A bound pod changed (``old`` -> ``pod``). A scale-down may free resources for
        any pod, so it is offered to every waiting pod; other changes only to affinity /
        spread pods (upstream AssignedPodUpdated)."""
        if _SCALE_DOWN.matches(event):
            return self.move_all_to_active_or_backoff_queue(event, old=old, new=pod)
        if not rq.is_event_of_interest(event, self._plugin_events):
            return 0
        change = ((old, pod),)
        found = self._cross_topology_candidates([pod], lambda info, _p: matches(info))
        return self._move_pods(((q, change) for q, _ in found), event, change)

    # --- update and delete ---------------------------------------------------------

    def _merge(self, stored: QueuedPodInfo, new: QueuedPodInfo) -> QueuedPodInfo:
        """The pod changed, its queue bookkeeping did not (upstream updatePod)."""
        merged = evolve(stored, priority=new.priority, nominated_node_name=new.nominated_node_name)
        if self._pre_enqueue is None:  # the caller's gating is all we know
            merged = evolve(merged, gated=new.gated, gating_plugin=new.gating_plugin)
        return merged

    @translate_redis_errors("update a queued pod")
    def update(
        self,
        old_info: QueuedPodInfo | None,
        new_info: QueuedPodInfo,
        *,
        pod_updated: bool = True,
        events: Sequence[ClusterEvent] | None = None,
        old_pod: Any = None,
        new_pod: Any = None,
    ) -> Location:
        """The pod object changed (upstream Update); returns where it is now.

        ``events`` are the pod's scheduling-property changes (upstream
        PodSchedulingPropertiesChange), ``old_pod`` / ``new_pod`` the objects. In activeQ /
        backoffQ it is updated in place (re-sorted). In the pool, each event is offered
        to its rejecting plugins' hints: the first that says Queue moves it to backoffQ /
        activeQ, else it stays. (Without ``events`` the caller's ``pod_updated``, its
        isPodUpdated, decides alone.) Not queued: it is added to activeQ. In flight: its
        record is updated and the events are recorded for it, so a failed attempt is
        judged with them.
        """
        key = new_info.pod_key
        for _ in range(16):
            now = self._clock.now()
            q = self._read([key]).get(key)
            if q is None:
                info = self._admit(new_info)
                dest = Location.UNSCHEDULABLE if info.gated else Location.ACTIVE
                placement, source = self._placement(info, dest, now), None
            else:
                info, source = self._merge(q.info, new_info), q.where
                strategy = rq.Strategy.SKIP
                if q.where is Location.UNSCHEDULABLE and events is None:
                    strategy = rq.Strategy.AFTER_BACKOFF if pod_updated else strategy
                elif q.where is Location.UNSCHEDULABLE and events is not None:
                    strategy = self._update_strategy(info, events, old_pod, new_pod)
                if strategy is not rq.Strategy.SKIP:
                    placement = self._requeue_placement(q, info, strategy, now)
                else:
                    placement = self._placement(info, q.where, now, q.rev)
                if q.where is Location.IN_FLIGHT:
                    changes = events if events is not None else [ev.EVENT_UNSCHEDULED_POD_UPDATE]
                    self.in_flight_events.record_for_pod(
                        key, self.event_tag(), changes if pod_updated else [], old_pod, new_pod
                    )
            label = ev.EVENT_UNSCHEDULED_POD_UPDATE.label
            (result,) = self._apply([placement], [source], event_label=label)
            if result:
                self._update_nomination(old_info, new_info, queued=q is not None)
                return Location(result)
        raise StoreError(f"pod {key} kept changing under concurrent writers; update not applied")

    def _update_strategy(
        self, info: QueuedPodInfo, events: Sequence[ClusterEvent], old: Any, new: Any
    ) -> rq.Strategy:
        """The first of the pod's own update events that a hint answers Queue."""
        for event in events:
            if not rq.gate_admits(info, event, self._plugin_events):
                continue
            strategy = rq.strategy_for(info, event, self._plugin_events, new, old, new)
            if strategy is not rq.Strategy.SKIP:
                return strategy
        return rq.Strategy.SKIP

    def _update_nomination(
        self, old: QueuedPodInfo | None, new: QueuedPodInfo, *, queued: bool
    ) -> None:
        if not queued:  # newly added: restore the pod's own nomination
            if new.nominated_node_name:
                self.nominator.add_nominated_pod(new.pod_key, new.nominated_node_name, new.priority)
            return
        old_node = old.nominated_node_name if old else ""
        if (
            old_node
            or new.nominated_node_name
            or self.nominator.nominated_node_for_pod(new.pod_key)
        ):
            self.nominator.update_nominated_pod(
                old.pod_key if old else new.pod_key,
                new.pod_key,
                new.nominated_node_name,
                old_node_name=old_node,
                priority=new.priority,
            )

    @translate_redis_errors("delete a queued pod")
    def delete(self, pod_key: str) -> Location | None:
        """Remove the pod from whichever sub-queue holds it (in flight included) and
        from the nominator; returns where it was."""
        self.nominator.delete_nominated_pod_if_exists(pod_key)
        self.in_flight_events.finished([pod_key])
        where = self._scripts.delete(self._keys, pod_key)
        return Location(where) if where else None

    # --- flushing and lifecycle ----------------------------------------------------

    @translate_redis_errors("flush the backoff queue")
    def flush_backoff_q_completed(self) -> int:
        """Move every pod whose backoff expired (expiry <= now) to activeQ."""
        moved = 0
        while True:
            pods = self._scripts.flush_backoff(self._keys, self._clock.now(), FLUSH_LIMIT)
            for _ in pods:
                self._emit(Location.ACTIVE, ev.BACKOFF_COMPLETE)
            if pods:
                self.active_writes += 1
            moved += len(pods)
            if len(pods) < FLUSH_LIMIT:
                return moved

    @translate_redis_errors("flush the unschedulable pods")
    def flush_unschedulable_pods_leftover(self) -> int:
        """Requeue pods that stayed in the pool longer than
        podMaxInUnschedulablePodsDuration (strictly longer, as upstream): to backoffQ
        if they still owe backoff, else activeQ. Gated pods stay."""
        now = self._clock.now()
        limit = self._max_in_unschedulable
        stale = [q for q in self._unschedulable(now - limit) if now - q.info.timestamp > limit]
        if not stale:
            return 0
        none = ((None, None),)
        return self._move_pods(((q, none) for q in stale), ev.EVENT_UNSCHEDULABLE_TIMEOUT, none)

    def run(self) -> None:
        """Start the background thread: flush backoffQ every backoff_flush_interval
        and leftovers every leftover_flush_interval (real seconds; the decisions use
        the injected clock). Idempotent."""
        if self._thread is not None or self._closed.is_set():
            return
        self._thread = threading.Thread(
            target=self._flush_loop, name=f"queue-flusher {self._keys.active}", daemon=True
        )
        self._thread.start()

    def _flush_loop(self) -> None:
        next_leftover = time.monotonic() + self._leftover_interval
        while not self._closed.wait(self._backoff_interval):
            try:
                self.flush_backoff_q_completed()
                if time.monotonic() >= next_leftover:
                    next_leftover = time.monotonic() + self._leftover_interval
                    self.flush_unschedulable_pods_leftover()
            except Exception:  # keep flushing: one failed pass must not strand pods
                log.exception("scheduling queue flush failed; retrying next interval")

    def close(self) -> None:
        """Stop the flusher and make blocked and future pops return None. The data in
        Redis stays (other processes may share it). Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._waiters_lock:
            waiters = self._waiters
        if waiters:
            try:
                self._client.rpush(self._closing_key, *(["1"] * waiters))
                self._client.expire(self._closing_key, 60)
            except Exception:  # Redis gone: pops notice on their own within a slice
                log.debug("could not wake blocked pops on close", exc_info=True)
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __enter__(self) -> SchedulingQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @translate_redis_errors("requeue abandoned in-flight pods")
    def requeue_in_flight(self, popped_before: float) -> int:
        """Maintenance pass: pods popped before ``popped_before`` whose cycle never
        ended (the process scheduling them died) go back as if the attempt had failed
        with an error: to backoffQ, from now. A coordinator calls this when it starts,
        with its start time. Returns how many pods were requeued."""
        now = self._clock.now()
        pods = self._client.zrangebyscore(self._keys.in_flight, "-inf", f"({popped_before!r}")
        stale = [
            q
            for q in self._read([as_text(p) for p in pods]).values()
            if q.where is Location.IN_FLIGHT
        ]
        cleared = frozenset[str]()
        placements = [
            self._placement(
                evolve(
                    q.info, timestamp=now, unschedulable_plugins=cleared, pending_plugins=cleared
                ),
                Location.BACKOFF,
                now,
                q.rev,
            )
            for q in stale
        ]
        self.in_flight_events.finished(q.info.pod_key for q in stale)
        sources = [Location.IN_FLIGHT] * len(placements)
        results = self._apply(placements, sources, event_label=ev.SCHEDULE_ATTEMPT_FAILURE)
        return sum(1 for r in results if r == Location.BACKOFF)
