"""Dispatch by measured cost: the compiled path on the replica, or the shards' reductions.

An attempt the compiled path can take costs the coordinator ``per_row_us`` per row of
its window (numFeasibleNodesToFind rows) on its own replica. Answered by the shards'
reductions (``shard_merge``) it costs the coordinator ``per_pod_us`` (PreFilter of the
prediction, the state encoded once, the replies merged, PreScore over the window) plus,
per call, ``per_call_us`` for each shard, paid once per chunk of ``PREFETCH_CHUNK`` pods.
The batch goes to the shards when that is cheaper:

    per_row_us * width  >  per_pod_us + shards * per_call_us / min(batch, PREFETCH_CHUNK)

The defaults are this machine's measurements (``benchmarks/shard_protocol_bench.py``,
README "Distributed execution"); ``mode`` forces one side ("shards", "replica").
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster_sched.scheduler.shard_prefetch import PREFETCH_CHUNK

__all__ = ["DISPATCH_MODES", "DispatchRule"]

DISPATCH_MODES = ("auto", "shards", "replica")


@dataclass(frozen=True, slots=True)
class DispatchRule:
    mode: str = "auto"
    #: the compiled path's evaluation per window row on the coordinator (µs)
    per_row_us: float = 0.012
    #: the coordinator's own work per pod the shards answer (µs)
    per_pod_us: float = 40.0
    #: submitting one call to one shard and reading its reply (µs)
    per_call_us: float = 250.0

    def __post_init__(self) -> None:
        if self.mode not in DISPATCH_MODES:
            raise ValueError(f"shard dispatch mode {self.mode!r}: one of {DISPATCH_MODES}")

    def replica_cost_us(self, width: int) -> float:
        return self.per_row_us * width

    def shard_cost_us(self, shards: int, batch: int) -> float:
        return self.per_pod_us + shards * self.per_call_us / max(1, min(batch, PREFETCH_CHUNK))

    def use_shards(self, width: int, shards: int, batch: int) -> bool:
        """Whether a batch of ``batch`` pods with windows of ``width`` rows goes to the
        ``shards`` (module docstring)."""
        if self.mode != "auto":
            return self.mode == "shards"
        return self.replica_cost_us(width) > self.shard_cost_us(shards, batch)
