"""The host search over the shards' tie bits (``scheduler/shards/ties.py``) for one pod
of a merged chunk, at 1,000,000 nodes' window: its cost must not grow with the chunk.

``MergedChunk`` keeps every shard's bits of every pod of a chunk in one array and hands
each pod's ``TieBits`` that array with its offsets. The search once counted the popcounts
of the whole array per pod (64 pods x 2 shards x 3,125 bytes at W = 50,000): 0.47 ms per
pod, most of the coordinator's cost per pod that grew with the window. Prints µs per pod
(settle + select) for a pod read from a chunk of ``--pods`` pods and from a chunk of one.

Run: PYTHONPATH=. .venv/bin/python benchmarks/tie_bits_bench.py [--width 50000]
A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cluster_sched.scheduler.shards.ties import TieBits


def per_pod_us(width: int, shards: int, pods: int, reads: int) -> float:
    rng = np.random.default_rng(1)
    rows = np.full(shards, width // shards, dtype=np.int64)
    per = (rows + 7) // 8
    bits = rng.integers(0, 256, size=int(pods * per.sum()), dtype=np.uint8)
    positions = np.concatenate([np.arange(s, width, shards) for s in range(shards)])
    pos_off = np.zeros(shards + 1, dtype=np.int64)
    np.cumsum(rows, out=pos_off[1:])
    pod = pods // 2  # shard s's bits of every pod, then shard s + 1's (as ``MergedChunk``)
    byte_off = np.array([pods * per[:s].sum() + pod * per[s] for s in range(shards)], np.int64)
    ties = TieBits(bits, byte_off, rows, positions.astype(np.int64), pos_off, width)
    none = np.zeros(0, dtype=np.int64)
    ties.select(ties.settle(none, none, False) // 2)  # compiled before the clock
    began = time.perf_counter()
    for _ in range(reads):
        ties.select(ties.settle(none, none, False) // 2)
    return (time.perf_counter() - began) / reads * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=50_000)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--pods", type=int, default=64)
    ap.add_argument("--reads", type=int, default=300)
    args = ap.parse_args()
    for pods in (args.pods, 1):
        us = per_pod_us(args.width, args.shards, pods, args.reads)
        print(
            f"window {args.width:,}, {args.shards} shards, a pod of a {pods}-pod chunk: {us:.1f} µs per pod"
        )


if __name__ == "__main__":
    main()
