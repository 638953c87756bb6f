"""Distributed executor benchmark: throughput and memory, in-process vs Ray shards.

Scenarios (each run in a fresh child process, so memory figures do not mix):

- ``basic``: scheduler_perf's SchedulingBasic (examples/scheduling-basic.yaml: 5,000
  nodes, 1,000 + 10,000 pods), ``--executor local`` and ``--executor ray --shards N``.
- ``large``: SchedulingBasic's shape at 100,000 nodes and 100,000 pods (the workload
  file is written to a temporary directory), with Ray shards only.

Run::

    python benchmarks/distributed_bench.py [--only basic|large] [--shards 2]
        [--large-nodes 100000] [--large-pods 100000]

Per run it prints pods/s (first pop to last bind, the runner's figure), the wall time
of loading the nodes and of scheduling, and memory as RSS deltas (psutil):

- coordinator: after the nodes are in its cache and replica minus before (per node),
  and at the end minus after the nodes (per pod);
- shard actors (summed over shards): after the nodes reached them minus empty (per
  node), and at the end minus after the nodes (per pod);
- redis-server (the store): its RSS at the end, per stored node or pod.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cluster_sched.testing.workload_file import write_basic_workload

ROOT = Path(__file__).resolve().parents[1]
BASIC = ROOT / "examples" / "scheduling-basic.yaml"
MB = 1024 * 1024


def large_workload(path: Path, nodes: int, pods: int) -> Path:
    """SchedulingBasic's node and pod templates at any size, nodes over three zones."""
    return write_basic_workload(path, nodes, pods, zones=("zone-a", "zone-b", "zone-c"))


# ---------------------------------------------------------------------------- child


def _rss(pid: int) -> int:
    import psutil

    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return 0


def _redis_rss() -> int:
    import psutil

    return sum(
        p.memory_info().rss
        for p in psutil.Process().children(recursive=True)
        if "redis" in (p.name() or "")
    )


def child(cfg: dict[str, Any]) -> dict[str, Any]:
    from cluster_sched.config.load import load_config
    from cluster_sched.queue.types import Location
    from cluster_sched.redis_server import redis_session
    from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
    from cluster_sched.store.store import Store
    from cluster_sched.workload.runner import run_workload
    from cluster_sched.workload.spec import load_workload

    executor, shards = cfg["executor"], int(cfg["shards"])
    workload = load_workload(cfg["workload"])
    config = load_config(None)
    me = os.getpid()
    out: dict[str, Any] = {
        "workload": workload.name,
        "executor": executor if executor == "local" else f"{executor} --shards {shards}",
        "nodes": len(workload.node_docs),
        "pods": workload.total_pods,
    }
    with redis_session(None) as session:
        store = Store(session.client)
        coord = new_scheduler(
            store,
            session.client,
            config,
            seed=1,
            options=ExecutorOptions(executor=executor, shards=shards, redis_url=session.url),
        )
        clients = getattr(coord.source, "clients", [])
        shard_pids = [c.pid() for c in clients if hasattr(c, "pid")]
        rss0 = _rss(me)
        shard0 = sum(_rss(p) for p in shard_pids)
        marks: dict[str, float] = {"t0": time.perf_counter()}
        original_start = coord.start

        def start() -> None:
            original_start()
            sync = getattr(coord.source, "sync", None)
            if sync is not None:
                sync()  # ship every node to its shard now, to measure them apart from pods
            marks["nodes_loaded"] = time.perf_counter()
            marks["rss_nodes"] = _rss(me)
            marks["shard_nodes"] = sum(_rss(p) for p in shard_pids)

        coord.start = start  # type: ignore[method-assign]
        try:
            run_workload(workload, coord, store, quiet=True, group_timeout=float(cfg["timeout"]))
            t_end = time.perf_counter()
            counts = coord.queue.counts()
            summary = coord.stats.summary(counts[Location.UNSCHEDULABLE] + counts[Location.BACKOFF])
            rss_end = _rss(me)
            shard_end = sum(_rss(p) for p in shard_pids)
            redis_end = _redis_rss()
        finally:
            coord.close()
            close = getattr(coord.source, "close", None)
            if close is not None:
                close()
    nodes, pods = max(out["nodes"], 1), max(out["pods"], 1)
    out.update(
        scheduled=summary["scheduled"],
        unschedulable=summary["unschedulable"],
        pods_per_s=summary["throughput"],
        attempt_p50_ms=summary["attempt_latency_ms"]["p50"],
        load_nodes_s=round(marks["nodes_loaded"] - marks["t0"], 1),
        schedule_s=round(t_end - marks["nodes_loaded"], 1),
        coord_kb_per_node=round((marks["rss_nodes"] - rss0) / nodes / 1024, 2),
        coord_kb_per_pod=round((rss_end - marks["rss_nodes"]) / pods / 1024, 2),
        coord_rss_mb=round(rss_end / MB),
        shard_kb_per_node=round((marks["shard_nodes"] - shard0) / nodes / 1024, 2)
        if shard_pids
        else None,
        shard_kb_per_pod=round((shard_end - marks["shard_nodes"]) / pods / 1024, 2)
        if shard_pids
        else None,
        shard_rss_mb=round(shard_end / MB) if shard_pids else None,
        redis_kb_per_object=round(redis_end / (nodes + pods) / 1024, 2),
    )
    return out


# ---------------------------------------------------------------------------- parent


def run_child(cfg: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ)  # the child's private Ray gets token auth unless this says otherwise
    proc = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(cfg)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ROOT),
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"run {cfg} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])  # type: ignore[no-any-return]


COLUMNS = [
    ("workload", "workload"),
    ("executor", "executor"),
    ("nodes", "nodes"),
    ("pods", "pods"),
    ("scheduled", "bound"),
    ("pods_per_s", "pods/s"),
    ("attempt_p50_ms", "cycle p50 ms"),
    ("load_nodes_s", "load nodes s"),
    ("schedule_s", "schedule s"),
    ("coord_kb_per_node", "coord KB/node"),
    ("coord_kb_per_pod", "coord KB/pod"),
    ("shard_kb_per_node", "shards KB/node"),
    ("shard_kb_per_pod", "shards KB/pod"),
    ("redis_kb_per_object", "redis KB/obj"),
    ("coord_rss_mb", "coord RSS MB"),
    ("shard_rss_mb", "shards RSS MB"),
]


def table(rows: list[dict[str, Any]]) -> str:
    cells = [[h for _, h in COLUMNS]] + [
        ["-" if r.get(k) is None else str(r.get(k)) for k, _ in COLUMNS] for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c[i].rjust(widths[i]) for i in range(len(COLUMNS))) for c in cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=("basic", "large"))
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--large-nodes", type=int, default=100_000)
    ap.add_argument("--large-pods", type=int, default=100_000)
    ap.add_argument("--timeout", type=float, default=7200.0, help="per pod group, seconds")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="distributed-bench-") as tmp:
        if args.only in (None, "basic"):
            for executor in ("local", "ray"):
                runs.append({"workload": str(BASIC), "executor": executor, "shards": args.shards})
        if args.only in (None, "large"):
            path = large_workload(Path(tmp) / "large.yaml", args.large_nodes, args.large_pods)
            runs.append({"workload": str(path), "executor": "ray", "shards": args.shards})
        rows = []
        for cfg in runs:
            cfg["timeout"] = args.timeout
            started = time.perf_counter()
            row = run_child(cfg)
            print(
                f"# {row['workload']} {row['executor']}: {time.perf_counter() - started:.0f} s wall",
                flush=True,
            )
            print(json.dumps(row), flush=True)
            rows.append(row)
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
