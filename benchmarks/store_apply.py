"""How fast the store takes a workload: apply_many of N pods + nodes, then bind_many.

Run: ``python benchmarks/store_apply.py [--objects 100000] [--redis URL]``. Without
``--redis`` a private redis-server is started. Prints objects/s for apply (create), a
re-apply (all unchanged), and bindings/s. Pods are ~1 KB manifests, like real ones.
"""

from __future__ import annotations

import argparse
import time

from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.store import Store


def _node(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i}",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
            },
        },
        "spec": {"taints": []},
        "status": {
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
        },
    }


def _pod(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i}",
            "namespace": f"ns-{i % 10}",
            "labels": {"app": f"app-{i % 50}", "tier": "backend", "pod-template-hash": "7f9c"},
            "annotations": {"example.com/owner": "team-a"},
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "priority": i % 3,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com/app:1.2.3",
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                        "limits": {"cpu": "500m", "memory": "512Mi"},
                    },
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                }
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": f"app-{i % 50}"}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                }
            },
        },
    }


def run(url: str, objects: int) -> None:
    client = connect(url)
    client.flushall()
    store = Store(client)
    nodes = max(1, objects // 20)
    docs = [_node(i) for i in range(nodes)] + [_pod(i) for i in range(objects - nodes)]

    t0 = time.perf_counter()
    created = store.apply_many(docs)
    t1 = time.perf_counter()
    store.apply_many(docs)
    t2 = time.perf_counter()
    pods = [r for r in created if r.kind == "Pod"]
    bindings = [(r.key, f"node-{i % nodes}", r.obj["metadata"]["uid"]) for i, r in enumerate(pods)]
    store.bind_many(bindings)
    t3 = time.perf_counter()

    print(
        f"apply (create): {len(docs) / (t1 - t0):>10,.0f} objects/s  ({len(docs)} in {t1 - t0:.2f}s)"
    )
    print(f"apply (same):   {len(docs) / (t2 - t1):>10,.0f} objects/s")
    print(f"bind_many:      {len(bindings) / (t3 - t2):>10,.0f} bindings/s")
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--redis", default=None, help="Redis URL (default: a private server)")
    args = parser.parse_args()
    if args.redis:
        run(args.redis, args.objects)
        return
    with RedisServer() as server:
        run(server.url, args.objects)


if __name__ == "__main__":
    main()
