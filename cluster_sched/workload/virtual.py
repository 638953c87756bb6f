"""``--clock virtual``: the real scheduler driven over simulated time.

The whole scheduler (queue backoff and flushes, Permit timeouts, assumed-pod expiry, the
stats the report reads) reads one :class:`~cluster_sched.clock.VirtualClock`. The driver
runs the loop until nothing is runnable at the current instant, then moves the clock
straight to the next event:

- the next pod arrival (a group's arrival process, or a trace's ``arrival``),
- the next pod completion (bound time + lifetime): the pod is deleted through the
  store, so the watch frees its resources and moves unschedulable pods exactly as a
  kubelet-reported completion would,
- the next backoffQ flush that moves a pod (flushes tick every
  ``DEFAULT_BACKOFF_FLUSH_INTERVAL`` seconds from the run's start, as the real
  flusher's timer; the background thread is not started),
- the next unschedulable-leftover flush that moves a pod (a tick every
  ``DEFAULT_LEFTOVER_FLUSH_INTERVAL`` seconds),
- the next Permit deadline and the next assumed-pod expiry.

Scheduling itself takes no simulated time. What makes two runs with one seed identical:
every draw comes from the seed, the loop reads the watch only between batches
(``Coordinator.informer_poll_interval`` = inf) after every binding of the batch has
landed, and nothing reads the wall clock to decide anything.

Pod groups run in phases: a group starts with the previous one when that one says
``wait: false``, else once the previous phase's pods have all arrived and the queue has
settled (as the real runner's groups).
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.clock import VirtualClock
from cluster_sched.queue.base import DEFAULT_BACKOFF_FLUSH_INTERVAL, DEFAULT_LEFTOVER_FLUSH_INTERVAL
from cluster_sched.queue.types import DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS, Location
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.store import Store
from cluster_sched.workload.feeder import APPLY_BATCH
from cluster_sched.workload.spec import PodGroup, Workload

__all__ = ["VirtualRun", "VirtualStats", "group_phases", "virtual_figures"]

log = logging.getLogger(__name__)

#: Events the informer reads per poll (Informer.poll's default): fewer means drained.
INFORMER_BATCH = 2000
#: Wall seconds the driver waits for the binder to hand back a batch's outcomes.
BINDER_WAIT = 30.0


@dataclass(slots=True)
class VirtualStats:
    """What the driver counted: simulated span, events, wall time."""

    start: float = 0.0
    end: float = 0.0
    arrivals: int = 0
    completions: int = 0
    clock_jumps: int = 0
    wall_seconds: float = 0.0
    #: pods bound when the run stopped (their lifetime not over, or without one)
    running_at_end: int = 0
    by_event: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "simulated_seconds": round(self.end - self.start, 6),
            "arrivals": self.arrivals,
            "completions": self.completions,
            "clock_jumps": self.clock_jumps,
            "wall_seconds": round(self.wall_seconds, 3),
            "running_at_end": self.running_at_end,
            "jumps_by_event": dict(sorted(self.by_event.items())),
        }


def group_phases(groups: Sequence[PodGroup]) -> list[list[int]]:
    """Indices of the groups that start together: a new phase after every group that
    waits (``wait: true``, the default)."""
    phases: list[list[int]] = []
    for i in range(len(groups)):
        if not phases or groups[i - 1].wait:
            phases.append([])
        phases[-1].append(i)
    return phases


def _grid_tick(start: float, interval: float, at_least: float, *, strictly: bool) -> float:
    """The first flush tick (start + k * interval) at or after ``at_least`` (after it
    when ``strictly``)."""
    k = math.ceil((at_least - start) / interval)
    tick = start + max(k, 0) * interval
    if strictly and tick <= at_least:
        tick += interval
    return tick


class VirtualRun:
    """Drives ``coord`` over ``workload`` on ``clock``; ``run()`` returns when every pod
    has arrived, the queue has settled and no bound pod will complete any more (or at
    ``horizon`` simulated seconds)."""

    def __init__(
        self,
        coord: Coordinator,
        store: Store,
        clock: VirtualClock,
        workload: Workload,
        *,
        seed: int | None,
        horizon: float | None = None,
        on_bound: Callable[[int], None] | None = None,
    ) -> None:
        self.coord = coord
        self.store = store
        self.clock = clock
        self.workload = workload
        self.seed = 0 if seed is None else seed
        self.horizon = horizon
        self.on_bound = on_bound
        self.stats = VirtualStats(start=clock.now())
        self._t0 = clock.now()
        self._lifetimes: dict[str, float] = {}
        self._completions: list[tuple[float, int, str]] = []
        self._seq = 0
        self._log_seen = 0
        self._ever_bound: set[str] = set()
        coord.informer_poll_interval = math.inf
        self._completing: dict[str, float] = {}
        #: pods deleted because their lifetime ended
        self.completed: set[str] = set()
        self._inner_on_pod = coord.informer.handlers.on_pod
        coord.informer.handlers.on_pod = self._on_pod

    # ------------------------------------------------------------------ arrivals

    def _phase_arrivals(self, phase: list[int], start: float) -> list[tuple[float, int, int]]:
        """(time, group, index) of every pod of the phase, in time order (ties: group
        order, then pod order)."""
        out: list[tuple[float, int, int]] = []
        for gi in phase:
            group = self.workload.pod_groups[gi]
            rng = np.random.default_rng([self.seed, gi])
            arrivals, lifetimes = group.timeline(rng)
            for key, life in zip(group.pod_keys(), lifetimes.tolist(), strict=True):
                self._lifetimes[key] = life
            out.extend((start + float(t), gi, i) for i, t in enumerate(arrivals.tolist()))
        out.sort()
        return out

    # ------------------------------------------------------------------ the loop

    def run(self) -> VirtualStats:
        wall = time.monotonic()
        w = self.workload
        self.store.apply_many(w.objects)
        for start in range(0, len(w.node_docs), APPLY_BATCH):
            self.store.apply_many(w.node_docs[start : start + APPLY_BATCH])
        self.coord.start()
        phases = group_phases(self.workload.pod_groups)
        for n, phase in enumerate(phases):
            if not self._run_phase(phase, last=n == len(phases) - 1):
                break  # the horizon
        self.stats.end = self.clock.now()
        self.stats.running_at_end = len(self.coord.stats.bound_node)
        self.stats.wall_seconds = time.monotonic() - wall
        return self.stats

    def _run_phase(self, phase: list[int], *, last: bool) -> bool:
        """Run one phase; False if the horizon stopped it. A phase that is not the last
        ends once its pods have all arrived and the queue settled (bound pods keep
        running into the next phase)."""
        manifests = {gi: self.workload.pod_groups[gi].manifests() for gi in phase}
        arrivals = self._phase_arrivals(phase, self.clock.now())
        next_arrival = 0
        while True:
            now = self.clock.now()
            # 1. pods due now arrive (a group's pods arrive in manifest order), and
            #    pods whose lifetime ended leave
            due: list[dict[str, Any]] = []
            while next_arrival < len(arrivals) and arrivals[next_arrival][0] <= now:
                due.append(next(manifests[arrivals[next_arrival][1]]))
                next_arrival += 1
            for start in range(0, len(due), APPLY_BATCH):
                self.store.apply_many(due[start : start + APPLY_BATCH])
            self.stats.arrivals += len(due)
            self._complete_due(
                now, arrivals[next_arrival][0] if next_arrival < len(arrivals) else None
            )
            now = self.clock.now()  # a batch of completions moved it (see _complete_due)
            # 2. timers due now, 3. schedule until nothing is runnable at this instant
            self._fire_timers(now)
            self._run_instant()
            if self.horizon is not None and now - self._t0 >= self.horizon:
                return False
            more = next_arrival < len(arrivals)
            if not more and not last and (self._pending() == 0 or self._settled()):
                return True
            # 4. jump to the next event
            nxt, label = self._next_event(arrivals[next_arrival][0] if more else None)
            if nxt is None:
                return True
            if self.horizon is not None:
                nxt = min(nxt, self._t0 + self.horizon)
            self.clock.advance_to(nxt)
            self.stats.clock_jumps += 1
            self.stats.by_event[label] = self.stats.by_event.get(label, 0) + 1

    def _settled(self) -> bool:
        counts = self.coord.queue.counts()
        return (
            counts[Location.ACTIVE] == 0
            and counts[Location.BACKOFF] == 0
            and counts[Location.IN_FLIGHT] == 0
            and self.coord.binder.pending() == 0
        )

    def _complete_due(self, now: float, next_arrival: float | None) -> None:
        """Delete the pods whose lifetime ended by ``now``.

        With no pod pending, nothing can be scheduled before the next arrival, so every
        completion due before it is replayed in one round: the deletes go out together
        and each deletion event is dispatched at its own time (``_on_pod`` moves the
        clock), which leaves the cache, the queue and the stats exactly as one instant
        per completion would, for a round trip per completion instead of four.
        """
        keys: list[str] = []
        while self._completions and self._completions[0][0] <= now:
            keys.append(heapq.heappop(self._completions)[2])
        batched = False
        if keys and self._pending() == 0:
            limit = math.inf if next_arrival is None else next_arrival
            if self.horizon is not None:
                limit = min(limit, self._t0 + self.horizon)
            times = {now}
            while self._completions and self._completions[0][0] < limit:
                when, _, key = heapq.heappop(self._completions)
                self._completing[key] = when
                keys.append(key)
                times.add(when)
            extra = len(times) - 1
            self.stats.clock_jumps += extra
            self.stats.by_event["completion"] = self.stats.by_event.get("completion", 0) + extra
            batched = extra > 0
        if keys:
            deleted = self.store.delete_many([("Pod", k) for k in keys])
            self.stats.completions += sum(deleted)
            self.completed.update(k for k, gone in zip(keys, deleted, strict=True) if gone)
        if batched:
            self._drain()
            self._completing.clear()

    def _on_pod(self, old: Pod | None, new: Pod | None) -> None:
        """The informer's pod handler, behind a hook: a batched completion's deletion is
        dispatched at the completion's time."""
        if new is None and old is not None:
            when = self._completing.pop(old.key, None)
            if when is not None:
                self.clock.advance_to(when)
        self._inner_on_pod(old, new)

    def _fire_timers(self, now: float) -> None:
        """What the queue's flusher thread and the loop's timers would do at ``now``:
        flushes only on their ticks, as the real timers."""
        coord = self.coord
        # With no pod pending, backoffQ and the pool are empty: no flush to send.
        if self._pending() and self._on_tick(now, DEFAULT_BACKOFF_FLUSH_INTERVAL):
            coord.queue.flush_backoff_q_completed()
        if self._pending() and self._on_tick(now, DEFAULT_LEFTOVER_FLUSH_INTERVAL):
            coord.queue.flush_unschedulable_pods_leftover()
        for fwk in coord.frameworks.values():
            fwk.handle.waiting_pods.expire(now)
        for pod in coord.cache.cleanup_assumed_pods():
            log.warning("assumed pod %s expired: its binding never arrived", pod.key)

    def _on_tick(self, now: float, interval: float) -> bool:
        k = (now - self._t0) / interval
        return abs(k - round(k)) < 1e-9

    def _drain(self) -> None:
        """Every binding handed out has its outcome processed (Permit-waiting pods
        excepted: they wait for simulated time) and every watch event is dispatched."""
        coord = self.coord
        deadline = time.monotonic() + BINDER_WAIT
        while True:
            coord.process_binding_outcomes()
            waiting = sum(
                1
                for f in coord.frameworks.values()
                for wp in f.handle.waiting_pods.iterate()
                if wp.next_deadline() is not None  # undecided: waits for simulated time
            )
            if coord.binder.pending() <= waiting:
                break
            if time.monotonic() > deadline:
                raise TimeoutError("bindings did not finish within the virtual-time wait")
            time.sleep(0.0002)
        coord.flush_done()
        while coord.poll_informer() >= INFORMER_BATCH:
            pass
        self._track_bindings()

    def _track_bindings(self) -> None:
        """Start the lifetime of every pod seen bound since the last look."""
        log = self.coord.stats.placement_log
        for now, key, node, _cpu, _mem in log[self._log_seen :]:
            if not node:
                continue
            self._ever_bound.add(key)
            life = self._lifetimes.get(key, math.inf)
            if math.isfinite(life):
                self._seq += 1
                heapq.heappush(self._completions, (now + life, self._seq, key))
        self._log_seen = len(log)
        if self.on_bound is not None:
            self.on_bound(len(self.coord.stats.bound_node))

    def _pending(self) -> int:
        """Pods that arrived and were never seen bound: somewhere in the queue (or
        parked in Permit). Only completions delete pods, and only bound ones, so this
        count is exact without asking Redis."""
        return self.stats.arrivals - len(self._ever_bound)

    def _run_instant(self) -> None:
        """Batches until a pop finds activeQ empty after every event was dispatched
        (bindings are inline, so nothing can arrive behind the driver's back). With no
        pod pending there is nothing to pop, and no round trip is spent finding out."""
        self._drain()
        while self._pending() > 0:
            if not self.coord.step(pop_timeout=0.0):
                return
            self._drain()

    # ------------------------------------------------------------------ next event

    def _next_event(self, next_arrival: float | None) -> tuple[float | None, str]:
        now = self.clock.now()
        client = self.coord.store.client
        keys = self.coord.queue.keys
        candidates: list[tuple[float, str]] = []
        if next_arrival is not None:
            candidates.append((next_arrival, "arrival"))
        if self._completions:
            candidates.append((self._completions[0][0], "completion"))
        head: list[tuple[bytes, float]] = []
        pool: list[tuple[bytes, float]] = []
        if self._pending():  # else backoffQ and the pool are empty: no round trip
            pipe = client.pipeline(transaction=False)
            pipe.zrange(keys.backoff, 0, 0, withscores=True)
            pipe.zrange(keys.unschedulable, 0, 0, withscores=True)
            head, pool = pipe.execute()
        if head:
            tick = _grid_tick(self._t0, DEFAULT_BACKOFF_FLUSH_INTERVAL, head[0][1], strictly=False)
            candidates.append((max(tick, now), "backoff_flush"))
        # The pool's leftovers matter only while something else can still happen.
        if candidates and pool:
            due = pool[0][1] + DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS
            tick = _grid_tick(
                self._t0, DEFAULT_LEFTOVER_FLUSH_INTERVAL, max(due, now), strictly=True
            )
            candidates.append((tick, "leftover_flush"))
        for fwk in self.coord.frameworks.values():
            deadline = fwk.handle.waiting_pods.next_deadline()
            if deadline is not None:
                candidates.append((max(deadline, now), "permit_timeout"))
        cache = self.coord.cache
        for key in cache.assumed:
            st = cache.pod_states[key]
            if st.binding_finished and st.deadline is not None:
                candidates.append((math.nextafter(st.deadline, math.inf), "assumed_expiry"))
        if not candidates:
            return None, ""
        when, label = min(candidates)
        if when <= now:
            # Due already yet nothing moved (a gated pod, float rounding): a tick later.
            when = _grid_tick(self._t0, DEFAULT_BACKOFF_FLUSH_INTERVAL, now, strictly=True)
        return when, label


