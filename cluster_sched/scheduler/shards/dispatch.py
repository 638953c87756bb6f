"""Dispatch by measured cost: the compiled path on the replica, or the shards' reductions.

The rule compares the rate each side can sustain, not the coordinator's CPU alone. A
pod's attempt costs, in CPU per pod (µs), with W the window (numFeasibleNodesToFind
rows) and S the shards:

- on the replica: the coordinator ``replica_us + replica_row_us * W`` (the compiled
  path evaluates the whole window there);
- through the shards' reductions: the coordinator ``coordinator_us + coordinator_row_us
  * W + per_shard_us * S`` (prediction, the shared payload, merging the reductions,
  the changed rows rescored: what grows with W is the tie bits and the rows corrected),
  and each shard ``shard_us + shard_row_us * W / S`` (its share of the window);
- beside them Redis, Ray's daemons and the binding tasks' workers: ``replica_rest_us``
  on the replica path, ``shard_rest_us`` through the shards (their calls and the
  pipeline's queue peeks cost Ray's daemons and Redis more).

The coordinator is serial and so is each shard; everything shares ``cores`` (the host's,
when the shards are Ray actors on it). So a side's time per pod is the largest of its
serial parts and its total CPU over the cores:

    replica:  max(R, (R + replica_rest) / cores)
    shards:   max(C, H, (C + S*H + shard_rest) / cores)       R, C, H: the parts above

and a batch goes to the shards when theirs is the shorter (the higher rate). The
previous rule compared the coordinator's CPU alone (``per_row_us * W`` against a fixed
per-pod cost standing for the shards' work) and so could not tell that at 1,000,000
nodes on 2 cores the shards' CPU, although it competes with the coordinator's, is
spread over both cores while the replica's window is the coordinator's alone: it kept
1,000,000-node windows on the replica where forced shards ran 1.15-1.19x faster.
In-process shards (``shards_apart`` False) run in the coordinator's thread, so
nothing overlaps: auto keeps their attempts on the replica (they exist to check the
protocol; the parts above were measured with Ray actors).

Constants: this 2-core machine's measurements at two sizes, 100,000 nodes / 10,000
pods (W = 5,000) and 1,000,000 nodes / 30,000 pods (W = 50,000), SchedulingBasic's
3-zone shape, each process's CPU per pod over the scheduling window, fitted as lines in
W through the two sizes: ``PYTHONPATH=. .venv/bin/python benchmarks/dispatch_bench.py
run --nodes N --pods P --modes local auto shards --save PN`` at both sizes, then
``benchmarks/dispatch_bench.py fit P100K P1M`` (issue 22, this stop):

- ``replica_us``, ``replica_row_us``: the coordinator with the Ray executor and its
  attempts on the replica (auto at 100,000 nodes, 4 runs: 314-398 µs per pod, mean 358);
  at 1,000,000 nodes the in-process coordinator (1,642-1,726 µs, 2 runs) plus the 40 µs
  the Ray executor added to it at 100,000 nodes (in-process 281-349, 4 runs): 1,723;
- ``coordinator_us``, ``coordinator_row_us``, ``shard_us``, ``shard_row_us``: the
  coordinator and each shard with 2 Ray shards answering every attempt (forced at
  100,000 nodes, 1 run: 469 and 158 µs; auto at 1,000,000, 2 runs: 720-742 and 559-578);
- ``per_shard_us``: ``benchmarks/shard_protocol_bench.py --nodes 20000 --attempt-pods
  1280`` (coordinator CPU per pod at 1, 2 and 3 shards: 8.2 µs per extra shard, stop
  31), taken out of ``coordinator_us``;
- ``replica_rest_us``, ``shard_rest_us``: Redis + Ray's daemons + binding workers per
  pod over those runs of each side (replica 242; shards 344 at 100,000 nodes and 436 at
  1,000,000, mean 390).

So with 2 shards on 2 cores the shards take windows from about 18,000 rows (360,000
nodes); 100,000 nodes stay on the replica (predicted 2,795 pods/s there against 1,702
through the shards), 1,000,000 go to the shards (886 against 580). ``mode`` forces one
side ("shards", "replica"). ``summary.json``'s ``shard_speculation`` counts where the
attempts went: ``reduced_attempts`` (answered by the shards), ``dispatched_to_replica``
(attempts of batches the rule kept on the replica).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["DISPATCH_MODES", "DispatchRule"]

DISPATCH_MODES = ("auto", "shards", "replica")


def _host_cores() -> float:
    return float(os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class DispatchRule:
    mode: str = "auto"
    #: the coordinator's CPU per pod on the replica path, and per window row (µs)
    replica_us: float = 206.0
    replica_row_us: float = 0.03035
    #: the coordinator's CPU per pod through the shards' reductions, per window row, and
    #: per shard (µs)
    coordinator_us: float = 423.5
    coordinator_row_us: float = 0.00583
    per_shard_us: float = 8.2
    #: each shard's CPU per pod, and per row of its share of the window (µs)
    shard_us: float = 112.4
    shard_row_us: float = 0.01824
    #: Redis, Ray's daemons and binding workers per pod, on each side (µs)
    replica_rest_us: float = 241.8
    shard_rest_us: float = 390.2
    #: cores the coordinator, the shards and the rest share (this host's)
    cores: float = field(default_factory=_host_cores)
    #: the shards run in processes of their own (Ray actors), not in the coordinator's
    shards_apart: bool = True
    #: the share of a batch given to the shards whose first pods take the compiled path
    #: on the replica instead, while the shards evaluate the others (one call per shard
    #: per batch: the coordinator would otherwise wait for the whole batch's answers)
    lead: float = 0.125
    #: the next batch sent to the shards while this one is committed (``pipeline``)
    pipeline: bool = True

    def __post_init__(self) -> None:
        if self.mode not in DISPATCH_MODES:
            raise ValueError(f"shard dispatch mode {self.mode!r}: one of {DISPATCH_MODES}")

    def replica_time_us(self, width: int) -> float:
        """Time per pod on the replica path (module docstring)."""
        coordinator = self.replica_us + self.replica_row_us * width
        return max(coordinator, (coordinator + self.replica_rest_us) / self.cores)

    def shard_time_us(self, width: int, shards: int) -> float:
        """Time per pod through the shards' reductions (module docstring)."""
        coordinator = (
            self.coordinator_us + self.coordinator_row_us * width + self.per_shard_us * shards
        )
        shard = self.shard_us + self.shard_row_us * width / max(1, shards)
        total = coordinator + shards * shard + self.shard_rest_us
        return max(coordinator, shard, total / self.cores)

    def leading(self, pods: int) -> int:
        """How many of a batch's ``pods`` given to the shards the replica takes first."""
        return int(pods * self.lead)

    def use_shards(self, width: int, shards: int, batch: int) -> bool:
        """Whether a batch of ``batch`` pods with windows of ``width`` rows goes to the
        ``shards`` (module docstring; a lone pod has nothing to overlap with)."""
        if self.mode != "auto":
            return self.mode == "shards"
        return (
            self.shards_apart
            and batch > 1
            and self.shard_time_us(width, shards) < self.replica_time_us(width)
        )
