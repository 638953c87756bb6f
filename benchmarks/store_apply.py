"""How fast the store takes a workload: apply_many of N pods + nodes, then bind_many.

Run: ``python benchmarks/store_apply.py [--objects 100000] [--nodes 100000] [--redis URL]``.
Without ``--redis`` a private redis-server is started. Prints objects/s for apply
(create), a re-apply (all unchanged), and bindings/s with the Redis time per binding
(half the pods bound as the API server binds, half as the scheduler's binder does); with ``--nodes``, first a bulk load
of that many nodes alone (nodes/s) and what one stored object costs in Redis: its
msgpack bytes, and the memory of its hash entry plus its watch event. Pods are ~1 KB
manifests, like real ones.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

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


def _stored_bytes(client: Any, store: Store, kind: str, count: int) -> None:
    """Average msgpack size of the stored objects of ``kind``, and Redis memory per
    object: the hash entry and the stream entry (the watch event carries the object)."""
    key = store.keys.obj(kind)
    sizes = [len(v) for _, v in client.hscan_iter(key, count=1000)]
    hash_mem = client.memory_usage(key, samples=0) or 0
    print(
        f"stored {kind}: {sum(sizes) / len(sizes):,.0f} bytes msgpack; Redis memory "
        f"{hash_mem / count:,.0f} bytes in the hash + the event (stream total "
        f"{(client.memory_usage(store.keys.events, samples=0) or 0) / 1e6:,.1f} MB)"
    )


def run_nodes(url: str, nodes: int) -> None:
    """A bulk load of nodes alone (issue 9 point 4: huge clusters)."""
    client = connect(url)
    client.flushall()
    store = Store(client)
    docs = [_node(i) for i in range(nodes)]
    before = client.info("memory")["used_memory"]
    t0 = time.perf_counter()
    store.apply_many(docs)
    elapsed = time.perf_counter() - t0
    used = client.info("memory")["used_memory"] - before
    print(f"apply {nodes} nodes: {nodes / elapsed:>10,.0f} nodes/s  ({elapsed:.2f}s)")
    _stored_bytes(client, store, "Node", nodes)
    print(f"Redis memory per node (hash + event): {used / nodes:,.0f} bytes")
    client.close()


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
    half = len(bindings) // 2
    plain, binder = bindings[:half], bindings[half:]
    server = _script_usec(client)
    store.bind_many(plain)
    t3 = time.perf_counter()
    plain_usec = _script_usec(client) - server
    # The scheduler's binder: batches of 64, requests known, fit checked, Scheduled Events.
    requests = {"cpu": 100, "memory": 128 * 2**20}
    t4 = time.perf_counter()
    for at in range(0, len(binder), 64):
        batch = [(*b, requests, ()) for b in binder[at : at + 64]]
        store.bind_many(batch, scheduled_events=True, check_fit=True)
    t5 = time.perf_counter()
    binder_usec = _script_usec(client) - server - plain_usec

    print(
        f"apply (create): {len(docs) / (t1 - t0):>10,.0f} objects/s  ({len(docs)} in {t1 - t0:.2f}s)"
    )
    print(f"apply (same):   {len(docs) / (t2 - t1):>10,.0f} objects/s")
    print(
        f"bind_many:      {len(plain) / (t3 - t2):>10,.0f} bindings/s"
        f"  (Redis time {plain_usec / max(len(plain), 1):.1f} µs per binding)"
    )
    print(
        f"binder batches: {len(binder) / (t5 - t4):>10,.0f} bindings/s"
        f"  (Redis time {binder_usec / max(len(binder), 1):.1f} µs per binding;"
        " 64 per call, fit checked, Scheduled Events)"
    )
    _stored_bytes(client, store, "Pod", len(pods))
    client.close()


def _script_usec(client: Any) -> int:
    """Microseconds the server has spent in scripts (EVALSHA), from its command stats."""
    stats = client.info("commandstats").get("cmdstat_evalsha") or {}
    return int(stats.get("usec", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=0, help="also bulk-load this many nodes")
    parser.add_argument("--redis", default=None, help="Redis URL (default: a private server)")
    args = parser.parse_args()
    if args.redis:
        if args.nodes:
            run_nodes(args.redis, args.nodes)
        run(args.redis, args.objects)
        return
    with RedisServer() as server:
        if args.nodes:
            run_nodes(server.url, args.nodes)
        run(server.url, args.objects)


if __name__ == "__main__":
    main()
