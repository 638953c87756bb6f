"""What metrics cost a scheduling attempt: disabled vs enabled.

Run: ``python benchmarks/metrics_overhead.py [--nodes N] [--attempts N]``

One pod is scheduled over and over (Filter + Score over every node, nothing assumed)
with the framework instrumented by ``Metrics.disabled()`` (what a run without
``--metrics-port`` pays: no plugin is wrapped, each extension point checks one
attribute) and by an enabled ``Metrics`` (extension-point histograms, plugin evaluation
counters on every call, plugin timing in the sampled 10 % of cycles). Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import random
import time

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import DISABLED
from cluster_sched.testing.builders import make_node, make_pod


def _per_attempt(metrics: Metrics, nodes: int, attempts: int) -> float:
    cache = Cache()
    cache.load(
        [make_node(f"n{i}").capacity(cpu="8", memory="16Gi", pods=110).obj() for i in range(nodes)]
    )
    pod = make_pod("p").req(cpu="1", memory="1Gi").obj()
    config = default_config()
    fwk = build_framework(config, pod, cache, seed=1)
    fwk.instrument(DISABLED, metrics)
    sched = Scheduler(100, random.Random(1))
    table = cache.sink.table  # type: ignore[attr-defined]
    for _ in range(10):  # warm up
        sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
    start = time.perf_counter()
    for _ in range(attempts):
        sched.schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
    return (time.perf_counter() - start) / attempts * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 5000])
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for nodes in args.nodes:
        # Interleaved, best of each: the machine's noise hits both sides alike.
        offs, ons = [], []
        for _ in range(args.repeats):
            offs.append(_per_attempt(Metrics.disabled(), nodes, args.attempts))
            ons.append(_per_attempt(Metrics(), nodes, args.attempts))
        off, on = min(offs), min(ons)
        print(
            f"{nodes:>6} nodes: disabled {off:8.1f} µs/attempt  enabled {on:8.1f} µs/attempt"
            f"  (+{on - off:.1f} µs, {100 * (on - off) / off:+.1f} %)"
        )


if __name__ == "__main__":
    main()
