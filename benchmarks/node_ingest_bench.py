"""Node ingestion cost per node: the informer's listing into the cache and node table
(issues 22 and 23), one node at a time vs in bulk.

Run: ``python benchmarks/node_ingest_bench.py [--nodes 100000] [--profile]``. A private
redis-server holds ``--nodes`` SchedulingBasic nodes (4 CPU / 32Gi / 110 pods, a
hostname label each, as the workload runner writes them). Reported, in CPU µs per node
of this process:

- ``table_one_by_one`` / ``table_bulk``: ``NodeTable.upsert_node`` per node vs
  ``NodeTable.upsert_nodes`` over all of them (parsed nodes given);
- ``listing``: ``Informer.list_and_watch`` of the coordinator ``new_scheduler`` builds
  (in-process executor; the store's read and decode, the parse, the cache, the table);
- with ``--shards N``, the same listing into an in-process ``ShardRouter`` replica.

``--profile`` prints the cProfile of the listing by function (cumulative top 30).
A benchmark helper: it measures, asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from typing import Any

from cluster_sched.api.manifest import parse_object
from cluster_sched.config.load import load_config
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.store import Store
from cluster_sched.workload.synth import node_manifest


def _cpu(fn: Any) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def table_figures(n: int) -> dict[str, float]:
    """CPU µs per node: one by one vs bulk, into an empty table."""
    docs = [node_manifest(f"node-{i}") for i in range(n)]
    nodes = [parse_object(d) for d in docs]
    one = NodeTable()
    t_one = _cpu(lambda: [one.upsert_node(x) for x in nodes])  # type: ignore[arg-type]
    out = {"table_one_by_one_us": t_one / n * 1e6}
    bulk = getattr(NodeTable, "upsert_nodes", None)
    if bulk is not None:
        tb = NodeTable()
        out["table_bulk_us"] = _cpu(lambda: tb.upsert_nodes(nodes)) / n * 1e6
    return out


def listing_figures(n: int, url: str, executor: str, shards: int, profile: bool) -> float:
    """CPU µs per node of the coordinator's listing of ``n`` stored nodes."""
    client = connect(url)
    client.flushall()
    store = Store(client)
    for a in range(0, n, 10000):
        store.apply_many([node_manifest(f"node-{i}") for i in range(a, min(n, a + 10000))])
    config = load_config(None)
    coord = new_scheduler(
        store, client, config, options=ExecutorOptions(executor=executor, shards=shards)
    )
    try:
        prof = cProfile.Profile() if profile else None
        c0 = time.process_time()
        if prof is not None:
            prof.enable()
        coord.informer.list_and_watch()
        if prof is not None:
            prof.disable()
        cpu = time.process_time() - c0
        assert len(coord.cache.nodes) == n
        if prof is not None:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    finally:
        coord.close()
    return cpu / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--shards", type=int, default=0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--skip-table", action="store_true")
    args = ap.parse_args()
    out: dict[str, Any] = {"nodes": args.nodes}
    if not args.skip_table:
        out.update(table_figures(args.nodes))
    with RedisServer() as server:
        out["listing_us"] = listing_figures(args.nodes, server.url, "local", 1, args.profile)
        if args.shards:
            out["listing_router_us"] = listing_figures(
                args.nodes, server.url, "inprocess", args.shards, False
            )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
