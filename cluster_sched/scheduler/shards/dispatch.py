"""Dispatch by measured cost: the compiled path on the replica, or the shards' reductions.

An attempt the compiled path can take costs the coordinator ``per_row_us`` per row of
its window (numFeasibleNodesToFind rows) on its own replica, beyond what every attempt
costs. Answered by the shards' reductions (``merge``) it costs the coordinator
``per_pod_us`` beyond that (the prediction's PreFilter, the state encoded once, the
Ray client's work for the batch's calls, PreScore, the changed rows rescored) plus
``per_shard_us`` per shard (each shard's reply decoded and merged, its share of the
calls). The batch goes to the shards when that is cheaper:

    per_row_us * width  >  per_pod_us + per_shard_us * shards

The defaults are this machine's measurements (``benchmarks/shard_protocol_bench.py``:
coordinator CPU per pod, the reduced protocol at 1 and 2 Ray shards against the compiled
path, README "Distributed execution"): the shards take a batch from about 500,000 nodes
with 2 shards. ``mode`` forces one side ("shards", "replica").
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DISPATCH_MODES", "DispatchRule"]

DISPATCH_MODES = ("auto", "shards", "replica")


@dataclass(frozen=True, slots=True)
class DispatchRule:
    mode: str = "auto"
    #: the compiled path's evaluation per window row on the coordinator (µs)
    per_row_us: float = 0.012
    #: the reduced protocol's coordinator work per pod beyond a compiled attempt's (µs)
    per_pod_us: float = 190.0
    #: and per shard per pod (µs)
    per_shard_us: float = 53.0

    def __post_init__(self) -> None:
        if self.mode not in DISPATCH_MODES:
            raise ValueError(f"shard dispatch mode {self.mode!r}: one of {DISPATCH_MODES}")

    def replica_cost_us(self, width: int) -> float:
        return self.per_row_us * width

    def shard_cost_us(self, shards: int) -> float:
        return self.per_pod_us + self.per_shard_us * shards

    def use_shards(self, width: int, shards: int, batch: int) -> bool:
        """Whether a batch of ``batch`` pods with windows of ``width`` rows goes to the
        ``shards`` (module docstring; a lone pod has nothing to overlap with)."""
        if self.mode != "auto":
            return self.mode == "shards"
        return batch > 1 and self.replica_cost_us(width) > self.shard_cost_us(shards)
