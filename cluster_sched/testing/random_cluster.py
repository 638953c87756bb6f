"""Random small clusters and pod lists for equivalence tests (batched vs serial, shards vs
in-process): resources, taints and tolerations, node labels and affinity, host ports,
inter-pod affinity and anti-affinity, topology spread, priorities that preempt.

Everything is drawn from one ``random.Random`` so a seed (or a hypothesis integer) names
a workload."""

from __future__ import annotations

import random
from typing import Any

from cluster_sched.testing.node_builder import make_node
from cluster_sched.testing.pod_builder import make_pod

__all__ = ["random_workload"]

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")


def random_workload(seed: int, n_nodes: int = 12, n_pods: int = 40) -> list[dict[str, Any]]:
    """Manifests: ``n_nodes`` nodes, then low-priority running pods on some of them, then
    ``n_pods`` pending pods of mixed shapes (in that order: the queue order is by
    priority, then arrival)."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = []
    names = []
    for i in range(n_nodes):
        name = f"n{i:02d}"
        names.append(name)
        b = make_node(name).capacity(
            cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([4, 8, 16])}Gi", pods=20
        )
        b = b.zone(f"z{i % 3}").label("disk", rng.choice(["ssd", "hdd"]))
        if rng.random() < 0.2:
            b = b.taint("dedicated", "infra")
        docs.append(b.manifest())
    for j in range(n_nodes // 2):
        node = rng.choice(names)
        pod = make_pod(f"old{j}").req(cpu=f"{rng.choice([500, 1000, 1500])}m", memory="1Gi")
        docs.append(pod.priority(0).label("app", rng.choice(APPS)).node(node).manifest())
    for k in range(n_pods):
        docs.append(_pending(rng, k))
    return docs


def _pending(rng: random.Random, k: int) -> dict[str, Any]:
    app = rng.choice(APPS)
    b = make_pod(f"p{k:03d}").label("app", app)
    b = b.req(
        cpu=f"{rng.choice([100, 250, 500, 1000, 2000])}m",
        memory=f"{rng.choice([256, 512, 1024])}Mi",
    )
    b = b.priority(rng.choice([0, 0, 0, 10, 100]))
    roll = rng.random()
    if roll < 0.15:
        b = b.tolerate("dedicated", value="infra", effect="NoSchedule")
    elif roll < 0.3:
        b = b.node_selector("disk", "ssd")
    elif roll < 0.4:
        b = b.host_port(rng.choice([80, 443]))
    elif roll < 0.55:
        b = b.pod_anti_affinity(HOST, {"app": app})
    elif roll < 0.65:
        b = b.pod_affinity(ZONE, {"app": rng.choice(APPS)})
    elif roll < 0.8:
        b = b.spread(1, ZONE, rng.choice(["DoNotSchedule", "ScheduleAnyway"]), {"app": app})
    elif roll < 0.85:
        b = b.pod_affinity(ZONE, {"app": app}, weight=rng.randint(1, 100))
    return b.manifest()
