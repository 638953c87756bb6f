"""The coordinator's rescoring of a pod's changed window rows (``shards/rescore.py``), per
call: the kernel's call packed once per prepared shape (``RowTotals``) against the call
packed per call (``ShardKernels.run(normalize=False)``, what ``ChangedRows`` ran before).

At 1,000,000 nodes a pod's window holds ~4 rows changed since the shards were asked
(earlier pods of the batch assumed there): the kernel's work is a few rows, its cost the
call's packing and dispatch. Thread CPU per call, the best of ``--reps`` repetitions of
``--calls`` calls (the machine is shared), on 4 rows of a 2,000-node table (the call's
cost does not depend on the table's size).

Run: PYTHONPATH=. .venv/bin/python benchmarks/rescore_bench.py
A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.rescore import RowTotals
from cluster_sched.testing.builders import make_node, make_pod

NODES = 2000


def best_us(call: Callable[[], object], calls: int, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        began = time.thread_time()
        for _ in range(calls):
            call()
        best = min(best, time.thread_time() - began)
    return best / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    core = ShardCore(0)
    nodes = [
        make_node(f"n{i}").capacity(cpu="8", memory="16Gi", pods=110).zone(f"z{i % 3}").manifest()
        for i in range(NODES)
    ]
    core.apply([["node", n, i, i] for i, n in enumerate(nodes)])
    core.windows.set_order(np.arange(NODES, dtype=np.int64), 1)
    core.set_snapshot(NODES, {})
    doc = make_pod("web").req(cpu="250m", memory="512Mi").manifest()
    pod = parse_object(doc)
    assert isinstance(pod, Pod)
    fwk = core.frameworks[pod.scheduler_name]
    state = CycleState()
    fwk.run_pre_filter(state, pod, core.snapshot)
    fwk.run_pre_score(state, pod, core.snapshot, NodeSlice(core.table, core.windows.rows))
    prepared = core.kernels.prepare(fwk, state, pod, doc, None, core.table)
    assert prepared is not None, "the kernel models the pod"
    rows = np.array([7, 512, 1033, 1900], dtype=np.int64)
    packed = RowTotals(prepared)

    def per_call() -> object:
        return core.kernels.run(prepared, core.table, rows, normalize=False)

    def once() -> object:
        return packed(core.table, rows)

    assert per_call()[0].totals.tolist() == once().tolist()  # type: ignore[union-attr]
    print(f"{len(rows)} rows: packed per call (ShardKernels.run) {best_us(per_call, args.calls, args.reps):.1f} µs, packed once (RowTotals) {best_us(once, args.calls, args.reps):.1f} µs")  # fmt: skip


if __name__ == "__main__":
    main()
