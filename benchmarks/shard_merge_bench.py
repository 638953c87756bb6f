"""The coordinator's merge of the shards' reductions, per pod, by shard count, without Ray:
what reading a pod's answer costs besides the Ray calls (``shards/replies.py``:
``MergedChunk`` of a chunk, then per pod its PreScore skips checked, its maxima, its tie
bits, the tie count and the host's rank, as ``merge.ReducedBatch.take`` reads them).

A 1,000-row window (20,000 nodes) split over S shards, 64 pods per chunk, every shard
holding ties of the best total (uniform nodes: the usual case). Thread CPU per pod, the
best of 30 repetitions (the machine is shared). Runs against any tree (it reads
``skipped`` where ``skips_agree`` is missing: the code before it).

Run: PYTHONPATH=. .venv/bin/python benchmarks/shard_merge_bench.py
A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import time

import numpy as np

from cluster_sched.framework.state_codec import decode_value, encode_value
from cluster_sched.scheduler.shards.reduce import OK, PodReduction
from cluster_sched.scheduler.shards.replies import ChunkReduction, MergedChunk

WIDTH, PODS = 1000, 64


def per_pod(shards: int, reps: int = 30) -> float:
    """Thread CPU seconds per pod of merging one chunk from ``shards`` shards."""
    rng = np.random.default_rng(0)
    per = WIDTH // shards
    replies = []
    for _ in range(shards):
        pods = [
            PodReduction(OK, 50, rng.random(per) < 0.3, {"TaintToleration": 0}, frozenset({"A"}))
            for _ in range(PODS)
        ]
        wire = encode_value(ChunkReduction.pack(pods).wire())
        replies.append(ChunkReduction.of_wire(decode_value(wire)))
    positions = np.concatenate([np.arange(per, dtype=np.int64) * shards + s for s in range(shards)])
    bounds = np.arange(shards + 1, dtype=np.int64) * per
    none = np.zeros(0, dtype=np.int64)
    skip = frozenset({"A"})
    best = float("inf")
    for _ in range(reps):
        began = time.thread_time()
        merged = MergedChunk(replies, PODS)
        for i in range(PODS):
            if hasattr(merged, "skips_agree"):
                agree = merged.skips_agree(i, skip)
            else:
                agree = all(k == skip for k in merged.skipped(i))
            assert agree
            merged.maxima_of(i)
            ties = merged.tie_bits(i, positions, bounds, per * shards)
            assert ties is not None
            ties.select(ties.settle(none, none, False) // 2)
        best = min(best, time.thread_time() - began)
    return best / PODS


def main() -> None:
    got = {s: per_pod(s) for s in (1, 2, 3, 4, 16)}
    for s, t in got.items():
        print(f"{s:3} shard(s): {t * 1e6:6.2f} µs per pod")
    slope = (got[16] - got[1]) / 15
    print(f"merge per extra shard per pod: {slope * 1e6:.2f} µs")


if __name__ == "__main__":
    main()