def virtual_figures(stats: RunStats, run: VirtualStats) -> dict[str, Any]:
    """The summary keys a virtual run replaces: pods complete, so "scheduled" counts
    every pod the scheduler ever placed (not only those still bound at the end), and
    latency and throughput are in simulated time. ``history_sha256`` digests every
    bind and unbind (simulated time, pod, node): equal digests, equal cluster histories."""
    placed = [k for k in stats.bound_at if k in stats.attempts]
    latency_ms = (
        np.asarray(
            [stats.bound_at[k] - stats.enqueued_at[k] for k in placed if k in stats.enqueued_at],
            dtype=np.float64,
        )
        * 1e3
    )

    def pct(q: float) -> float:
        return round(float(np.percentile(latency_ms, q)), 3) if len(latency_ms) else 0.0

    span = run.end - run.start
    cpu = (
        stats.last_bind_cpu - stats.first_pop_cpu
        if stats.first_pop_cpu is not None and stats.last_bind_cpu is not None
        else 0.0
    )
    history = hashlib.sha256()
    for when, key, node, _cpu, _mem in stats.placement_log:
        history.update(f"{when - run.start:.6f} {key} {node}\n".encode())
    return {
        "clock": "virtual",
        "scheduled": len(placed),
        "throughput": round(len(placed) / span, 3) if span > 0 else float(len(placed)),
        "latency_ms": {"p50": pct(50), "p90": pct(90), "p99": pct(99)},
        "duration_s": round(span, 3),
        # per pod ever placed: most have completed and left the store by the end
        "process_cpu_us_per_pod": round(cpu / len(placed) * 1e6, 1) if placed else 0.0,
        "virtual_time": {**run.as_dict(), "history_sha256": history.hexdigest()},
        "simulation_speed": {
            "wall_seconds": round(run.wall_seconds, 3),
            "pods_per_wall_second": (
                round(len(placed) / run.wall_seconds, 1) if run.wall_seconds > 0 else 0.0
            ),
            "cpu_us_per_pod": round(cpu / len(placed) * 1e6, 1) if placed else 0.0,
        },
    }
