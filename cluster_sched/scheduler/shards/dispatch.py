"""Dispatch by measured cost: the compiled path on the replica, or the shards' reductions.

An attempt the compiled path can take costs ``per_row_us`` per row of its window
(numFeasibleNodesToFind rows) on the coordinator's replica, beyond what every attempt
costs. Answered by the shards' reductions (``merge``) it costs ``per_pod_us`` beyond
that (the prediction's PreFilter, the state encoded once, PreScore, the changed rows
rescored on the coordinator; the shards' own work where it shares the machine's cores
with the coordinator) plus ``per_shard_us`` per shard (its Ray call, one per batch, and
its reply decoded: ``replies``). The batch goes to the shards when that is cheaper:

    per_row_us * width  >  per_pod_us + per_shard_us * shards

The defaults are this 2-core machine's measurements (README "Distributed execution"):
``per_row_us`` from full in-process runs at 100,000 and 1,000,000 nodes (801 and
1,475 µs per pod: 0.015 µs per extra window row), ``per_pod_us`` from full runs forced
through 2 Ray shards against in-process (at 100,000 nodes 2.2-3.2 ms against 0.8 ms per
pod in an earlier round; at 1,000,000 nodes / 10,000 pods, with the shards loaded
before the first pop, 2.48 ms against 2.16 ms, where the replica's window costs ~750
µs: ~1,070 µs more), ``per_shard_us`` from ``benchmarks/shard_protocol_bench.py``
(coordinator CPU per pod at 1, 2 and 3 shards: 6.3-11.4 µs per extra shard with one
call per shard per batch). So here the shards take a batch only from windows of about
100,000 rows (2,000,000 nodes or more); on machines where the shards have cores of
their own, ``per_pod_us`` is the coordinator's part alone. ``mode`` forces one side
("shards", "replica").
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DISPATCH_MODES", "DispatchRule"]

DISPATCH_MODES = ("auto", "shards", "replica")


@dataclass(frozen=True, slots=True)
class DispatchRule:
    mode: str = "auto"
    #: the compiled path's evaluation per window row on the coordinator (µs)
    per_row_us: float = 0.015
    #: the reduced protocol's coordinator work per pod beyond a compiled attempt's (µs)
    per_pod_us: float = 1400.0
    #: and per shard per pod (µs)
    per_shard_us: float = 10.0
    #: the share of a batch given to the shards whose first pods take the compiled path
    #: on the replica instead, while the shards evaluate the others (one call per shard
    #: per batch: the coordinator would otherwise wait for the whole batch's answers)
    lead: float = 0.125
    #: the next batch sent to the shards while this one is committed (``pipeline``)
    pipeline: bool = True

    def __post_init__(self) -> None:
        if self.mode not in DISPATCH_MODES:
            raise ValueError(f"shard dispatch mode {self.mode!r}: one of {DISPATCH_MODES}")

    def replica_cost_us(self, width: int) -> float:
        return self.per_row_us * width

    def shard_cost_us(self, shards: int) -> float:
        return self.per_pod_us + self.per_shard_us * shards

    def leading(self, pods: int) -> int:
        """How many of a batch's ``pods`` given to the shards the replica takes first."""
        return int(pods * self.lead)

    def use_shards(self, width: int, shards: int, batch: int) -> bool:
        """Whether a batch of ``batch`` pods with windows of ``width`` rows goes to the
        ``shards`` (module docstring; a lone pod has nothing to overlap with)."""
        if self.mode != "auto":
            return self.mode == "shards"
        return batch > 1 and self.replica_cost_us(width) > self.shard_cost_us(shards)
