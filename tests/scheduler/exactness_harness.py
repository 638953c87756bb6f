"""Runs one workload under one scheduling mode and records what the exactness tests compare.

Two drivers make event processing deterministic and the same for every mode:

- ``rounds``: watch events are read only when activeQ is drained; between two pods
  every binding finishes and its outcome is handled (SchedulerPopFromBackoffQ pops
  backoffQ pods mid-round, so an outcome must not land at a timing-dependent pod);
- ``each pod``: between any two pods (the loop's housekeeping), every binding finishes
  and every watch event is read, so bindings and preemption victims' deletions move
  queued pods mid-batch (this is where the in-flight events rule is exercised: only
  events of a pod's own cycle or later count for it, never those that arrived while it
  waited in the popped batch).

Time is kept, not erased: the fake clock moves ``ATTEMPT_SECONDS`` as every
scheduling attempt ends (the same attempt sequence in every mode, so the same instants,
whether a pod took its own cycle or a whole-batch run decided it), so
backoff (1 s, doubling) is still running for some pods when an event moves them and has
expired for others: backoffQ vs activeQ is decided as it would be on a live cluster.
When nothing is left to pop the clock steps one second at a time (at most
``IDLE_STEPS``) until backoffQ is empty; a workload that does not drain fails the test.

``Outcome`` holds what must be equal across modes (placements, attempts, every
FailedScheduling and Preempted message in order, nominatedNodeName, who preempted), and
``paths`` which code paths fired, for the tests to assert that the workload meant to
exercise them did.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.queue.types import Location
from cluster_sched.scheduler import coordinator as coordinator_module
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.scheduler.schedule_one import SchedulingCycle
from cluster_sched.store.store import Store

__all__ = [
    "ATTEMPT_SECONDS",
    "DRIVERS",
    "Outcome",
    "Phase",
    "install_driver",
    "modes",
    "run_workload",
]

DRIVERS = ("rounds", "each pod")
#: fake seconds before each scheduling attempt: backoff (1 s, 2 s, ...) spans a few
#: attempts, so events find some pods backing off and others not
ATTEMPT_SECONDS = 0.25
#: idle clock steps of one second before the queue must be drained
IDLE_STEPS = 120
#: loop turns (one batch each) before a run counts as stuck
MAX_TURNS = 20_000

_runs = itertools.count()


@dataclass(slots=True)
class Outcome:
    """What must be equal in every mode, and which code paths the run took."""

    placements: dict[str, str]
    attempts: dict[str, int]
    #: pod -> its FailedScheduling messages, oldest first
    failed: dict[str, list[str]]
    #: victim -> its Preempted messages (preemptor named by key)
    preempted: dict[str, list[str]]
    #: pod -> every status.nominatedNodeName it was given, in order ("" when cleared),
    #: read from the watch stream (only pods that had one)
    nominated: dict[str, list[str]]
    preemptors: set[str]
    #: pods left in the unschedulable pool when the queue drained
    unschedulable: int
    paths: dict[str, int] = field(default_factory=dict, compare=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outcome):
            return NotImplemented
        return self.compared() == other.compared()

    __hash__ = None  # type: ignore[assignment]

    def compared(self) -> tuple[object, ...]:
        return (
            self.placements,
            self.attempts,
            self.failed,
            self.preempted,
            self.nominated,
            self.preemptors,
            self.unschedulable,
        )

    def difference(self, other: Outcome) -> str:
        """The first field that differs and a few of its differing keys (for asserts)."""
        names = ("placements", "attempts", "failed", "preempted", "nominated", "preemptors")
        for name, a, b in zip(names, self.compared(), other.compared(), strict=False):
            if a != b:
                if isinstance(a, dict) and isinstance(b, dict):
                    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                    return f"{name}: " + "; ".join(
                        f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys[:3]
                    )
                return f"{name}: {a!r} vs {b!r}"
        return f"unschedulable: {self.unschedulable} vs {other.unschedulable}"


def modes(
    batches: Sequence[int] = (1, 5, 7, 64),
    executors: Sequence[tuple[str, int]] = (("local", 1), ("shards", 2), ("shards", 3)),
    redis_url: str | None = None,
) -> list[tuple[ExecutorOptions, int]]:
    """The cross product batch x compiled on/off x executor, less the serial reference
    (batch 1, numpy, in-process)."""
    out = []
    for (executor, shards), compiled, batch in itertools.product(executors, (False, True), batches):
        if (executor, compiled, batch) == ("local", False, 1):
            continue
        out.append(
            (
                ExecutorOptions(executor, shards=shards, compiled=compiled, redis_url=redis_url),
                batch,
            )
        )
    return out


def _settle_preemption(coord: Coordinator) -> None:
    """Async preemption's victim deletions finish before the watch is read, as
    bindings do: what the coordinator reads then never depends on thread timing."""
    for fwk in coord.frameworks.values():
        wait = getattr(fwk.handle.preemption_executor, "wait_idle", None)
        if wait is not None:
            assert wait(30.0), "preemptions did not finish"


def _settle_everything(coord: Coordinator) -> None:
    """Housekeeping of the ``each pod`` driver: every binding done, every event read."""
    assert coord.binder.wait_idle(30.0), "bindings did not finish"
    _settle_preemption(coord)
    coord.process_binding_outcomes()
    while coord.poll_informer():
        pass
    coord.flush_done()


def _settle_bindings(coord: Coordinator) -> None:
    """Housekeeping of the ``rounds`` driver: every binding done, watch events unread."""
    assert coord.binder.wait_idle(30.0), "bindings did not finish"
    coord.process_binding_outcomes()
    coord.flush_done()


def install_driver(monkeypatch: pytest.MonkeyPatch, driver: str) -> None:
    """Make the coordinator's loop deterministic under ``driver`` (module docstring):
    no timed watch reads, preemptions settled before any read, the driver's
    housekeeping, and the clock stepped as each attempt ends."""
    assert driver in DRIVERS, driver
    monkeypatch.setattr(coordinator_module, "INFORMER_POLL_INTERVAL", math.inf)
    poll = Coordinator.poll_informer
    attempt_done = SchedulingCycle._attempt_done

    def settled_poll(coord: Coordinator, block_ms: int | None = None) -> int:
        _settle_preemption(coord)
        return poll(coord, block_ms)

    def timed_attempt_done(sc: SchedulingCycle, *args: Any, **kwargs: Any) -> None:
        attempt_done(sc, *args, **kwargs)
        clock = sc.clock
        assert isinstance(clock, FakeClock)
        clock.step(ATTEMPT_SECONDS)

    monkeypatch.setattr(Coordinator, "poll_informer", settled_poll)
    monkeypatch.setattr(SchedulingCycle, "_attempt_done", timed_attempt_done)
    housekeeping = _settle_everything if driver == "each pod" else _settle_bindings
    monkeypatch.setattr(Coordinator, "housekeeping", housekeeping)


def _drain(coord: Coordinator, clock: FakeClock) -> None:
    """Schedule until nothing is active, backing off or in flight (idle time passes a
    second at a time); fails if the queue does not drain."""
    idle = 0
    for _ in range(MAX_TURNS):
        while coord.step(pop_timeout=0):
            pass
        _settle_everything(coord)
        counts = coord.queue.counts()
        if counts[Location.ACTIVE] or counts[Location.IN_FLIGHT]:
            continue
        if counts[Location.BACKOFF] == 0:
            return
        idle += 1
        assert idle <= IDLE_STEPS, f"backoffQ never drained: {counts}"
        clock.step(1.0)
        coord.queue.flush_backoff_q_completed()
    raise AssertionError(f"the queue did not drain: {coord.queue.counts()}")


def _paths(coord: Coordinator) -> dict[str, int]:
    algorithm = coord.algorithm
    paths = {
        "rotated_windows": algorithm.rotated_windows,
        "preemptions": len(coord.stats.preemptors),
        "victims": len(coord.stats.preempted),
        "requeued_pods": sum(1 for n in coord.stats.attempts.values() if n > 1),
        # pods placed on an OpportunisticBatching hint
        "batched_pods": sum(b.batched_pods for b in algorithm.batches.values()),
    }
    if algorithm.fast is not None:
        paths.update(algorithm.fast.counters())
    speculation = getattr(coord.source, "speculation_counters", None)
    if speculation is not None:
        paths.update(speculation())
    return paths


Phase = tuple[Sequence[dict[str, Any]], Sequence[str]]


def run_workload(
    client: redis.Redis,
    phases: Sequence[Phase],
    options: ExecutorOptions,
    batch: int,
    config: SchedulerConfiguration | None = None,
) -> Outcome:
    """Each phase (manifests to apply, pod keys to delete) once the previous one
    drained; the outcome."""
    prefix = f"{{x{next(_runs)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(list(phases[0][0]))
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        config or load_config(None),
        options=options,
        clock=clock,
        seed=5,
        prefix=prefix,
        batch_size=batch,
    )
    try:
        coord.start()
        _drain(coord, clock)
        for docs, gone in phases[1:]:
            if docs:
                store.apply_many(list(docs))
            if gone:
                store.delete_many([("Pod", key) for key in gone])
            _drain(coord, clock)
        return _outcome(coord, store)
    finally:
        coord.close()


def _nominations(store: Store, key_of: dict[str, str]) -> dict[str, list[str]]:
    """Each pod's nominatedNodeName changes over the run, from the watch stream (a pod
    bound or deleted keeps its last value there); fills ``key_of`` (uid -> key)."""
    last: dict[str, str] = {}
    history: dict[str, list[str]] = {}
    after = "0-0"
    while events := store.read_events(after, count=10_000):
        for event in events:
            if event.kind != "Pod" or not event.obj:
                continue
            uid = event.obj.get("metadata", {}).get("uid")
            if uid:
                key_of[uid] = event.key
            nnn = (event.obj.get("status") or {}).get("nominatedNodeName", "")
            if nnn != last.get(event.key, ""):
                history.setdefault(event.key, []).append(nnn)
                last[event.key] = nnn
        after = events[-1].id
    return history


def _outcome(coord: Coordinator, store: Store) -> Outcome:
    key_of: dict[str, str] = {}
    placements: dict[str, str] = {}
    for d in store.list("Pod"):
        meta = d["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        placements[key] = d["spec"].get("nodeName", "")
    nominated = _nominations(store, key_of)
    failed: dict[str, list[str]] = {}
    for e in store.events(reason="FailedScheduling"):
        failed.setdefault(e["key"], []).append(e["message"])
    preempted: dict[str, list[str]] = {}
    for e in store.events(reason="Preempted"):
        message = e["message"]
        for uid, key in key_of.items():
            message = message.replace(f"pod {uid} ", f"pod {key} ")
        preempted.setdefault(e["key"], []).append(message)
    return Outcome(
        placements,
        dict(coord.stats.attempts),
        failed,
        preempted,
        nominated,
        set(coord.stats.preemptors),
        coord.queue.counts()[Location.UNSCHEDULABLE],
        _paths(coord),
    )
