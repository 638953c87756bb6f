"""Shared by the reduced-protocol tests: a workload the shards' reductions can answer,
and one run of it through a coordinator (placements, attempts, FailedScheduling counts,
the source's counters)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import redis

from cluster_sched.clock import FakeClock
from cluster_sched.config.load import load_config
from cluster_sched.queue.types import Location
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store
from cluster_sched.telemetry.tracing import Tracing
from cluster_sched.testing.builders import make_node, make_pod

_runs = itertools.count()


def reducible_workload(seed: int, n_nodes: int = 160, n_pods: int = 90) -> list[dict[str, Any]]:
    """Nodes the compiled path covers (some PreferNoSchedule taints, labels a preferred
    affinity reads, images), pods mostly of a few Deployment shapes, some too big for
    most nodes (a window with failing rows) or for all (FitError), a few tolerating or
    preferring."""
    rng = random.Random(seed)
    docs = []
    for i in range(n_nodes):
        b = make_node(f"n{i:03d}").capacity(
            cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([4, 8, 16])}Gi", pods=30
        )
        b = b.zone(f"z{i % 3}").label("disk", rng.choice(["ssd", "hdd"]))
        if rng.random() < 0.04:  # rare: some shards' rows of a window have none
            b = b.taint("soft", "x", effect="PreferNoSchedule")
        if rng.random() < 0.04:
            b = b.label("gpu", "yes")
        if rng.random() < 0.3:
            b = b.image("registry/app:v1", 300 * 1024 * 1024)
        docs.append(b.manifest())
    for k in range(n_pods):
        shape = rng.choice(["web", "web", "web", "db", "big", "pref", "tol", "huge"])
        b = make_pod(f"p{k:03d}").label("app", shape)
        cpu = {"web": "250m", "db": "1", "big": "5", "pref": "500m", "tol": "100m", "huge": "12"}[
            shape
        ]
        req = {"cpu": cpu, "memory": "512Mi"}
        if shape == "web":
            b = b.container("c", image="registry/app:v1", requests=req)
        else:
            b = b.req(req)
        if shape == "pref":
            # two terms: a node's raw score is 0, a, b or a+b, so two shards' maxima can
            # both be non-zero and differ (one normalising alone would be wrong)
            for key, value in (("disk", "ssd"), ("gpu", "yes")):
                b = b.node_affinity_preferred(
                    rng.randint(1, 50), {"key": key, "operator": "In", "values": [value]}
                )
        if shape == "tol":
            b = b.tolerate("soft", "Equal", "x", "PreferNoSchedule")
        docs.append(b.manifest())
    return docs


def run_outcome(
    client: redis.Redis,
    docs: list[dict[str, Any]],
    options: ExecutorOptions,
    batch: int,
    inspect: Callable[[Coordinator], None] | None = None,
    after_step: Callable[[Coordinator], None] | None = None,
    tracing: Tracing | None = None,
) -> tuple[dict[str, str], dict[str, int], dict[str, float]]:
    """Placements, FailedScheduling counts and attempts, the source's counters;
    ``inspect(coord)`` at the end, ``after_step(coord)`` after each turn that scheduled;
    ``tracing``: the coordinator's (off when None)."""
    prefix = f"{{r{next(_runs)}}}"
    store = Store(client, prefix=prefix)
    store.apply_many(docs)
    clock = FakeClock(1_700_000_000.0)
    coord = new_scheduler(
        store, client, load_config(None), options=options, clock=clock, seed=3,
        prefix=prefix, batch_size=batch, tracing=tracing,
    )  # fmt: skip
    try:
        coord.start()
        for _ in range(8):
            while coord.step(pop_timeout=0):
                if after_step is not None:
                    after_step(coord)
            assert coord.binder.wait_idle(30.0), "bindings did not finish"
            coord.process_binding_outcomes()
            while coord.poll_informer():
                pass
            coord.flush_done()
            clock.step(30.0)
            coord.queue.flush_backoff_q_completed()
            if coord.queue.counts()[Location.ACTIVE] == 0:
                break
        placements = {
            d["metadata"]["name"]: d["spec"].get("nodeName", "") for d in store.list("Pod")
        }
        # one pass over the Event stream, not one per pod (each reads the whole stream)
        failed = Counter(e["key"] for e in store.events(reason="FailedScheduling"))
        counts = {k: failed[f"default/{k}"] for k in placements}
        counts |= {f"attempts:{k}": v for k, v in coord.stats.attempts.items()}
        counters = getattr(coord.source, "speculation_counters", dict)()
        if inspect is not None:
            inspect(coord)
        return placements, counts, counters
    finally:
        coord.close()
