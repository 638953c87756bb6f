"""The cyclic collector's cost in one ``cluster-sched run``, with and without gc_policy.

Runs a SchedulingBasic-shaped workload (default 20,000 nodes, 20,000 pods) twice in this
process — once as shipped (survivors of full collections frozen, ``gc_policy``), once
with the policy off — and prints pods/s and, per generation, how many collections ran,
their total and their longest pause. A benchmark: it asserts nothing.

Run: PYTHONPATH=. .venv/bin/python benchmarks/gc_bench.py [--nodes 20000] [--pods 20000]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import io
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cluster_sched.workload.runner as runner
from cluster_sched.cli import main as cli_main
from cluster_sched.testing.workload_file import write_basic_workload


@contextlib.contextmanager
def _policy_off() -> Iterator[None]:
    yield


def run(workload: Path, policy: bool) -> tuple[float, int, dict[int, list[float]]]:
    """pods/s, the cyclic garbage a full collection finds right after the run (with the
    policy: what freezing held back until the scope ended), and the collector's times."""
    stats: dict[int, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    started = [0.0]

    def timer(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = time.perf_counter() - started[0]
        s = stats[info["generation"]]
        s[0] += 1
        s[1] += took
        s[2] = max(s[2], took)

    saved = runner.survivors_frozen
    if not policy:
        runner.survivors_frozen = _policy_off  # type: ignore[assignment]
    gc.callbacks.insert(0, timer)
    try:
        with tempfile.TemporaryDirectory() as out:
            argv = ["run", str(workload), "--output", out, "--quiet", "--no-report", "--seed", "1"]
            with contextlib.redirect_stdout(io.StringIO()):
                rc = cli_main(argv)
            if rc != 0:
                raise SystemExit(f"cluster-sched run exited {rc}")
            rate = float(json.loads((Path(out) / "summary.json").read_text())["throughput"])
    finally:
        gc.callbacks.remove(timer)
        runner.survivors_frozen = saved  # type: ignore[assignment]
    return rate, gc.collect(), stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--pods", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=2, help="alternating pairs of runs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wl = write_basic_workload(Path(tmp) / "w.yaml", args.nodes, args.pods)
        pairs = (("policy on (as shipped)", True), ("policy off", False)) * args.repeat
        for label, policy in pairs:
            rate, garbage, stats = run(wl, policy)
            print(
                f"{label}: {rate:,.0f} pods/s (first pop to last bind); "
                f"cyclic garbage left at the end: {garbage:,} objects"
            )
            for gen, (n, total, longest) in sorted(stats.items()):
                print(
                    f"  generation {gen}: {int(n)} collections, {total:.2f} s in all, "
                    f"longest {longest * 1e3:.0f} ms"
                )


if __name__ == "__main__":
    main()
