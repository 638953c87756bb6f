"""Memory per node and per bound pod: the coordinator's and Redis's, by difference.

Issue 9 asks a million nodes and a million pods to fit in 16 GiB (coordinator + Redis),
so what matters is the cost of one more node and one more bound pod. Fixed costs (the
interpreter, numpy, the config, Redis's own) cancel by measuring the same workload shape
(SchedulingBasic: nodes of 4 CPU / 32Gi / 110 pods, pods of 100m / 500Mi) at three sizes
and taking differences:

    per node = (X(2N, M) - X(N, M)) / N        per pod = (X(N, 2M) - X(N, M)) / M

Two modes:

``rss`` (default) runs ``cluster-sched run --quiet --no-report --seed 1`` as a subprocess
per size and reads ``summary.json``'s memory figures: the coordinator's peak resident set
(VmHWM, so the end-of-run listing counts too) and Redis's ``used_memory_peak``.

``trace`` runs the same loop in this process under ``tracemalloc`` at (N, M) and (2N, 2M),
snapshots the live heap right after the last pod is bound (before the report's listing),
and prints the allocation sites whose size grew most between the two, per added object,
with Redis's ``used_memory`` at the same moment. Slower (tracemalloc), but it names lines.

Run: ``python benchmarks/memory_per_object.py --nodes 20000 --pods 20000 [--mode trace]``;
``--code DIR`` measures another checkout's code (e.g. /work/main) with the same driver.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from cluster_sched.testing.workload_file import write_basic_workload

GiB = 1024**3


def write_workload(directory: Path, nodes: int, pods: int) -> Path:
    """SchedulingBasic's shape with ``nodes`` nodes and ``pods`` pods queued at once."""
    return write_basic_workload(directory / f"mem-{nodes}-{pods}.yaml", nodes, pods)


def _rss_run(workload: Path, out: Path, code: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=code)
    cmd = [sys.executable, "-m", "cluster_sched.cli", "run", str(workload)]
    cmd += ["--quiet", "--no-report", "--seed", "1", "--output", str(out)]
    subprocess.run(cmd, env=env, check=True, cwd=code, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "summary.json").read_text())
    mem = summary["memory"]
    return {
        "scheduled": summary["scheduled"],
        "coordinator": mem["coordinator_peak_rss_bytes"],
        "redis": mem["redis_used_memory_peak_bytes"],
    }


def _per_object(
    base: dict[str, Any], more_nodes: dict[str, Any], more_pods: dict[str, Any], n: int, m: int
) -> None:
    for what in ("coordinator", "redis"):
        node = (more_nodes[what] - base[what]) / n
        pod = (more_pods[what] - base[what]) / m
        print(f"{what:12s} {node:8.0f} B/node  {pod:8.0f} B/bound pod")


def rss_mode(args: argparse.Namespace, tmp: Path) -> None:
    n, m = args.nodes, args.pods
    runs = {}
    for nodes, pods in ((n, m), (2 * n, m), (n, 2 * m)):
        path = write_workload(tmp, nodes, pods)
        runs[(nodes, pods)] = r = _rss_run(path, tmp / path.stem, args.code)
        print(
            f"{nodes:>9} nodes {pods:>9} pods: bound {r['scheduled']:>9}  "
            f"coordinator peak {r['coordinator'] / GiB:6.3f} GiB  "
            f"redis peak {r['redis'] / GiB:6.3f} GiB",
            flush=True,
        )
    base = runs[(n, m)]
    _per_object(base, runs[(2 * n, m)], runs[(n, 2 * m)], n, m)
    coord_node = (runs[(2 * n, m)]["coordinator"] - base["coordinator"]) / n
    coord_pod = (runs[(n, 2 * m)]["coordinator"] - base["coordinator"]) / m
    redis_node = (runs[(2 * n, m)]["redis"] - base["redis"]) / n
    redis_pod = (runs[(n, 2 * m)]["redis"] - base["redis"]) / m
    million = 1_000_000
    coord = base["coordinator"] + (million - n) * coord_node + (million - m) * coord_pod
    redis = base["redis"] + (million - n) * redis_node + (million - m) * redis_pod
    print(
        f"projected 1M nodes / 1M pods: coordinator {coord / GiB:.1f} GiB + "
        f"redis {redis / GiB:.1f} GiB = {(coord + redis) / GiB:.1f} GiB"
    )


def _traced_run(workload: Path) -> tuple[tracemalloc.Snapshot, int]:
    """One in-process run; the heap snapshot and Redis used_memory once all are bound."""
    from cluster_sched.workload import runner

    taken: dict[str, Any] = {}
    original = runner.run_workload

    def run_then_snapshot(wl: Any, coord: Any, store: Any, **kw: Any) -> None:
        original(wl, coord, store, **kw)
        taken["snapshot"] = tracemalloc.take_snapshot()
        taken["redis"] = int(store.client.info("memory")["used_memory"])

    runner.run_workload = run_then_snapshot  # the one seam: the benchmark's own probe
    try:
        result = runner.run_evaluation(
            runner.RunOptions(workload=str(workload), seed=1, quiet=True, report=False)
        )
    finally:
        runner.run_workload = original
    print(f"  {workload.stem}: bound {result.summary['scheduled']}", flush=True)
    snap = taken["snapshot"].filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    return snap, taken["redis"]


def trace_mode(args: argparse.Namespace, tmp: Path) -> None:
    n, m = args.nodes, args.pods
    tracemalloc.start(args.frames)
    small, redis_small = _traced_run(write_workload(tmp, n, m))
    small_total = sum(s.size for s in small.statistics("filename"))
    large, redis_large = _traced_run(write_workload(tmp, 2 * n, 2 * m))
    large_total = sum(s.size for s in large.statistics("filename"))
    tracemalloc.stop()
    added = n + m
    print(
        f"python heap: +{(large_total - small_total) / added:.0f} B per added (node + pod) "
        f"pair / 2 = {(large_total - small_total) / added / 2:.0f} B per object; "
        f"redis used_memory +{(redis_large - redis_small) / added:.0f} B per pair"
    )
    key = "traceback" if args.frames > 1 else "lineno"
    diffs = large.compare_to(small, key)
    print(f"top {args.top} sites by growth, bytes per added node+pod pair:")
    for stat in diffs[: args.top]:
        frames = stat.traceback.format()[-2 * args.frames :: 2] if args.frames > 1 else []
        where = " <- ".join(f.strip() for f in frames) or str(stat.traceback[0])
        print(f"  {stat.size_diff / added:9.1f} B  {stat.count_diff / added:6.2f} blocks  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--mode", choices=("rss", "trace"), default="rss")
    parser.add_argument("--top", type=int, default=25, help="trace: sites to print")
    parser.add_argument("--frames", type=int, default=1, help="trace: frames per site")
    parser.add_argument(
        "--code", default=str(Path(__file__).resolve().parents[1]), help="rss: checkout to run"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (rss_mode if args.mode == "rss" else trace_mode)(args, Path(tmp))


if __name__ == "__main__":
    main()
