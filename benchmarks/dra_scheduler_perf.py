"""Upstream's DRA scheduler_perf workloads with a threshold, at full size, each beside a
same-run reference: ``limit_probe.py 500 5000`` before and after, the load average, the
workload's SchedulingThroughput Average and its ratio to the threshold (target: >= 3x).

    flock /work/wt/bench.lock .venv/bin/python benchmarks/dra_scheduler_perf.py [WORKLOAD ...]

Workloads are ``Test/workload`` names of examples/scheduler_perf/dra-config.yaml (default:
the four with a threshold). Each runs in its own ``cluster-sched perf`` process.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "scheduler_perf" / "dra-config.yaml"
PROBE = Path("/work/shared/tools/limit_probe.py")
DEFAULT = (
    "SchedulingWithResourceClaimTemplate/5000pods_500nodes",
    "SteadyStateClusterResourceClaimTemplate/empty_500nodes",
    "SteadyStateClusterResourceClaimTemplate/half_500nodes",
    "SteadyStateClusterResourceClaimTemplate/full_500nodes",
)
RESULT = re.compile(
    r"(PASS|FAIL) (\S+): SchedulingThroughput Average ([0-9.]+) pods/s(?:.*threshold ([0-9.]+))?"
)


def probe() -> str:
    if not PROBE.exists():
        return "-"
    out = subprocess.run(
        [sys.executable, str(PROBE), "500", "5000"], capture_output=True, text=True
    )
    return out.stdout.strip()


def main(names: list[str]) -> int:
    if any(n.count("/") != 1 for n in names):
        print(__doc__.strip().split("\n\n")[1].strip())
        return 0 if names in (["-h"], ["--help"]) else 2
    cli = Path(sys.executable).with_name("cluster-sched")
    for name in names or DEFAULT:
        test, workload = name.split("/")
        before, load = probe(), os.getloadavg()[0]
        out = subprocess.run(
            [str(cli), "perf", str(CONFIG), "--test", test, "--workload", workload,
             "--output", "/tmp/dra-scheduler-perf"],
            capture_output=True, text=True,
        )  # fmt: skip
        after = probe()
        line = next((ln for ln in out.stdout.splitlines() if RESULT.match(ln)), out.stdout[-200:])
        m = RESULT.match(line)
        if m is None:
            print(f"{name}: {line.strip()}")
            continue
        value = float(m.group(3))
        threshold = float(m.group(4)) if m.group(4) else 0.0
        ratio = f"{value / threshold:.2f}x" if threshold else "-"
        print(
            f"{name}: {value:.1f} pods/s, threshold {threshold:g}, {ratio}; "
            f"limit_probe {before} / {after}; load {load:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
