"""Throughput of the whole loop: ``cluster-sched run`` on scheduler_perf's SchedulingBasic.

Runs the example (5,000 nodes, 1,000 initial + 10,000 measured pods) ``--repeat`` times
through the CLI in-process and prints pods/s and the queued-to-bound latency p50/p99.
A benchmark, not a test: it asserts nothing.

Run: .venv/bin/python benchmarks/run_bench.py [--workload examples/scheduling-basic.yaml]
     [--repeat 1] [--seed 1] [--redis URL] [--executor local|shards|ray] [--shards N]
     [--no-compiled] [--batch-size N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cluster_sched.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WORKLOAD = ROOT / "examples" / "scheduling-basic.yaml"


def run_once(workload: Path, seed: int, extra: list[str]) -> tuple[dict[str, object], float]:
    with tempfile.TemporaryDirectory() as out:
        argv = ["run", str(workload), "--output", out, "--quiet", "--seed", str(seed), *extra]
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(argv)
        wall = time.perf_counter() - start
        if rc != 0:
            raise SystemExit(f"cluster-sched run exited {rc}")
        summary = json.loads((Path(out) / "summary.json").read_text())
    return summary, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--redis", default=None, help="Redis URL (default: a private redis-server per run)"
    )
    parser.add_argument("--executor", default=None, help="passed to cluster-sched run")
    parser.add_argument("--shards", default=None, help="passed to cluster-sched run")
    parser.add_argument(
        "--no-compiled", action="store_true", help="passed to cluster-sched run (numpy path)"
    )
    parser.add_argument("--batch-size", default=None, help="passed to cluster-sched run")
    args = parser.parse_args(argv)
    extra: list[str] = []
    if args.redis:
        extra += ["--redis", args.redis]
    if args.executor:
        extra += ["--executor", args.executor]
    if args.shards:
        extra += ["--shards", str(args.shards)]
    if args.no_compiled:
        extra += ["--no-compiled"]
    if args.batch_size:
        extra += ["--batch-size", str(args.batch_size)]

    rates: list[float] = []
    print(f"workload {args.workload.name}")
    for i in range(args.repeat):
        summary, wall = run_once(args.workload, args.seed + i, extra)
        lat = summary["latency_ms"]
        att = summary["attempt_latency_ms"]
        rate = float(summary["throughput"])  # type: ignore[arg-type]
        rates.append(rate)
        print(
            f"run {i + 1}: {summary['scheduled']}/{summary['pods']} pods on {summary['nodes']} nodes, "
            f"{rate:.1f} pods/s (first pop to last bind {summary['duration_s']} s, wall {wall:.1f} s); "
            f"latency p50 {lat['p50']:.0f} ms p99 {lat['p99']:.0f} ms (queued to bound); "  # type: ignore[index]
            f"attempt p50 {att['p50']:.3f} ms p99 {att['p99']:.3f} ms"  # type: ignore[index]
        )
        for line in _group_lines(summary):
            print("  " + line)
        print("  " + _reuse_line(summary))
        print("  " + _memory_line(summary))
    if len(rates) > 1:
        print(
            f"pods/s: median {statistics.median(rates):.1f}, min {min(rates):.1f}, max {max(rates):.1f}"
        )
    return 0


def _group_lines(summary: dict[str, object]) -> list[str]:
    """Queued-to-bound latency per pod group: a streamed group's figure is not mixed with
    a group queued all at once before it (streaming-1000's 1,000 initial pods)."""
    groups = summary.get("groups")
    if not isinstance(groups, dict) or len(groups) < 2:
        return []
    lines = []
    for name, g in groups.items():
        lat = g.get("latency_ms") or {}
        lines.append(
            f"group {name}: {g.get('scheduled')}/{g.get('pods')} bound, latency p50 "
            f"{lat.get('p50', float('nan')):.0f} ms p90 {lat.get('p90', float('nan')):.0f} ms "
            f"p99 {lat.get('p99', float('nan')):.0f} ms"
        )
    return lines


def _reuse_line(summary: dict[str, object]) -> str:
    """How often the compiled path served a pod from its shape (one kernel call) and
    shared its PreFilter/PreScore state: the batched loop's speculation hit rate."""
    c = summary.get("compiled_path")
    shards = summary.get("shard_speculation")
    if isinstance(shards, dict):
        c = {**(c if isinstance(c, dict) else {}), **shards}
    if not isinstance(c, dict):
        return "compiled path: off"

    def rate(hit: str, miss: str) -> str:
        h, m = int(c.get(hit, 0)), int(c.get(miss, 0))
        return f"{h}/{h + m} ({100 * h / max(1, h + m):.1f}%)"

    line = (
        f"compiled path: shape columns reused {rate('shape_hits', 'shape_misses')}, "
        f"PreFilter/PreScore shared {rate('pre_cycle_hits', 'pre_cycle_misses')}"
    )
    if isinstance(shards, dict):
        line += (
            f"; shards: prefetched answers used {rate('prefetch_hits', 'prefetch_misses')}, "
            "speculative scores used "
            f"{rate('speculative_score_hits', 'speculative_score_misses')}, "
            f"rows scored on the replica {int(c.get('speculative_score_local_rows', 0))}"
        )
    return line


def _memory_line(summary: dict[str, object]) -> str:
    """Peak resident set of each process, and per node+pod for the coordinator."""
    mem = summary.get("memory")
    if not isinstance(mem, dict):
        return "memory: not reported"
    objects = int(summary.get("nodes", 0)) + int(summary.get("pods", 0))  # type: ignore[call-overload]

    def mib(v: object) -> str:
        return f"{int(v) / 2**20:.0f} MiB" if isinstance(v, int) else "n/a"

    coord = mem.get("coordinator_peak_rss_bytes")
    per = f" ({int(coord) / max(1, objects):.0f} B per node+pod)" if isinstance(coord, int) else ""
    return (
        f"peak RSS: coordinator {mib(coord)}{per}, redis {mib(mem.get('redis_peak_rss_bytes'))} "
        f"(redis used_memory_peak {mib(mem.get('redis_used_memory_peak_bytes'))})"
    )


if __name__ == "__main__":
    sys.exit(main())
