"""PreemptionBasic (scheduler_perf): how long the high-priority pods take to preempt.

Runs ``cluster-sched run examples/preemption-basic.yaml`` in-process (1,000 nodes of
4 CPU filled by 4,000 low-priority 900m pods, then 1,000 high-priority 3,000m pods that
must preempt) and prints, per run: first pop to last bind, the high group's
queued-to-bound latency p50/p99, the mean PostFilter (DefaultPreemption) call time (wall
and the thread's CPU time) and the process's CPU time (user + sys; the private
redis-server apart). Issue 9's target: every high pod bound within 20 s of the first
pop. A benchmark, not a test: it asserts nothing.

Run: .venv/bin/python benchmarks/preemption_bench.py [--workload FILE] [--repeat 1]
     [--seed 1] [--executor local|shards|ray]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cluster_sched.cli import main as cli_main
from cluster_sched.plugins.defaultpreemption.plugin import DefaultPreemption

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WORKLOAD = ROOT / "examples" / "preemption-basic.yaml"


class PostFilterTimer:
    """Wraps DefaultPreemption.post_filter (class-wide) to sum its wall time and its
    thread's CPU time (the latter holds on a busy machine)."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self._real = DefaultPreemption.post_filter

    def __enter__(self) -> PostFilterTimer:
        real, timer = self._real, self

        def timed(plugin: Any, *args: Any, **kwargs: Any) -> Any:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return real(plugin, *args, **kwargs)
            finally:
                timer.calls += 1
                timer.seconds += time.perf_counter() - start
                timer.cpu_seconds += time.thread_time() - cpu

        DefaultPreemption.post_filter = timed  # type: ignore[method-assign, assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        DefaultPreemption.post_filter = self._real  # type: ignore[method-assign]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run_once(workload: Path, seed: int, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as out, PostFilterTimer() as timer:
        argv = ["run", str(workload), "--output", out, "--quiet", "--no-report"]
        argv += ["--seed", str(seed), *extra]
        cpu0, wall0 = _cpu(resource.RUSAGE_SELF), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(argv)
        cpu, wall = _cpu(resource.RUSAGE_SELF) - cpu0, time.perf_counter() - wall0
        if rc != 0:
            raise SystemExit(f"cluster-sched run exited {rc}")
        summary = json.loads((Path(out) / "summary.json").read_text())
    return {"summary": summary, "cpu": cpu, "wall": wall, "timer": timer}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--executor", default=None, help="passed to cluster-sched run")
    args = parser.parse_args(argv)
    extra = ["--executor", args.executor] if args.executor else []
    print(f"workload {args.workload.name}")
    for i in range(args.repeat):
        r = run_once(args.workload, args.seed + i, extra)
        s, timer = r["summary"], r["timer"]
        high = s.get("groups", {}).get("high", {}).get("latency_ms", {})
        calls = max(timer.calls, 1)
        print(
            f"run {i + 1}: first pop to last bind {s['duration_s']:.2f} s; "
            f"high p50 {high.get('p50', float('nan')):.0f} ms "
            f"p99 {high.get('p99', float('nan')):.0f} ms; "
            f"PostFilter {timer.calls} calls, mean {timer.seconds / calls * 1e3:.2f} ms "
            f"(CPU {timer.cpu_seconds / calls * 1e3:.2f} ms); "
            f"CPU {r['cpu']:.1f} s (wall {r['wall']:.1f} s); "
            f"preempted {s['preempted']}, scheduled {s['scheduled']}/{s['pods']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
