"""The queue's side of a scheduling cycle: hand pods out, take them back.

``pop`` / ``pop_many`` move pods from activeQ into flight, each with its own scheduling
cycle; ``done`` / ``done_many`` forget pods whose cycle placed them (``done_later``:
with the next pop, in the same script run);
``add_unschedulable_if_not_present`` (and its ``_many``) returns pods whose attempt
failed. Every batch call is one script run whose per-pod effect is exactly that of the
single calls in a row, so a caller may batch without changing any pod's outcome: a
batch pays the Redis round trip once instead of once per pod.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from cluster_sched.api.evolve import evolve
from cluster_sched.errors import StoreError
from cluster_sched.framework import events as ev
from cluster_sched.queue import requeueing as rq
from cluster_sched.queue.base import QueueBase, chunks, log, pod_of_member
from cluster_sched.queue.scripts import Placement, unschedulable_replies
from cluster_sched.queue.store_errors import translate_redis_errors
from cluster_sched.queue.types import Location, Popped, QueuedPodInfo
from cluster_sched.store.batch import ScriptBatch

__all__ = ["POP_WAIT_SLICE", "CycleQueue"]

#: Longest single blocking wait inside pop(); close() and other processes' adds wake
#: it sooner, the slice only bounds how long a lost wake-up can delay a pop.
POP_WAIT_SLICE = 1.0


class CycleQueue(QueueBase):
    """Pop, done and add-unschedulable, for one pod or a batch (see the module docstring)."""

    # --- handing pods out ----------------------------------------------------------

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """Take the head of activeQ into flight, waiting up to ``timeout`` seconds
        (None: until a pod arrives or the queue is closed). With SchedulerPopFromBackoffQ,
        an empty activeQ gives the head of backoffQ instead, its backoff unexpired.

        The pod's attempts and the scheduling cycle go up by one (``last_pop_cycle``
        is the pod's cycle); its rejecting plugins are cleared for the new attempt.
        Returns None on timeout or close. The wait is real time (a blocking Redis
        call), not the injected clock.
        """
        batch = self.pop_many(1, timeout)
        return batch[0].info if batch else None

    def pop_many(self, max_pods: int, timeout: float | None = None) -> list[Popped]:
        """Take up to ``max_pods`` pods from the head of activeQ into flight, in one
        script run: the pods, cycles and Redis state of ``max_pods`` single pops in a row.

        When activeQ is empty, waits (as :meth:`pop`) up to ``timeout`` for the first
        pod, then returns what is ready: a batch closes when full or when no more pods
        are ready, so a lone pod never waits for company. ``last_pop_cycle`` becomes the
        last pod's cycle. Returns [] on timeout or close. A pod popped from backoffQ
        (SchedulerPopFromBackoffQ, activeQ empty) comes alone, never with activeQ pods.
        """
        if max_pods < 1:
            raise ValueError(f"max_pods must be at least 1, got {max_pods}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._closed.is_set():
            batch = self._pop_ready(max_pods)
            if batch:
                return batch
            remaining = POP_WAIT_SLICE if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                return []
            self._wait_for_pods(min(remaining, POP_WAIT_SLICE))
        return []

    @translate_redis_errors("pop from the scheduling queue")
    def _pop_ready(self, max_pods: int) -> list[Popped]:
        popped: list[Popped] = []
        while not popped:
            finished, self._finished = self._finished, []
            try:
                replies = self._scripts.pop_many(
                    self._keys,
                    self._clock.now(),
                    max_pods,
                    from_backoff=self._pop_from_backoff_q,
                    finished=finished,
                )
            except BaseException:
                self._finished[:0] = finished  # still owed: sent with the next call
                raise
            if not replies:
                break
            for r in replies:
                if r.from_backoff:
                    self._emit(Location.ACTIVE, ev.POP_FROM_BACKOFF_Q)
                try:
                    info = QueuedPodInfo.unpack(r.info, attempts=r.attempts, clear_rejectors=True)
                except (StoreError, ValueError) as exc:
                    self.quarantine(r.pod_key, r.info, str(exc))  # skipped, never fatal
                    continue
                popped.append(Popped(info, r.cycle))
        if popped:
            self.last_pop_cycle = popped[-1].cycle
            self.in_flight_events.popped((p.info.pod_key, p.cycle) for p in popped)
        return popped

    @translate_redis_errors("peek at activeQ")
    def peek_active(self, max_pods: int) -> list[str]:
        """The keys of the pods a pop of ``max_pods`` would now take from activeQ, in pop
        order; nothing is taken or changed (one ZRANGE). The shards are asked about them
        ahead of their pop (``shards.pipeline``), which checks each answer when it is."""
        if max_pods < 1:
            return []
        members: list[bytes] = self._client.zrange(self._keys.active, 0, max_pods - 1)  # type: ignore[assignment]
        return [k for k in map(pod_of_member, members) if k]

    @translate_redis_errors("give back popped pods")
    def unpop_overtaken(self, rest: Sequence[Popped]) -> int:
        """``rest`` are the popped batch's pods not yet scheduled; those that a pod which
        entered activeQ since the pop now sorts before go back to activeQ as if never
        popped (attempts and the scheduling cycle taken back, unpop.lua): a serial loop
        would pop that pod first. Returns how many of ``rest`` stay popped, from the
        front (``len(rest)``: nothing changed). Worth asking only when something
        entered activeQ (``active_writes``)."""
        if not rest:
            return 0
        keys = [p.info.pod_key for p in rest]
        kept = self._scripts.unpop(self._keys, rest[-1].cycle, keys)
        if kept < len(rest):
            self.last_pop_cycle = rest[kept].cycle - 1
            self.in_flight_events.finished(keys[kept:])
        return kept

    @translate_redis_errors("wait for pods")
    def _wait_for_pods(self, seconds: float) -> None:
        with self._waiters_lock:
            # Checked under the lock close() reads the waiter count with: either close
            # sees this waiter and pushes it a token, or this waiter sees close.
            if self._closed.is_set():
                return
            self._waiters += 1
        try:
            # BLPOP 0 would block forever; Redis >= 6 takes fractional seconds.
            self._client.blpop([self._keys.wake, self._closing_key], timeout=max(seconds, 0.01))
        finally:
            with self._waiters_lock:
                self._waiters -= 1

    @translate_redis_errors("read the scheduling cycle")
    def scheduling_cycle(self) -> int:
        """Pops so far, across every process sharing the queue."""
        return int(self._client.get(self._keys.cycle) or 0)

    # --- taking pods back ----------------------------------------------------------

    @translate_redis_errors("finish a scheduling cycle")
    def done(self, pod_key: str) -> bool:
        """The pod's scheduling cycle ended and it is not coming back to the queue
        (assumed/bound): forget it. False if it was not in flight.

        Its in-flight events are kept until its binding cycle ends (``binding_done``, a
        failure, or a delete), as upstream calls Done only then: a binding that fails
        is judged with the events of its whole cycle."""
        return self._scripts.done(self._keys, pod_key)

    def done_later(self, pod_key: str) -> None:
        """:meth:`done`, sent with the next pop (same script run, before it pops) or
        :meth:`flush_done`: no round trip of its own. Only the pod's in-flight record
        waits, by at most one batch (the pending-pods gauge counts it until then)."""
        self._finished.append(pod_key)

    def flush_done(self) -> int:
        """Send the :meth:`done_later` calls now (idle loop, shutdown)."""
        finished, self._finished = self._finished, []
        try:
            return self.done_many(finished)
        except BaseException:
            self._finished[:0] = finished
            raise

    @translate_redis_errors("finish scheduling cycles")
    def done_many(self, pod_keys: Sequence[str]) -> int:
        """:meth:`done` for several pods in one round trip; returns how many were in flight."""
        if not pod_keys:
            return 0
        return self._scripts.done_many(self._keys, pod_keys)

    def binding_done(self, pod_key: str) -> None:
        """The pod's binding cycle ended bound (upstream Done at the end of the binding
        cycle): stop keeping events for it."""
        self.in_flight_events.finished([pod_key])

    def binding_done_many(self, pod_keys: list[str]) -> None:
        """``binding_done`` for each of ``pod_keys``, in one in-flight update (the
        events kept end the same: ``InFlightEvents.finished``)."""
        self.in_flight_events.finished(pod_keys)

    def add_unschedulable_if_not_present(
        self, info: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> Location | None:
        """Return a pod whose attempt failed (upstream AddUnschedulableIfNotPresent).

        ``info`` carries the rejecting plugins of this attempt and the attempts from
        pop. The timestamp is refreshed to now. The in-flight rule decides where it goes
        (upstream determineSchedulingHintForInFlightPod): the events received during or
        after ``pod_scheduling_cycle`` are replayed through its rejecting plugins'
        hints; Queue from one sends it to backoffQ (activeQ when backoff is over or the
        plugin was Pending); no plugin rejected it (an error): backoffQ; else the
        unschedulable pool (also when PreEnqueue now gates it). Returns where it went,
        or None if the pod was already waiting in a sub-queue (upstream's error; nothing
        changes).
        """
        return self.add_unschedulable_if_not_present_many([(info, pod_scheduling_cycle)])[0]

    def _in_flight_strategy(self, info: QueuedPodInfo, cycle: int) -> rq.Strategy:
        if not info.rejector_plugins:
            return rq.Strategy.AFTER_BACKOFF
        events = self.in_flight_events.events_for(info.pod_key, cycle)
        if events is None:  # popped elsewhere / events lost: retry rather than strand it
            return rq.Strategy.AFTER_BACKOFF
        best = rq.Strategy.SKIP
        pod = self._lookup(info.pod_key) if events else None
        for e in events:
            best = max(best, rq.strategy_for(info, e.event, self._plugin_events, pod, e.old, e.new))
            if best is rq.Strategy.IMMEDIATELY or (
                best is rq.Strategy.AFTER_BACKOFF and not info.pending_plugins
            ):
                break
        return best

    @translate_redis_errors("requeue unschedulable pods")
    def add_unschedulable_if_not_present_many(
        self, failed: Sequence[tuple[QueuedPodInfo, int]]
    ) -> list[Location | None]:
        """:meth:`add_unschedulable_if_not_present` for ``(info, pod_scheduling_cycle)``
        pairs (a :class:`Popped` is one), a thousand per script run; results in order.

        Each pod is judged by the in-flight rule against its own cycle, exactly as one
        call per pod in this order would judge it.
        """
        placements = self._failed_placements(failed)
        results: list[Location | None] = []
        for chunk in chunks(placements):
            try:
                replies = self._scripts.add_unschedulable(
                    self._keys, chunk, wake_on_backoff=self._pop_from_backoff_q
                )
            finally:
                self._placed(chunk)
            results += self._failed_results(chunk, replies)
        return results

    def add_unschedulable_in(
        self, batch: ScriptBatch, info: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> Callable[[], Location | None]:
        """:meth:`add_unschedulable_if_not_present` as a call of ``batch`` (sent with the
        caller's other writes in one round trip): decided now, applied when the batch is
        executed; the returned function, called after that, gives the result."""
        placements = self._failed_placements([(info, pod_scheduling_cycle)])
        index = self._scripts.add_unschedulable_in(
            batch, self._keys, placements, self._pop_from_backoff_q
        )

        @translate_redis_errors("requeue unschedulable pods")
        def result() -> Location | None:
            try:
                replies = unschedulable_replies(batch.reply(index))
            finally:
                self._placed(placements)
            return self._failed_results(placements, replies)[0]

        return result

    def _failed_placements(self, failed: Sequence[tuple[QueuedPodInfo, int]]) -> list[Placement]:
        """Where each failed pod goes (the in-flight rule); their cycles end here."""
        now = self._clock.now()
        placements: list[Placement] = []
        for pod_info, pod_cycle in failed:
            info = self._admit(evolve(pod_info, timestamp=now))
            strategy = self._in_flight_strategy(info, pod_cycle)
            if info.gated or strategy is rq.Strategy.SKIP:
                dest = Location.UNSCHEDULABLE
            elif strategy is rq.Strategy.AFTER_BACKOFF and self._backing_off(info, now):
                dest = Location.BACKOFF
            else:
                dest = Location.ACTIVE
            placements.append(self._placement(info, dest, now))
        self.in_flight_events.finished(info.pod_key for info, _ in failed)
        return placements

    def _failed_results(
        self, placements: Sequence[Placement], replies: Sequence[tuple[str, str]]
    ) -> list[Location | None]:
        results: list[Location | None] = []
        for placement, (status, where) in zip(placements, replies, strict=True):
            if status == "present":
                log.warning("pod %s is already present in the %s queue", placement.pod_key, where)
                results.append(None)
                continue
            self._emit(where, ev.SCHEDULE_ATTEMPT_FAILURE)
            results.append(Location(where))
        return results
