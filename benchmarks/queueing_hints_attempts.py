"""Scheduling attempts per pod on the scheduler_perf shapes QueueingHints target.

Run: ``python benchmarks/queueing_hints_attempts.py [--test Unschedulable] [--workload
'5Nodes/1Init/10Pods'] [--batch-size 64]``. Runs each selected workload of
``examples/scheduler_perf/performance-config.yaml`` as ``cluster-sched perf`` does and
prints ``scheduler_schedule_attempts_total`` by result, the pods in the store (bound /
pending) and attempts per pod. Comparing two checkouts shows what the hints save: every
attempt of a pod that cannot fit is one an event-map queue would make and a hint skips.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from cluster_sched.config.load import load_config
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.store.store import Store
from cluster_sched.workload.perf.command import run_workload
from cluster_sched.workload.perf.config import load_test_cases, select_workloads

CONFIG = Path(__file__).resolve().parents[1] / "examples/scheduler_perf/performance-config.yaml"
_ATTEMPT = re.compile(r'^scheduler_schedule_attempts_total\{[^}]*result="([^"]+)"[^}]*\} (\S+)$')


def _report(name: str, store: Store, coord: Coordinator) -> None:
    attempts: Counter[str] = Counter()
    for line in coord.metrics.exposition().decode().splitlines():
        m = _ATTEMPT.match(line)
        if m:
            attempts[m.group(1)] += int(float(m.group(2)))
    pods = store.list("Pod")
    bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
    total = sum(attempts.values())
    # The unschedulable churn pods (generateName pod-h-), deleted or not by the end.
    churn = [n for key, n in coord.stats.attempts.items() if "/pod-h-" in key]
    print(
        f"{name}: attempts={total} {dict(attempts)} pods={len(pods)} bound={bound} "
        f"pending={len(pods) - bound} attempts/pod={total / max(len(pods), 1):.2f} "
        f"unschedulable pods={len(churn)} attempts on them={sum(churn)} "
        f"({sum(churn) / max(len(churn), 1):.2f} per pod)",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--test", default="Unschedulable")
    ap.add_argument("--workload", default="*")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--config", type=Path, default=CONFIG, help="a performance-config.yaml")
    a = ap.parse_args()
    args = argparse.Namespace(
        redis=None,
        executor="local",
        shards=1,
        ray_address=None,
        compiled=False,
        seed=a.seed,
        batch_size=a.batch_size,
        timeout=600.0,
    )
    for planned in select_workloads(load_test_cases(a.config), a.test, a.workload, a.config):
        config = load_config(str(planned.case.scheduler_config_path or "") or None)
        name = planned.name
        run_workload(planned, config, args, inspect=lambda s, c, n=name: _report(n, s, c))


if __name__ == "__main__":
    main()
