"""Throughput of scheduler_perf's cross-node shapes through the whole loop.

Runs the example workloads (SchedulingPodAntiAffinity, SchedulingPodAffinity,
TopologySpreading, PreemptionBasic) through ``cluster_sched.cli.main(["run", ...])``
in-process and prints, per workload: pods/s (first pop to last bind), the scheduling
attempt p50/p99, wall time and CPU time of the run, and for PreemptionBasic the seconds
from the first high-priority pod's enqueue until the last one is bound.
A benchmark, not a test: it asserts nothing.

Run: .venv/bin/python benchmarks/shapes_bench.py [--only anti-affinity,spreading]
     [--seed 1] [--redis URL] [--profile DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.cli import main as cli_main
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.scheduler.stats import RunStats
from cluster_sched.store.store import Store
from cluster_sched.workload.spec import load_workload

ROOT = Path(__file__).resolve().parents[1]
#: short name -> example workload
SHAPES = {
    "anti-affinity": ROOT / "examples" / "scheduling-pod-anti-affinity.yaml",
    "affinity": ROOT / "examples" / "scheduling-pod-affinity.yaml",
    "spreading": ROOT / "examples" / "topology-spreading.yaml",
    "preemption": ROOT / "examples" / "preemption-basic.yaml",
}
#: PreemptionBasic's preemptors are the pods of this name prefix
HIGH_PREFIX = "default/high-"


def _capture_stats() -> tuple[list[RunStats], Any]:
    """Wrap RunStats.summary to keep the run's stats object (for per-group timings)."""
    seen: list[RunStats] = []
    original = RunStats.summary

    def summary(self: RunStats, unschedulable: int) -> dict[str, object]:
        seen.append(self)
        return original(self, unschedulable)

    RunStats.summary = summary  # type: ignore[method-assign]
    return seen, original


def _high_priority_seconds(stats: RunStats) -> float | None:
    enq = [t for k, t in stats.enqueued_at.items() if k.startswith(HIGH_PREFIX)]
    bound = [t for k, t in stats.bound_at.items() if k.startswith(HIGH_PREFIX)]
    if not enq or not bound:
        return None
    return max(bound) - min(enq)


# Each run gets a private redis-server here, so the event stream can be replayed after.
def independent_checks(path: Path, placements: dict[str, str], store: Store) -> list[str]:
    """The e2e tests' independent checks (tests/workload): capacity, taints/selectors,
    anti-affinity, affinity, final skew, and capacity at every binding of the stream."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.workload.checker import Cluster
    from tests.workload.crossnode_checker import (
        affinity_violations,
        anti_affinity_violations,
        read_stream,
        replay_overcommit,
        spread_violations,
    )

    workload = load_workload(path)
    nodes = {n.name: n for n in (parse_node(d) for d in workload.node_docs)}
    pods = {p.key: p for g in workload.pod_groups for p in (parse_pod(d) for d in g.manifests())}
    out = list(Cluster.from_workload(workload).check(placements))
    out += anti_affinity_violations(pods, placements, nodes)
    out += affinity_violations(pods, placements, nodes)
    out += spread_violations(pods, placements, nodes)
    out += replay_overcommit(read_stream(store), nodes, parse_pod)[0]
    return out


def run_shape(
    name: str, path: Path, seed: int, extra: list[str], profile_dir: Path | None
) -> dict[str, Any]:
    seen, original = _capture_stats()
    checks: list[str] | None = None
    try:
        with tempfile.TemporaryDirectory() as out, RedisServer() as redis_server:
            argv = [
                "run",
                str(path),
                "--output",
                out,
                "--quiet",
                "--seed",
                str(seed),
                "--redis",
                redis_server.url,
                *extra,
            ]
            prof = cProfile.Profile() if profile_dir else None
            wall0, cpu0 = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):
                if prof is not None:
                    rc = prof.runcall(cli_main, argv)
                else:
                    rc = cli_main(argv)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            if prof is not None and profile_dir is not None:
                profile_dir.mkdir(parents=True, exist_ok=True)
                prof.dump_stats(str(profile_dir / f"{name}.prof"))
            if rc != 0:
                return {"shape": name, "error": f"cluster-sched run exited {rc}"}
            summary = json.loads((Path(out) / "summary.json").read_text())
            placements = json.loads((Path(out) / "placements.json").read_text())
            checks = independent_checks(path, placements, Store(connect(redis_server.url)))
    finally:
        RunStats.summary = original  # type: ignore[method-assign]
    row: dict[str, Any] = {
        "shape": name,
        "scheduled": summary["scheduled"],
        "unschedulable": summary["unschedulable"],
        "throughput": summary["throughput"],
        "attempt_p50_ms": summary["attempt_latency_ms"]["p50"],
        "attempt_p99_ms": summary["attempt_latency_ms"]["p99"],
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
    }
    row["checks"] = "ok" if not checks else f"{len(checks)} violations: {checks[:3]}"
    if name == "preemption" and seen:
        high = _high_priority_seconds(seen[-1])
        row["high_bound_s"] = None if high is None else round(high, 2)
        row["preempted"] = summary["preempted"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES)
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--profile", type=Path, default=None, help="write a cProfile per shape into DIR"
    )
    args = parser.parse_args(argv)
    extra: list[str] = []
    for name in [s.strip() for s in args.only.split(",") if s.strip()]:
        if name not in SHAPES:
            print(f"unknown shape {name!r} (known: {', '.join(SHAPES)})")
            continue
        row = run_shape(name, SHAPES[name], args.seed, extra, args.profile)
        if "error" in row:
            print(f"{name:14s} {row['error']}")
            continue
        line = (
            f"{name:14s} {row['throughput']:>8} pods/s  attempt p50 {row['attempt_p50_ms']} ms"
            f"  p99 {row['attempt_p99_ms']} ms  wall {row['wall_s']} s  cpu {row['cpu_s']} s"
            f"  scheduled {row['scheduled']}  unschedulable {row['unschedulable']}"
            f"  checks {row['checks']}"
        )
        if "high_bound_s" in row:
            line += (
                f"  high-priority bound in {row['high_bound_s']} s  preempted {row['preempted']}"
            )
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
