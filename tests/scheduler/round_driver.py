"""Shared by the whole-batch tests: a coordinator driven in rounds (every batch popped,
bindings and watch events settled, then the clock steps past backoff), and the decisions
two modes must agree on."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Any

import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config
from cluster_sched.features import OPPORTUNISTIC_BATCHING, FeatureGates
from cluster_sched.queue.types import Location
from cluster_sched.scheduler import whole_batch
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store

__all__ = [
    "LIST_DEFAULTING",
    "PROFILE",
    "Outcome",
    "decisions",
    "drive_rounds",
    "failed_scheduling_counts",
    "round_coordinator",
    "run_outcome",
]

_prefixes = itertools.count()

PROFILE = "default-scheduler"
#: the default profile without default spreading constraints: pods are signable
#: (upstream signs none under System defaulting), so OpportunisticBatching hints nodes
LIST_DEFAULTING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": PROFILE,
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }
    ],
}


def drive_rounds(
    coord: Coordinator, clock: FakeClock, rounds: int = 4, *, start: bool = True
) -> None:
    """Start ``coord`` (unless ``start`` is False: it runs already) and schedule until
    activeQ stays empty (at most ``rounds``)."""
    if start:
        coord.start()
    for _ in range(rounds):
        while coord.step(pop_timeout=0):
            pass
        assert coord.binder.wait_idle(30.0)
        coord.process_binding_outcomes()
        while coord.poll_informer():
            pass
        coord.flush_done()
        clock.step(30.0)
        coord.queue.flush_backoff_q_completed()
        if coord.queue.counts()[Location.ACTIVE] == 0:
            return


def failed_scheduling_counts(store: Store) -> Counter[str]:
    """FailedScheduling Events per pod key (0 for a pod without any), read in one pass
    over the Event stream: asking ``store.events(key=...)`` per pod reads the whole
    stream once per pod (1,620 pods x thousands of Events took most of the 74 s of
    ``test_spread_runs_happen_and_match``)."""
    return Counter(e["key"] for e in store.events(reason="FailedScheduling"))


def decisions(coord: Coordinator, store: Store) -> dict[str, Any]:
    """Placements, FailedScheduling events and attempts per pod, and the default
    profile's OpportunisticBatching counters (attempts by result, flushes by reason,
    pods placed on a hint) when it kept any."""
    placements = {d["metadata"]["name"]: d["spec"].get("nodeName", "") for d in store.list("Pod")}
    failed = failed_scheduling_counts(store)
    failures = {f"failed:{k}": failed[f"default/{k}"] for k in placements}
    attempts = {f"attempts:{k}": v for k, v in coord.stats.attempts.items()}
    bt = coord.algorithm.batches.get(PROFILE)
    batching: dict[str, Any] = {}
    if bt is not None:
        batching = {
            "batch_attempts": dict(bt.attempts),
            "flushes": dict(bt.flushes),
            "batched_pods": bt.batched_pods,
        }
    return {**placements, **failures, **attempts, **batching}


@dataclass(frozen=True)
class Outcome:
    #: ``decisions``, FailedScheduling counted in every namespace
    decisions: dict[str, Any]
    #: whole-batch runs (calls of ``schedule_run`` that handled pods) and their pods
    runs: int
    handled: int
    #: calls of the counted plugin's PreFilter
    pre_filters: int


def round_coordinator(
    client: redis.Redis,
    docs: list[dict[str, Any]],
    seed: int,
    on: bool,
    batch: int,
    *,
    gate: bool = False,
    config: Any = None,
) -> tuple[Coordinator, Store, FakeClock]:
    """A local coordinator over ``docs`` (applied under a fresh prefix) with whole
    batches ``on`` or off, on a fake clock that ``drive_rounds`` steps."""
    prefix = f"{{rd{next(_prefixes)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(docs)
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store,
        client,
        config if config is not None else load_config(None),
        options=ExecutorOptions("local"),
        clock=clock,
        seed=seed,
        prefix=prefix,
        batch_size=batch,
        features=FeatureGates({OPPORTUNISTIC_BATCHING: gate}),
    )
    coord.whole_batch = on
    return coord, store, clock


def run_outcome(
    client: redis.Redis,
    docs: list[dict[str, Any]],
    seed: int,
    on: bool,
    batch: int,
    *,
    gate: bool = False,
    config: Any = None,
    counted: str | None = None,
    then: tuple[list[str], list[dict[str, Any]]] | None = None,
) -> Outcome:
    """``docs`` scheduled by a coordinator with whole batches ``on`` or off (the
    default profile's plugin ``counted``: its PreFilter calls counted); ``then``: pods
    (keys) deleted and documents applied once ``docs`` are settled, and those
    scheduled too."""
    coord, store, clock = round_coordinator(client, docs, seed, on, batch, gate=gate, config=config)
    runs = handled_pods = pre_filters = 0
    real = whole_batch.schedule_run

    def counting(sc: Any, b: Any) -> int:
        nonlocal runs, handled_pods
        handled = real(sc, b)
        runs += handled > 0
        handled_pods += handled
        return handled

    if counted is not None:
        plugin = next(pl for pl in coord.frameworks[PROFILE].pre_filter if pl.name == counted)
        pre_filter = plugin.pre_filter

        def counting_pre_filter(*args: Any) -> Any:
            nonlocal pre_filters
            pre_filters += 1
            return pre_filter(*args)

        plugin.pre_filter = counting_pre_filter
    whole_batch.schedule_run = counting  # type: ignore[assignment]
    try:
        drive_rounds(coord, clock)
        if then is not None:
            store.delete_many([("Pod", key) for key in then[0]])
            store.apply_many(then[1])
            drive_rounds(coord, clock, start=False)
        out = decisions(coord, store)
        failed = failed_scheduling_counts(store)
        for d in store.list("Pod"):
            meta = d["metadata"]
            if meta.get("namespace", "default") != "default":
                key = f"{meta['namespace']}/{meta['name']}"
                out[f"failed:{key}"] = failed[key]
        return Outcome(out, runs, handled_pods, pre_filters)
    finally:
        whole_batch.schedule_run = real  # type: ignore[assignment]
        coord.close()
