"""µs per pod of one scheduling attempt (explain's work) at 5,000 and 50,000 nodes.

Default profile with percentageOfNodesToScore: 100, so every node is filtered and scored.
Run: .venv/bin/python benchmarks/explain_bench.py [--nodes 5000 50000] [--pods 200]
"""

from __future__ import annotations

import argparse
import random
import time

from cluster_sched.api.manifest import parse_object
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.workload.synth import node_manifest, pod_manifest

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 100,
}


def run(n_nodes: int, n_pods: int) -> float:
    cache = Cache()
    zones = ["zone-a", "zone-b", "zone-c"]
    for i in range(n_nodes):
        cache.add_node(
            parse_object(
                node_manifest(f"node-{i}", labels={"topology.kubernetes.io/zone": zones[i % 3]})
            )
        )
    # some load so scores differ
    rng = random.Random(1)
    for j in range(n_nodes):
        pod = parse_object(
            {
                **pod_manifest(f"running-{j}", cpu=f"{rng.randint(1, 30) * 100}m"),
                "spec": {**pod_manifest("x")["spec"], "nodeName": f"node-{rng.randrange(n_nodes)}"},
            }
        )
        cache.add_pod(pod)
    config = parse_config(CONFIG)
    pod = parse_object(pod_manifest("bench"))
    fwk = build_framework(config, pod, cache, seed=1)
    sched = Scheduler(100, random.Random(1))
    table = cache.sink.table
    sched.schedule_pod(fwk, CycleState(), pod, table, cache)  # warm caches
    start = time.process_time()
    for _ in range(n_pods):
        sched.schedule_pod(fwk, CycleState(), pod, table, cache)
    return (time.process_time() - start) / n_pods * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[5000, 50000])
    ap.add_argument("--pods", type=int, default=200)
    args = ap.parse_args()
    for n in args.nodes:
        print(
            f"{n:>7} nodes: {run(n, args.pods):8.1f} µs per pod (default profile, percentageOfNodesToScore=100)"
        )


if __name__ == "__main__":
    main()
