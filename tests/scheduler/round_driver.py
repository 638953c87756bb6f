"""Shared by the whole-batch tests: a coordinator driven in rounds (every batch popped,
bindings and watch events settled, then the clock steps past backoff), and the decisions
two modes must agree on."""

from __future__ import annotations

from typing import Any

from cluster_sched.clock import FakeClock
from cluster_sched.queue.types import Location
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store

__all__ = ["LIST_DEFAULTING", "PROFILE", "decisions", "drive_rounds"]

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


def decisions(coord: Coordinator, store: Store) -> dict[str, Any]:
    """Placements, FailedScheduling events and attempts per pod, and the default
    profile's OpportunisticBatching counters (attempts by result, flushes by reason,
    pods placed on a hint) when it kept any."""
    placements = {d["metadata"]["name"]: d["spec"].get("nodeName", "") for d in store.list("Pod")}
    failures = {
        f"failed:{k}": len(store.events(key=f"default/{k}", reason="FailedScheduling"))
        for k in placements
    }
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
