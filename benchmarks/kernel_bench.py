"""Microseconds per pod: the fused kernel (cluster_sched.kernels) vs its numpy reference
vs limit_probe's compute floor, measured in the same run.

For N in 500, 5,000 and 50,000 nodes: a NodeTable of N nodes in 3 zones (4 cpu, 32Gi,
110 pods each, a quarter of them half full), the default profile's resource plugins
(NodeResourcesFit LeastAllocated + BalancedAllocation, weights 1) and limit_probe's pod
(100m cpu, 500Mi). Each pod evaluates the window the scheduler would: from the rotating
next_start_node_index until numFeasibleNodesToFind(N) feasible nodes (230 / 500 / 2,500
here), filter + score + best score and its ties. The table does not change between
pods (limit_probe assumes each pod in place; that costs it a few nanoseconds).

Rows printed per N:
- kernel evaluate_pod: the one-pod call the cycle makes (packing + numba dispatch + pass)
- kernel evaluate_batch: the same per pod, 64 pods per call
- kernel pass only: the compiled pass looped inside numba (no Python, no dispatch)
- kernel full scan: the pass with to_find = N (every node, as limit_probe does)
- numpy reference: evaluate_pod_reference (the plugins' own numpy code, windows as
  algorithm.py)
- limit_probe numba / numpy: ``limit_probe.py N PODS numba|numpy`` (pods/s -> us/pod),
  every node per pod; machines are shared, so read ratios to it, not absolute figures.

A benchmark: it prints figures and asserts nothing.
Run: PYTHONPATH=. .venv/bin/python benchmarks/kernel_bench.py [--sizes 500,5000,50000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numba import njit

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.config.plugin_args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from cluster_sched.kernels import (
    KernelProfile,
    PodQuery,
    PodRequests,
    evaluate_batch,
    evaluate_pod,
    evaluate_pod_reference,
    fused,
    warm_up,
)
from cluster_sched.kernels.evaluate import pack_pod_call
from cluster_sched.kernels.scalar import MAX_NODE_SCORE
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.noderesources.balanced_allocation import BalancedAllocation
from cluster_sched.plugins.noderesources.fit import Fit
from cluster_sched.scheduler.algorithm import num_feasible_nodes_to_find
from cluster_sched.testing.builders import make_pod

LIMIT_PROBE = Path("/work/shared/tools/limit_probe.py")
BATCH = 64


def build_table(n: int, seed: int = 0) -> NodeTable:
    rng = np.random.default_rng(seed)
    table = NodeTable(capacity=n)
    alloc = {CPU: 4000, MEMORY: 32 << 30, PODS: 110}
    for i in range(n):
        labels = {"topology.kubernetes.io/zone": f"z{i % 3}"}
        table.upsert_node(Node(ObjectMeta(f"n{i}", labels=labels), allocatable=alloc))
    busy = rng.random(n) < 0.25
    cpu = np.where(busy, 2000, 0)
    mem = np.where(busy, 16 << 30, 0)
    table.requested[0, :n] += cpu
    table.requested[1, :n] += mem
    table.free[0, :n] -= cpu
    table.free[1, :n] -= mem
    table.nonzero[0, :n] += cpu
    table.nonzero[1, :n] += mem
    table.pod_count[:n] += np.where(busy, 10, 0)
    return table


def per_call(fn: Callable[[], object], budget: float = 0.3) -> float:
    """Best-of-5 CPU seconds per call, each repeat running about ``budget / 5`` seconds.
    CPU time of this process, not wall time: other processes on a shared machine
    preempt us, which inflates wall time but not CPU time."""
    fn()
    t = time.process_time()
    fn()
    once = max(time.process_time() - t, 1e-6)
    number = max(1, int(budget / 5 / once))
    return min(timeit.repeat(fn, number=number, repeat=5, timer=time.process_time)) / number


COLD_BYTES = 24 << 20


@njit(cache=False, nogil=True)
def _touch(buf):  # type: ignore[no-untyped-def]
    for i in range(0, buf.shape[0], 8):
        buf[i] += 1


@njit(cache=False, nogil=True)
def _row_major(rm, start, to_find, q0, q1, rows, totals):  # type: ignore[no-untyped-def]
    """Fit filter + LeastAllocated + BalancedAllocation over rows of ``rm`` (fields:
    allowed pods, pod count, free cpu/mem, allocatable cpu/mem, non-zero cpu/mem,
    requested cpu/mem, two score columns): the row-major layout probe."""
    n = rm.shape[0]
    found = 0
    for i in range(n):
        r = start + i - n if start + i >= n else start + i
        if (rm[r, 0] - rm[r, 1] >= 1) & (rm[r, 2] >= q0) & (rm[r, 3] >= q1):
            a0, a1 = rm[r, 4], rm[r, 5]
            x0 = max(a0 - rm[r, 6] - q0, 0) * MAX_NODE_SCORE
            x1 = max(a1 - rm[r, 7] - q1, 0) * MAX_NODE_SCORE
            fit = (np.int64(np.floor(x0 / a0)) + np.int64(np.floor(x1 / a1))) >> 1
            f0 = min((rm[r, 8] + q0) / a0, 1.0)
            f1 = min((rm[r, 9] + q1) / a1, 1.0)
            bal = np.int64((1 - abs((f0 - f1) / 2)) * 100.0)
            rows[found] = r
            totals[found] = fit + bal + rm[r, 10] + rm[r, 11]
            found += 1
            if found == to_find:
                break
    return found


def rotating_cold(n: int, to_find: int, call: Callable[[int], object]) -> float:
    """Median seconds of ``call(start)`` over 200 successive windows, other memory
    touched between calls (outside the timing)."""
    buf = np.ones(COLD_BYTES // 8, dtype=np.int64)
    call(0)
    _touch(buf)
    times = []
    for i in range(200):
        _touch(buf)
        t = time.perf_counter()
        call(i * to_find % n)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def row_major_copy(table: NodeTable, n: int) -> np.ndarray:
    rm = np.zeros((n, 12), dtype=np.int64)
    cols = (table.allowed_pods[:n], table.pod_count[:n], table.free[0, :n], table.free[1, :n])
    cols += (table.allocatable[0, :n], table.allocatable[1, :n], table.nonzero[0, :n])
    cols += (table.nonzero[1, :n], table.requested[0, :n], table.requested[1, :n])
    for j, col in enumerate(cols):
        rm[:, j] = col
    return rm


@njit(cache=False, nogil=True)
def _loop(reps, args):  # type: ignore[no-untyped-def]
    x = 0
    for _ in range(reps):
        x += fused.evaluate_pod_kernel(*args)[0]
    return x


def limit_probe(n: int, mode: str) -> float | None:
    """limit_probe's us/pod (all N nodes per pod), run now, or None if it failed."""
    pods = max(50, int((2e6 if mode == "numba" else 2e5) // n))
    try:
        out = subprocess.run(
            [sys.executable, str(LIMIT_PROBE), str(n), str(pods), mode],
            capture_output=True, text=True, check=True, timeout=600,
        )  # fmt: skip
        return 1e6 / float(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def bench(n: int) -> None:
    table = build_table(n)
    profile = KernelProfile(
        Fit(NodeResourcesFitArgs()), BalancedAllocation(NodeResourcesBalancedAllocationArgs())
    )
    requests = PodRequests.of_pod(make_pod("p").req(cpu="100m", memory="500Mi").obj(), profile)
    to_find = num_feasible_nodes_to_find(0, n)
    starts = iter(range(10**12))

    def query() -> PodQuery:
        return PodQuery(requests, start=next(starts) * 97 % n)

    batch = [query() for _ in range(BATCH)]
    args = pack_pod_call(table, profile, query(), to_find)
    full_args = pack_pod_call(table, profile, query(), n)
    _loop(1, args)
    rm = row_major_copy(table, n)
    q = (100, 500 << 20)  # limit_probe's pod: 100m cpu, 500Mi
    out = np.zeros((2, max(1, to_find)), dtype=np.int64)

    def at(start: int) -> object:
        return fused.evaluate_pod_kernel(*args[:7], start, *args[8:])

    rows: list[tuple[str, float | None]] = [
        ("kernel evaluate_pod", per_call(lambda: evaluate_pod(table, profile, query(), to_find))),
        (
            f"kernel evaluate_batch (B={BATCH})",
            per_call(lambda: evaluate_batch(table, profile, batch, to_find)) / BATCH,
        ),
        ("kernel pass only", per_call(lambda: _loop(100, args)) / 100),
        ("kernel full scan (to_find=N)", per_call(lambda: _loop(10, full_args)) / 10),
        ("kernel rotating, cold", rotating_cold(n, to_find, at)),
        (
            "row-major probe rotating, cold",
            rotating_cold(n, to_find, lambda s: _row_major(rm, s, to_find, *q, out[0], out[1])),
        ),
        (
            "numpy reference",
            per_call(lambda: evaluate_pod_reference(table, profile, query(), to_find)),
        ),
        ("limit_probe numba (all N)", limit_probe(n, "numba")),
        ("limit_probe numpy (all N)", limit_probe(n, "numpy")),
    ]
    print(f"\n{n:,} nodes (window: numFeasibleNodesToFind = {to_find:,})")
    for label, seconds in rows:
        if seconds is None:
            print(f"  {label:34s}        n/a")
        elif label.startswith("limit_probe"):
            print(f"  {label:34s} {seconds:10.1f} us/pod")
        else:
            print(f"  {label:34s} {seconds * 1e6:10.1f} us/pod")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,5000,50000")
    ns = parser.parse_args()
    t = time.perf_counter()
    warm_up()
    print(f"warm_up (compile or load from numba's cache): {time.perf_counter() - t:.2f} s")
    for n in (int(s) for s in ns.sizes.split(",")):
        bench(n)


if __name__ == "__main__":
    main()
