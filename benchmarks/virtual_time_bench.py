"""Virtual time: hours of cluster life in seconds, and the same history for a seed.

Runs ``examples/virtual/churn-6h.yaml`` (10,000 pods with lifetimes arriving over 6
simulated hours on 100 nodes) with ``--clock virtual`` ``--repeat`` times and prints, per
run, the wall time, the simulated span, the arrival/completion/clock-jump counts and the
digest of the bind/unbind history. A benchmark, not a test: it asserts nothing, but says
whether the digests agree.

Run: .venv/bin/python benchmarks/virtual_time_bench.py [--workload FILE] [--repeat 2]
     [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cluster_sched.workload.runner import RunOptions, run_evaluation

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WORKLOAD = ROOT / "examples" / "virtual" / "churn-6h.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    digests = []
    for i in range(args.repeat):
        started = time.monotonic()
        result = run_evaluation(
            RunOptions(
                workload=str(args.workload),
                seed=args.seed,
                quiet=True,
                clock="virtual",
                report=False,
            )
        )
        wall = time.monotonic() - started
        s = result.summary
        vt = s["virtual_time"]
        digests.append(vt["history_sha256"])
        print(
            json.dumps(
                {
                    "run": i + 1,
                    "wall_s_total": round(wall, 2),
                    "wall_s_loop": vt["wall_seconds"],
                    "simulated_s": vt["simulated_seconds"],
                    "pods": s["pods"],
                    "scheduled": s["scheduled"],
                    "arrivals": vt["arrivals"],
                    "completions": vt["completions"],
                    "clock_jumps": vt["clock_jumps"],
                    "jumps_by_event": vt["jumps_by_event"],
                    "latency_ms": s["latency_ms"],
                    "utilisation_mean": s["over_time"]["utilisation_mean"],
                    "pending_max": s["over_time"]["pending_max"],
                    "history_sha256": vt["history_sha256"],
                }
            ),
            flush=True,
        )
    print(f"identical histories: {len(set(digests)) == 1} ({len(digests)} runs)")


if __name__ == "__main__":
    main()
