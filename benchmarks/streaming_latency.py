"""Queued-to-bound latency of streamed pods (issue 23: 1,000 pods/s on 5,000 nodes, p99
under 100 ms), apart from the initial burst that the run's own p99 mixes in.

Runs ``benchmarks/workloads/streaming-1000.yaml`` (1,000 initial pods at once, then
20,000 at 1,000/s) in this process and prints, besides the run's figures, the latency
percentiles of the pods of one group (``--group``, default the measured ones). A
benchmark, not a test: it asserts nothing. Quote it beside an old-code run.

Run: .venv/bin/python benchmarks/streaming_latency.py [--workload PATH] [--group measured-pod]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from cluster_sched.scheduler.stats import RunStats
from cluster_sched.workload.runner import RunOptions, run_evaluation

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default=str(ROOT / "benchmarks/workloads/streaming-1000.yaml"))
    ap.add_argument("--group", default="measured-pod", help="pod name prefix of the group")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    group: dict[str, Any] = {}
    summary = RunStats.summary

    def with_group(self: RunStats, unschedulable: int) -> dict[str, object]:
        keys = [
            k
            for k in self.bound_node
            if k in self.enqueued_at and k.partition("/")[2].startswith(args.group)
        ]
        ms = np.asarray([self.bound_at[k] - self.enqueued_at[k] for k in keys]) * 1e3
        if len(ms):
            group.update(
                pods=len(ms), **{f"p{q}": round(float(np.percentile(ms, q)), 1) for q in (50, 99)}
            )
        return summary(self, unschedulable)

    RunStats.summary = with_group  # type: ignore[method-assign]
    result = run_evaluation(RunOptions(args.workload, seed=args.seed, quiet=True))
    s = result.summary
    print(
        f"all pods: {s['throughput']} pods/s, latency {s['latency_ms']}, "
        f"cpu {s['process_cpu_us_per_pod']} us/pod"
    )
    print(f"group {args.group}: {group}")


if __name__ == "__main__":
    main()
