"""Where one scheduling attempt spends its time, per extension point and plugin.

CPU time (process_time), so other load on the machine matters less.
Run: .venv/bin/python benchmarks/cycle_breakdown.py [--nodes 5000] [--percentage 100]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from cluster_sched.api.manifest import parse_object
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.workload.synth import node_manifest, pod_manifest


def timed(name: str, fn: Callable[[], object], n: int = 300) -> None:
    fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    print(f"{name:45s} {(time.process_time() - start) / n * 1e6:8.1f} µs")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--percentage", type=int, default=100)
    args = ap.parse_args()
    cache = Cache()
    zones = ["zone-a", "zone-b", "zone-c"]
    for i in range(args.nodes):
        cache.add_node(
            parse_object(
                node_manifest(f"node-{i}", labels={"topology.kubernetes.io/zone": zones[i % 3]})
            )
        )
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": args.percentage,
        }
    )
    pod = parse_object(pod_manifest("bench"))
    snap = cache.snapshot
    fwk = build_framework(config, pod, cache, seed=1)
    table = cache.sink.table
    rows = table.order()
    state = CycleState()
    fwk.run_pre_filter(state, pod, snap)
    nodes = NodeSlice(table, rows)
    fwk.run_pre_score(state, pod, snap, nodes)
    for pl in fwk.pre_filter:
        timed(f"preFilter {pl.name}", lambda pl=pl: pl.pre_filter(CycleState(), pod, snap))
    for pl in fwk.pre_score:
        timed(f"preScore {pl.name}", lambda pl=pl: pl.pre_score(CycleState(), pod, snap, nodes))
    for pl in fwk.filter:
        if pl.name not in state.skip_filter_plugins:
            timed(f"filter {pl.name}", lambda pl=pl: pl.filter(state, pod, nodes))
    for pl in fwk.score:
        if pl.name not in state.skip_score_plugins:
            timed(f"score {pl.name}", lambda pl=pl: pl.score(state, pod, nodes))
    timed("run_pre_filter", lambda: fwk.run_pre_filter(CycleState(), pod, snap))
    timed("run_filter (all plugins)", lambda: fwk.run_filter(state, pod, nodes))
    timed("run_pre_score", lambda: fwk.run_pre_score(CycleState(), pod, snap, nodes))
    timed("run_score (all plugins)", lambda: fwk.run_score(state, pod, nodes))
    raw = fwk.run_score(state, pod, nodes)
    timed("normalize_scores", lambda: fwk.normalize_scores(state, pod, raw))
    sched = Scheduler(args.percentage, random.Random(1))
    timed(
        "schedule_pod (whole attempt)",
        lambda: sched.schedule_pod(fwk, CycleState(), pod, table, snap),
    )


if __name__ == "__main__":
    main()


def profile(n_nodes: int = 5000) -> None:  # pragma: no cover - manual use
    import cProfile
    import pstats

    cache = Cache()
    for i in range(n_nodes):
        cache.add_node(parse_object(node_manifest(f"node-{i}")))
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100,
        }
    )
    pod = parse_object(pod_manifest("bench"))
    snap = cache.snapshot
    fwk = build_framework(config, pod, cache, seed=1)
    sched = Scheduler(100, random.Random(1))
    table = cache.sink.table
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(300):
        sched.schedule_pod(fwk, CycleState(), pod, table, snap)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)
