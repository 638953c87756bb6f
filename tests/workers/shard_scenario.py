"""A scheduling sequence shared by the shard tests (in-process wire clients and Ray).

``run_sequence`` schedules ``incoming_pods`` one by one against a sharded source,
assuming each placed pod so that deltas flow between cycles; ``local_sequence`` does the
same on a single table. Every cross-shard input is exercised: ImageLocality's image
spread, anti-affinity, zone spread, preferred affinity, node selectors, host ports and a
pod that fits nowhere.

``WireClient`` is a ShardClient speaking the Ray wire format to an in-process ShardActor
(the exact object Ray wraps), so everything but the transport runs without Ray.
"""

from __future__ import annotations

import os
import random
import signal
from dataclasses import replace
from typing import Any

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FitError
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.state_codec import decode_value, encode_value
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.attempt import AttemptResult
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.scheduler.shards.source import ShardedSource, ShardLostError, ShardRouter
from cluster_sched.testing.builders import make_node, make_pod
from workers.ray_shard import ShardActor
from workers.shard_wire import (
    decode_filter_outcome,
    decode_filter_score,
    decode_scores,
    encode_batch_request,
    encode_request,
    wire_deltas,
)

IMAGE = "registry.example/app:1"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class WireClient:
    """A ShardClient speaking the Ray wire format to an in-process ShardActor."""

    def __init__(self, shard: int) -> None:
        self.shard = shard
        self.actor = ShardActor(shard, b"", 0, "")
        self.snapshot: Any = None
        self.rebuilt = 0

    def attach_snapshot(self, snapshot: Any) -> None:
        self.snapshot = snapshot

    def _payload(
        self, deltas: list[Any], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> bytes:
        return encode_request(deltas, profile, pod, state, rows, self.snapshot, trace={})

    def submit_filter(
        self, deltas: list[Any], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Any:
        return _Done(
            decode_filter_outcome(
                self.actor.filter(self._payload(deltas, profile, pod, state, rows))
            )
        )

    def submit_score(
        self, deltas: list[Any], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Any:
        return _Done(
            decode_scores(self.actor.score(self._payload(deltas, profile, pod, state, rows)))
        )

    def submit_filter_score(
        self, deltas: list[Any], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Any:
        return _Done(
            decode_filter_score(
                self.actor.filter_score(self._payload(deltas, profile, pod, state, rows))
            )
        )

    def submit_filter_score_many(
        self, deltas: list[Any], asks: list[tuple[str, Pod, CycleState, np.ndarray]]
    ) -> Any:
        payload = encode_batch_request(encode_value(wire_deltas(deltas)), asks, self.snapshot)
        return _Done(
            [decode_filter_score(b) for b in decode_value(self.actor.filter_score_many(payload))]
        )

    def submit_apply(self, deltas: list[Any]) -> Any:
        return _Done(self.actor.apply(encode_value(wire_deltas(deltas))))

    def rebuild(self, deltas: list[Any]) -> None:
        self.rebuilt += 1
        self.actor = ShardActor(self.shard, b"", 0, "")
        self.actor.apply(encode_value(wire_deltas(deltas)))


class FlakyClient(WireClient):
    """Loses its shard (as a killed actor would) on chosen calls, or cannot be rebuilt."""

    def __init__(self, shard: int, fail_calls: set[int], rebuild_fails: int = 0) -> None:
        super().__init__(shard)
        self.calls = 0
        self.fail_calls = fail_calls
        self.rebuild_fails = rebuild_fails

    def _maybe_lose(self) -> None:
        self.calls += 1
        if self.calls in self.fail_calls:
            self.actor = ShardActor(self.shard, b"", 0, "")  # the state is gone
            raise ShardLostError(self.shard, "actor died")

    def submit_filter(self, *args: Any) -> Any:
        self._maybe_lose()
        return super().submit_filter(*args)

    def submit_score(self, *args: Any) -> Any:
        self._maybe_lose()
        return super().submit_score(*args)

    def submit_filter_score(self, *args: Any) -> Any:
        self._maybe_lose()
        return super().submit_filter_score(*args)

    def submit_filter_score_many(self, *args: Any) -> Any:
        self._maybe_lose()
        return super().submit_filter_score_many(*args)

    def rebuild(self, deltas: list[Any]) -> None:
        if self.rebuild_fails:
            self.rebuild_fails -= 1
            raise ShardLostError(self.shard, "no room for a new actor")
        super().rebuild(deltas)


class KillBeforeCall:
    """A real shard client whose actor's worker process is SIGKILLed just before the
    client's ``kill_at``-th Filter call (plain, with speculative scores, or a prefetched
    batch's): the kill lands
    at a chosen scheduling cycle, so the run is certainly mid-way and the dead actor
    certainly gets that call."""

    def __init__(self, client: Any, kill_at: int) -> None:
        self.client = client
        self.kill_at = kill_at
        self.filter_calls = 0
        self.killed_pid: int | None = None
        self.rebuilds = 0

    @property
    def killed(self) -> bool:
        return self.killed_pid is not None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def _count_filter_call(self) -> None:
        self.filter_calls += 1
        if self.filter_calls == self.kill_at:
            self.killed_pid = self.client.pid()
            os.kill(self.killed_pid, signal.SIGKILL)

    def submit_filter(self, *args: Any) -> Any:
        self._count_filter_call()
        return self.client.submit_filter(*args)

    def submit_filter_score(self, *args: Any) -> Any:
        self._count_filter_call()
        return self.client.submit_filter_score(*args)

    def submit_filter_score_many(self, *args: Any) -> Any:
        """A prefetched batch's questions (``shard_prefetch``): a Filter call too."""
        self._count_filter_call()
        return self.client.submit_filter_score_many(*args)

    def rebuild(self, deltas: Any) -> None:
        self.rebuilds += 1
        self.client.rebuild(deltas)


# ---------------------------------------------------------------------------- cluster


def nodes() -> list[Node]:
    out = []
    for i in range(24):
        b = make_node(f"n{i}").capacity(cpu="4", memory="16Gi", pods=20).zone(f"z{i % 3}")
        if i % 4 == 0:
            b = b.image(IMAGE, 600 * 1024 * 1024)
        if i % 7 == 0:
            b = b.label("disk", "ssd")
        out.append(b.obj())
    return out


def running_pods() -> list[Pod]:
    return [
        make_pod(f"run-{i}")
        .label("app", "web" if i % 2 else "db")
        .req(cpu="500m", memory="1Gi")
        .node(f"n{i * 3}")
        .obj()
        for i in range(6)
    ]


def incoming_pods() -> list[Pod]:
    """A sequence that exercises every cross-shard input: each pod is assumed in turn."""
    pods = []
    for i in range(4):
        pods.append(
            make_pod(f"plain-{i}").req(cpu="1", memory="2Gi").container("img", image=IMAGE).obj()
        )
    for i in range(4):
        pods.append(
            make_pod(f"anti-{i}")
            .label("app", "web")
            .req(cpu="300m")
            .pod_anti_affinity(HOST, {"app": "web"})
            .obj()
        )
    for i in range(5):
        pods.append(
            make_pod(f"spread-{i}")
            .label("app", "sp")
            .req(cpu="200m")
            .spread(1, ZONE, "DoNotSchedule", {"app": "sp"})
            .obj()
        )
    for i in range(3):
        pods.append(
            make_pod(f"pref-{i}")
            .label("app", "cache")
            .req(cpu="100m")
            .pod_affinity(ZONE, {"app": "web"}, weight=40)
            .spread(1, HOST, "ScheduleAnyway", {"app": "cache"})
            .obj()
        )
    pods.append(make_pod("ssd").req(cpu="100m").node_selector("disk", "ssd").obj())
    pods.append(make_pod("port").req(cpu="100m").host_port(8080).obj())
    pods.append(make_pod("too-big").req(cpu="64").obj())
    return pods


def framework(cache: Cache) -> Framework:
    profile = default_config().profiles[0]
    handle = Handle(profile_name=profile.scheduler_name, rng=random.Random(0))
    handle.snapshot = cache.snapshot
    fwk = new_framework(profile, handle)
    return fwk


def load(cache: Cache) -> None:
    for node in nodes():
        cache.add_node(node)
    for pod in running_pods():
        cache.add_pod(pod)


def attempt(
    sched: Scheduler, fwk: Framework, cache: Cache, table: Any, source: Any, pod: Pod
) -> AttemptResult | FitError:
    try:
        return sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot, None, source)
    except FitError as fit:
        return fit


def summary(res: AttemptResult | FitError) -> Any:
    if isinstance(res, FitError):
        return ("fit-error", str(res))
    return (
        res.suggested_host,
        res.feasible_nodes,
        {k: v.tolist() for k, v in res.raw_scores.items()},
        {n: s.message() for n, s in res.diagnosis.node_to_status.statuses.items()},
    )


def run_sequence(source_for: Any, shards: int) -> tuple[list[Any], ShardedSource]:
    """Schedule ``incoming_pods`` one by one with a sharded source, assuming each."""
    router = ShardRouter(shards)
    cache = Cache(router)
    load(cache)
    source = source_for(router)
    fwk = framework(cache)
    sched = Scheduler(0, random.Random(7))
    out = []
    for pod in incoming_pods():
        res = attempt(sched, fwk, cache, router.table, source, pod)
        out.append(summary(res))
        if isinstance(res, AttemptResult):
            cache.assume_pod(replace(pod, node_name=res.suggested_host), res.suggested_host)
    return out, source


def local_sequence() -> list[Any]:
    cache = Cache()
    load(cache)
    fwk = framework(cache)
    sched = Scheduler(0, random.Random(7))
    out = []
    for pod in incoming_pods():
        res = attempt(sched, fwk, cache, cache.sink.table, None, pod)  # type: ignore[attr-defined]
        out.append(summary(res))
        if isinstance(res, AttemptResult):
            cache.assume_pod(replace(pod, node_name=res.suggested_host), res.suggested_host)
    return out
