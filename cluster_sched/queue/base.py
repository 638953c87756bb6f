"""The machinery under :class:`~cluster_sched.queue.SchedulingQueue`.

Every operation that moves pods follows one pattern: read the pods' records (and their
revisions), decide in Python (requeueing rules, PreEnqueue, QueueSort key, backoff), and
hand the decisions to ``requeue.lua``, which applies each one only if the pod's revision
is still the one read. A stale decision is dropped: whoever changed the pod meanwhile
decided its place. This module holds that pattern; ``scheduling_queue`` the operations.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from cluster_sched.clock import Clock, SystemClock
from cluster_sched.errors import StoreError
from cluster_sched.framework.events import ClusterEvent, ClusterEventWithHint
from cluster_sched.queue import requeueing as rq
from cluster_sched.queue.inflight import InFlightEvents
from cluster_sched.queue.keys import DEFAULT_PREFIX, QueueKeys
from cluster_sched.queue.nominator import Nominator
from cluster_sched.queue.scripts import Placement, as_text, scripts_for
from cluster_sched.queue.store_errors import translate_redis_errors
from cluster_sched.queue.types import (
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS,
    Location,
    PreEnqueue,
    QueuedPodInfo,
    SortKey,
    backoff_duration,
    priority_sort_key,
)

__all__ = [
    "BATCH",
    "DEFAULT_BACKOFF_FLUSH_INTERVAL",
    "DEFAULT_LEFTOVER_FLUSH_INTERVAL",
    "IncomingHook",
    "QuarantineHook",
    "QueueBase",
]

log = logging.getLogger(__name__)

#: How often run() moves pods whose backoff expired to activeQ (seconds).
DEFAULT_BACKOFF_FLUSH_INTERVAL = 1.0
#: How often run() retries pods left in the unschedulable pool too long (seconds).
DEFAULT_LEFTOVER_FLUSH_INTERVAL = 30.0
#: Pods per script call: keeps each script short (Redis runs one script at a time).
BATCH = 1000
#: QueueingHintFn calls one event may make (waiting pods x changed objects, e.g. a
#: thousand nodes added while ten thousand pods wait). Past it the remaining pods are
#: judged by their plugins' registrations alone (Queue): more retries, never a stuck pod.
MAX_HINT_CALLS_PER_EVENT = 2_000_000

#: Called once per pod entering a sub-queue: (queue label, event label), for
#: scheduler_queue_incoming_pods_total{queue,event}.
IncomingHook = Callable[[str, str], None]
#: Called with the key of a pod whose unreadable record was moved aside (it left the
#: queue): the coordinator may queue it afresh from the pod object it holds.
QuarantineHook = Callable[[str], None]
#: The pod object of a queued pod, by key (the informer's view), for QueueingHintFns;
#: None when unknown (a hint cannot judge it: the event counts as Queue).
PodLookup = Callable[[str], Any]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Queued:
    """One pod as read from Redis: the decision input, and the revision it was read at."""

    info: QueuedPodInfo
    where: Location
    rev: str


def pod_of_member(member: bytes) -> str:
    return member.rsplit(b"\x00", 1)[-1].decode()


def chunks(items: Sequence[T], size: int = BATCH) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class QueueBase:
    """Configuration, rules, reads and guarded writes shared by the queue's operations.

    ``plugin_events`` maps each enabled plugin to its EventsToRegister (plain events or
    ClusterEventWithHint); ``pod_lookup`` gives the hints the waiting pod's object.
    ``pre_enqueue`` runs the PreEnqueue plugins (None: the ``gated`` flag callers set is
    trusted). ``sort_key`` is the QueueSort plugin's ordering. ``pop_from_backoff_q``
    is the SchedulerPopFromBackoffQ gate.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
        sort_key: SortKey = priority_sort_key,
        plugin_events: Mapping[str, Iterable[ClusterEvent | ClusterEventWithHint]] | None = None,
        pod_lookup: PodLookup | None = None,
        pop_from_backoff_q: bool = True,
        pre_enqueue: PreEnqueue | None = None,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF_SECONDS,
        pod_max_in_unschedulable_pods_duration: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS,
        on_incoming: IncomingHook | None = None,
        on_quarantine: QuarantineHook | None = None,
        nominator: Nominator | None = None,
        backoff_flush_interval: float = DEFAULT_BACKOFF_FLUSH_INTERVAL,
        leftover_flush_interval: float = DEFAULT_LEFTOVER_FLUSH_INTERVAL,
    ) -> None:
        self._client = client
        self._keys = QueueKeys.for_prefix(prefix)
        self._scripts = scripts_for(client)
        self._clock: Clock = clock or SystemClock()
        self._sort_key = sort_key
        self._plugin_events = rq.freeze_plugin_events(plugin_events)
        self._pod_lookup = pod_lookup
        self._pop_from_backoff_q = pop_from_backoff_q
        #: pods popped here and the events seen meanwhile (the in-flight rule)
        self.in_flight_events = InFlightEvents()
        self._pre_enqueue = pre_enqueue
        self._initial_backoff = pod_initial_backoff
        self._max_backoff = pod_max_backoff
        self._max_in_unschedulable = pod_max_in_unschedulable_pods_duration
        self._on_incoming = on_incoming
        self._on_quarantine = on_quarantine
        #: records moved to the dead-letter hash by this instance
        self.quarantined = 0
        self.nominator = nominator or Nominator(client, prefix=prefix)
        #: The scheduling cycle a batched coordinator is working on (None: the last
        #: popped one). Events seen for pods in flight are tagged with it, so a pod of a
        #: popped batch is judged only by events of its own cycle and later, exactly as
        #: after a serial pop.
        self.cycle_in_progress: int | None = None
        self._backoff_interval = backoff_flush_interval
        self._leftover_interval = leftover_flush_interval
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._closing_key = self._keys.closing(uuid.uuid4().hex)
        self._waiters = 0
        self._waiters_lock = threading.Lock()
        self.last_pop_cycle = 0
        """Scheduling cycle of this instance's latest pop (race-free, unlike
        scheduling_cycle() when several processes pop)."""
        #: Pods whose cycle ended (``CycleQueue.done_later``), forgotten by the next pop.
        self._finished: list[str] = []
        #: Writes of this queue that may have put pods into the unschedulable pool, and
        #: their count when a full scan last found the pool empty (see ``_unschedulable``).
        self._pool_writes = 0
        self._pool_empty_at = -1
        #: Writes of this queue that may have put pods into activeQ: a popped batch
        #: asks ``unpop_overtaken`` only when this moved since its pop.
        self.active_writes = 0

    @property
    def keys(self) -> QueueKeys:
        return self._keys

    @property
    def clock(self) -> Clock:
        return self._clock

    # --- rules ---------------------------------------------------------------------

    def backoff_expiry(self, info: QueuedPodInfo) -> float:
        """When ``info`` finishes backing off (upstream calculateBackoffTime)."""
        return info.timestamp + backoff_duration(
            info.attempts, self._initial_backoff, self._max_backoff
        )

    def _backing_off(self, info: QueuedPodInfo, now: float) -> bool:
        return self.backoff_expiry(info) > now

    def _admit(self, info: QueuedPodInfo) -> QueuedPodInfo:
        """Run PreEnqueue (if configured): the result decides ``gated``."""
        if self._pre_enqueue is None:
            return info
        return info.with_gate(self._pre_enqueue(info))

    def _placement(
        self, info: QueuedPodInfo, dest: Location, now: float, expected_rev: str = ""
    ) -> Placement:
        # entering activeQ stamps the first attempt's time; the record is packed with
        # it (no copy of the info: the sort key and backoff do not read that field)
        first = now if dest is Location.ACTIVE and info.initial_attempt_timestamp is None else None
        score, tiebreak = self._sort_key(info)
        dest_score = self.backoff_expiry(info) if dest is Location.BACKOFF else info.timestamp
        return Placement(
            pod_key=info.pod_key,
            dest=dest.value,
            score=None if dest is Location.IN_FLIGHT else dest_score,
            sort_score=float(score),
            sort_member=f"{tiebreak}\x00{info.pod_key}",
            info=info.pack(first),
            attempts=info.attempts,
            expected_rev=expected_rev,
        )

    def _requeue_placement(
        self, queued: Queued, info: QueuedPodInfo, strategy: rq.Strategy, now: float
    ) -> Placement:
        """Upstream requeuePodWithQueueingStrategy for a pod leaving the pool."""
        info = self._admit(info)
        if info.gated:
            dest = Location.UNSCHEDULABLE
        elif strategy is rq.Strategy.AFTER_BACKOFF and self._backing_off(info, now):
            dest = Location.BACKOFF
        else:
            dest = Location.ACTIVE
        return self._placement(info, dest, now, queued.rev)

    def _emit(self, queue: str, event_label: str) -> None:
        if self._on_incoming is None:
            return
        try:
            self._on_incoming(queue, event_label)
        except Exception:  # a metrics bug must not lose a pod
            log.exception("on_incoming hook failed for queue=%s event=%s", queue, event_label)

    # --- reading -------------------------------------------------------------------

    def _read(self, pod_keys: Sequence[str]) -> dict[str, Queued]:
        found: dict[str, Queued] = {}
        for chunk in chunks(list(dict.fromkeys(pod_keys)), 5 * BATCH):
            pipe = self._client.pipeline(transaction=False)
            pipe.hmget(self._keys.info, chunk)
            pipe.hmget(self._keys.attempts, chunk)
            pipe.hmget(self._keys.where, chunk)
            pipe.hmget(self._keys.rev, chunk)
            infos, attempts, wheres, revs = pipe.execute()
            for key, blob, att, where, rev in zip(
                chunk, infos, attempts, wheres, revs, strict=True
            ):
                if blob is None or where is None or rev is None:
                    continue  # not queued (or removed between reads)
                try:
                    info = QueuedPodInfo.unpack(blob, attempts=int(att or 0))
                    found[key] = Queued(info, Location(where.decode()), rev.decode())
                except (StoreError, ValueError, UnicodeDecodeError) as exc:
                    self.quarantine(key, blob, str(exc))
        return found

    def quarantine(self, pod_key: str, seen: bytes, reason: str) -> bool:
        """Move an unreadable record aside: its bytes to the dead-letter hash, its pod
        out of every sub-queue. Only if the record still is ``seen`` (a writer that
        replaced it meanwhile wins). Logged once per record; never raises for the
        record's content, so one poisoned pod cannot stop the queue (or crash-loop a
        coordinator whose start-up reads it). Returns whether the pod was moved."""
        if not self._scripts.quarantine(self._keys, pod_key, seen):
            return False
        self.quarantined += 1
        log.warning(
            "queue record of pod %s is unreadable (%s): moved to the dead-letter hash %s",
            pod_key,
            reason.splitlines()[0] if reason else "unknown",
            self._keys.dead_letter,
        )
        if self._on_quarantine is not None:
            try:
                self._on_quarantine(pod_key)
            except Exception:  # the hook must not turn a skipped record into a crash
                log.exception("on_quarantine hook failed for pod %s", pod_key)
        return True

    def _unschedulable(self, entered_before: float | None = None) -> list[Queued]:
        """The pool's pods (those that entered before ``entered_before``).

        Every cluster event and every batch of bound pods scans the pool, and it is
        usually empty. The coordinator's queue is the pool's only writer (a deposed
        leader's writes are fenced out), so once a full scan found it empty, scans are
        skipped until this queue writes a placement into it (``_placed``)."""
        writes = self._pool_writes
        if writes == self._pool_empty_at:
            return []
        upper: float | str = "+inf" if entered_before is None else f"({entered_before!r}"
        pods = [
            as_text(m) for m in self._client.zrangebyscore(self._keys.unschedulable, "-inf", upper)
        ]
        if not pods and entered_before is None:
            self._pool_empty_at = writes
        queued = self._read(pods)
        return [q for q in queued.values() if q.where is Location.UNSCHEDULABLE]

    def _placed(self, placements: Sequence[Placement]) -> None:
        """Called after a script wrote ``placements`` (or failed to): one bound for the
        pool makes the next scan read it."""
        if any(p.dest == "unschedulable" for p in placements):
            self._pool_writes += 1
        if any(p.dest == "active" for p in placements):
            self.active_writes += 1

    # --- introspection (debugging, tests, the cache dumper) ------------------------

    @translate_redis_errors("list pending pods")
    def pending_pods(self) -> tuple[list[QueuedPodInfo], str]:
        """Every waiting pod (activeQ in pop order, then backoffQ by expiry, then the
        pool) and upstream's summary ``activeQ:N; backoffQ:N; unschedulablePods:N``."""
        pipe = self._client.pipeline(transaction=False)
        pipe.zrange(self._keys.active, 0, -1)
        pipe.zrange(self._keys.backoff, 0, -1)
        pipe.zrange(self._keys.unschedulable, 0, -1)
        active, backoff, unschedulable = pipe.execute()
        groups = (
            [pod_of_member(m) for m in active],
            [m.decode() for m in backoff],
            [m.decode() for m in unschedulable],
        )
        queued = self._read([key for group in groups for key in group])
        infos = [queued[key].info for group in groups for key in group if key in queued]
        summary = f"activeQ:{len(groups[0])}; backoffQ:{len(groups[1])}; unschedulablePods:{len(groups[2])}"
        return infos, summary

    @translate_redis_errors("count queued pods")
    def counts(self) -> dict[Location, int]:
        """Pods per sub-queue in one round trip (gated pods count as unschedulable)."""
        pipe = self._client.pipeline(transaction=False)
        keys = self._keys
        for key in (keys.active, keys.backoff, keys.unschedulable, keys.in_flight):
            pipe.zcard(key)
        active, backoff, unsched, inflight = pipe.execute()
        return {
            Location.ACTIVE: int(active),
            Location.BACKOFF: int(backoff),
            Location.UNSCHEDULABLE: int(unsched),
            Location.IN_FLIGHT: int(inflight),
        }

    @translate_redis_errors("count unschedulable pods")
    def num_unschedulable_pods(self) -> int:
        """Pods in the unschedulable pool, gated ones included."""
        return int(self._client.zcard(self._keys.unschedulable))

    @translate_redis_errors("read a queued pod")
    def get(self, pod_key: str) -> QueuedPodInfo | None:
        """The pod's queue record (attempts current), or None if it is not queued."""
        queued = self._read([pod_key]).get(pod_key)
        return queued.info if queued else None

    @translate_redis_errors("read a queued pod")
    def location(self, pod_key: str) -> Location | None:
        """Which sub-queue holds the pod (IN_FLIGHT while it is being scheduled)."""
        where = self._client.hget(self._keys.where, pod_key)
        return Location(as_text(where)) if where else None

    @translate_redis_errors("list in-flight pods")
    def in_flight_pods(self) -> list[str]:
        """Pods popped and not yet done or requeued, oldest pop first."""
        return [as_text(m) for m in self._client.zrange(self._keys.in_flight, 0, -1)]

    # --- applying ------------------------------------------------------------------

    def _apply(
        self,
        placements: Sequence[Placement],
        sources: Sequence[Location | None],
        *,
        event_label: str,
    ) -> list[str]:
        """Run requeue.lua in batches; emit metrics for pods that changed sub-queue."""
        results: list[str] = []
        for chunk in chunks(placements):
            try:
                results += self._scripts.requeue(
                    self._keys, chunk, wake_on_backoff=self._pop_from_backoff_q
                )
            finally:
                self._placed(chunk)
        for result, source in zip(results, sources, strict=True):
            if result and result != Location.IN_FLIGHT and result != source:
                self._emit(result, event_label)
        return results

    # --- QueueingHints -------------------------------------------------------------

    def event_tag(self) -> int:
        """The cycle an event arriving now belongs to (see ``cycle_in_progress``)."""
        return self.last_pop_cycle if self.cycle_in_progress is None else self.cycle_in_progress

    def _lookup(self, pod_key: str) -> Any:
        return None if self._pod_lookup is None else self._pod_lookup(pod_key)

    def _strategy(
        self,
        info: QueuedPodInfo,
        event: ClusterEvent,
        changes: Iterable[tuple[Any, Any]],
        *,
        judge: bool = True,
    ) -> rq.Strategy:
        """The strongest answer over ``changes`` (old, new) of one event kind; without
        ``judge`` the hints are not asked (every matching registration says Queue)."""
        pod = self._lookup(info.pod_key) if judge else None
        best = rq.Strategy.SKIP
        for old, new in changes:
            best = max(best, rq.strategy_for(info, event, self._plugin_events, pod, old, new))
            if best is rq.Strategy.IMMEDIATELY or (
                best is rq.Strategy.AFTER_BACKOFF and not info.pending_plugins
            ):
                break
        return best

    def _move_pods(
        self,
        candidates: Iterable[tuple[Queued, Sequence[tuple[Any, Any]]]],
        event: ClusterEvent,
        changes: Sequence[tuple[Any, Any]],
    ) -> int:
        """Upstream movePodsToActiveOrBackoffQueue: each candidate with the (old, new)
        objects of the ``changes`` that may concern it; the hints decide per pod. Every
        change is also recorded for the pods in flight. Returns how many pods left the
        pool."""
        if not rq.is_event_of_interest(event, self._plugin_events):
            return 0
        interested = (
            None if event.is_wildcard() else rq.interested_plugins(event, self._plugin_events)
        )
        now = self._clock.now()
        placements: list[Placement] = []
        budget = MAX_HINT_CALLS_PER_EVENT
        for queued, concerning in candidates:
            info = queued.info
            if not rq.gate_admits(info, event, self._plugin_events):
                continue
            rejectors = info.rejector_plugins
            if interested is not None and rejectors and not rejectors & interested:
                continue  # none of its rejectors registered this event: no hint to ask
            budget -= len(concerning)
            strategy = self._strategy(info, event, concerning, judge=budget >= 0)
            if strategy is rq.Strategy.SKIP:
                continue
            placements.append(self._requeue_placement(queued, info, strategy, now))
        tag = self.event_tag()
        if self.in_flight_events.any_in_flight():
            for old, new in changes:
                self.in_flight_events.record(tag, event, old, new)
        if not placements:
            return 0
        sources = [Location.UNSCHEDULABLE] * len(placements)
        results = self._apply(placements, sources, event_label=event.label)
        return sum(1 for r in results if r and r != Location.UNSCHEDULABLE)
