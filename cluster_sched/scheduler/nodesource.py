"""Where Filter and Score run: the seam between the algorithm and the executors.

The coordinator always keeps a full replica of the node columns (``table``): it fixes
the nodeTree order, maps evaluation positions to nodes, and lets PreFilter, nominated
pods and preemption dry-runs read cluster-wide state without a round trip. A NodeSource
evaluates Filter and Score for rows of that replica:

- ``LocalSource``: on the replica itself (the in-process executor, one shard);
- ``ShardedSource``: fanned out to shards that each own a partition (in-process shards,
  or Ray actors), answers merged back in the replica's row order.

Both run the same plugin code on the same columns and the same CycleState, so the
placements of a seeded workload do not depend on the executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import FilterOutcome, Framework
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable


class NodeSource(Protocol):
    table: NodeTable

    def filter(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> FilterOutcome:
        """``prefix``: ``rows`` is ``0..k-1`` of ``table`` (a full scan in row order)."""
        ...

    def score(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> dict[str, np.ndarray]: ...

    def sync_when_idle(self) -> None:
        """Nothing to schedule: push waiting node/pod changes to executors."""
        ...


class LocalSource:
    """Filter and Score on the coordinator's own table."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table

    def filter(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> FilterOutcome:
        return fwk.run_filter(state, pod, NodeSlice(self.table, rows, prefix))

    def score(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> dict[str, np.ndarray]:
        return fwk.run_score(state, pod, NodeSlice(self.table, rows, prefix))

    def sync_when_idle(self) -> None:
        """The replica is the source: never behind."""


def merge_filter_outcomes(
    k: int, parts: Sequence[tuple[np.ndarray, FilterOutcome]]
) -> FilterOutcome:
    """Scatter per-shard outcomes (each for the positions ``idx`` of the request) into
    one outcome for all ``k`` requested rows."""
    codes = np.zeros(k, dtype=np.int8)
    reason_ids = np.zeros(k, dtype=np.int32)
    plugin_idx = np.full(k, -1, dtype=np.int16)
    reasons: list[tuple[str, ...]] = []
    for idx, out in parts:
        v = out.verdicts
        codes[idx] = v.codes
        reason_ids[idx] = v.reason_ids + len(reasons)
        plugin_idx[idx] = out.plugin_idx
        reasons.extend(v.reasons)
    return FilterOutcome(NodeVerdicts(codes, reason_ids, reasons), plugin_idx)


def merge_scores(
    k: int, parts: Sequence[tuple[np.ndarray, dict[str, np.ndarray]]]
) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for idx, scores in parts:
        for name, arr in scores.items():
            full = out.get(name)
            if full is None:
                full = out[name] = np.zeros(k, dtype=np.int64)
            full[idx] = arr
    return out
