"""A popped batch evaluated by the shards in one call each; every pod still committed alone.

What is speculated. When a batch is popped and attempts go to shards (the compiled path
off), the coordinator predicts, for each pod in queue order, the rows its first Filter
call will ask for: the window starts where the previous pod's search ended, and is
predicted to end after numFeasibleNodesToFind rows (every row passing). It runs the
pod's PreFilter against the cluster as it is at the start of the batch and sends each
shard one call holding all the pods (with their CycleStates and rows), which the shard
evaluates against its rows at the start of the batch: Filter, then PreScore and Score
of the rows that passed (``ShardCore.filter_score``). The batch's pods travel in calls of
PREFETCH_CHUNK, queued on each shard in order: the coordinator commits the first pods
while the shards evaluate the next ones.

How it is verified. Pods are still scheduled one at a time, each against the cache as
it is then (earlier pods of the batch assumed). When pod k's cycle asks its first
Filter question, the prefetched answer is used only if all of these hold:

- the same pod object and exactly the predicted rows (a window that moved because an
  earlier pod found infeasible nodes, a nominated node tried first, or a batching hint
  is a different question: no answer);
- the pod's state depends on the pod alone: no volumes, every PreFilter plugin is one
  whose state is the pod's own (``pre_cycle.KNOWN``), the cross-node ones
  (InterPodAffinity, PodTopologySpread) Skip, and the cycle's PreFilter skipped exactly
  the plugins the prefetch's did — so both ran the same plugins on the same pod;
- the node table's version (node membership, labels, taints, allocatable, images) and
  the cluster objects' version (namespaces, PDBs, controllers, storage) are unchanged.

Rows whose pods changed since the batch started (earlier pods of the batch assumed,
bindings confirmed, pods deleted: every change the replica received, recorded by the
router) are filtered again on the coordinator's replica, and those that pass are
scored there by the Score phase, with the cycle's own state after its PreScore (as
the in-process executor scores them); the other rows keep the shards' answers, whose
scores serve the Score phase under ``speculation``'s rules.

Why it is exact. Filter and Score of one node are functions of the pod, its CycleState
and that node's row; the state is the same (same plugins on the same pod), a row
nobody touched is the same, and a touched row is recomputed from the replica, which
the cycle would have read anyway. Everything else (nominated pods' two passes,
normalisation, host selection, assume) runs as without prefetch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import FilterOutcome, Framework
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.extenders import extenders_of, needs_every_feasible_node
from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.nodesource import merge_filter_outcomes
from cluster_sched.scheduler.pre_cycle import CROSS_NODE, KNOWN, PreCycleReuse, plugin_names
from cluster_sched.scheduler.shards.batch_trace import BatchTrace
from cluster_sched.scheduler.shards.speculation import SpeculativeScores, speculation_wanted

__all__ = [
    "PREFETCH_CHUNK",
    "BatchPrefetch",
    "PrefetchItem",
    "predict",
    "predictable_state",
    "state_is_the_pods",
]

PREFETCH_CHUNK = 16
"""Pods per call: a shard answers a batch in calls of this many pods, in order, so the
coordinator commits the first pods while the shard still evaluates the next ones."""


@dataclass(slots=True)
class PrefetchItem:
    """One pod's speculative question: its state after PreFilter and its first rows."""

    pod: Pod
    fwk: Framework
    state: CycleState
    rows: np.ndarray
    skip_filter: frozenset[str]
    node_version: int
    objects_version: int
    #: which of the batch's calls per shard carries it (PREFETCH_CHUNK pods per call)
    chunk: int = 0
    #: per shard: (positions in ``rows``, the shard's reply) once the answer is read
    parts: list[tuple[np.ndarray, Any]] = field(default_factory=list)


def state_is_the_pods(fwk: Framework, pod: Pod, state: CycleState) -> bool:
    """The state after PreFilter depends on the pod alone (module docstring)."""
    present = plugin_names(fwk.pre_filter)
    return (
        not pod.volumes
        and not pod.resource_claims
        and present <= KNOWN
        and (present & CROSS_NODE) <= state.skip_filter_plugins
    )


def predictable_state(
    fwk: Framework | None, pod: Pod, snapshot: Any, pre_cycle: PreCycleReuse | None = None
) -> CycleState | None:
    """The pod's state after PreFilter when its first Filter question can be predicted
    and answered by a shard (module docstring), else None. ``pre_cycle``: the cycle's
    shared PreFilter answers (``pre_cycle``), so a pod of a known shape costs a copy
    here, and its cycle's own PreFilter then a copy again, not two runs of its plugins."""
    if (
        fwk is None
        or not fwk.filter
        or pod.nominated_node_name
        or extenders_of(fwk)
        or not needs_every_feasible_node(fwk)
        or not speculation_wanted(fwk, pod)
    ):
        return None
    state = CycleState()
    if pre_cycle is not None and isinstance(snapshot, Snapshot):
        pre_res, status, _ = pre_cycle.pre_filter(fwk, state, pod, snapshot)
    else:
        pre_res, status, _ = fwk.run_pre_filter(state, pod, snapshot)
    if pre_res is not None or not status.is_success or not state_is_the_pods(fwk, pod, state):
        return None
    return state


def predict(
    frameworks: Mapping[str, Framework],
    pods: Sequence[Pod],
    table: NodeTable,
    snapshot: Any,
    next_start: int,
    percentage: int | None,
    nominated: bool,
) -> list[PrefetchItem]:
    """The questions of ``pods``' first Filter calls, in order, as long as each can be
    predicted (the first pod that cannot ends the list: later windows depend on it)."""
    order = table.order()
    n = len(order)
    items: list[PrefetchItem] = []
    objects_version = int(getattr(snapshot, "objects_version", 0))
    for pod in pods:
        fwk = frameworks.get(pod.scheduler_name)
        state = predictable_state(fwk, pod, snapshot) if n else None
        if fwk is None or state is None:
            break
        pct = fwk.percentage_of_nodes_to_score
        to_find = num_feasible_nodes_to_find(pct if pct is not None else percentage, n)
        if to_find >= n and n == table.size and not nominated:
            rows = np.arange(n, dtype=np.int64)  # the full scan, in row order
            processed = n
        else:
            start = next_start % n
            window = min(n, max(to_find, 64))
            rows = np.concatenate((order[start:], order[:start]))[:window]
            processed = to_find
        items.append(
            PrefetchItem(
                pod,
                fwk,
                state,
                rows,
                frozenset(state.skip_filter_plugins),
                table.node_version,
                objects_version,
                chunk=len(items) // PREFETCH_CHUNK,
            )
        )
        next_start = (next_start + processed) % n
    return items


class BatchPrefetch:
    """The prefetched answers of the current batch, taken by each pod's first Filter."""

    def __init__(self) -> None:
        self.items: dict[str, PrefetchItem] = {}
        self._mask = np.zeros(0, dtype=bool)
        self.hits = 0
        self.misses = 0
        #: the batch's spans while tracing is on (``batch_trace``), else None
        self.trace: BatchTrace | None = None

    def counters(self) -> dict[str, int]:
        return {"prefetch_hits": self.hits, "prefetch_misses": self.misses}

    def clear(self) -> None:
        self.items.clear()
        if self.trace is not None:
            self.trace.close()
            self.trace = None

    def traced(self, items: Sequence[PrefetchItem], shards: int) -> None:
        """The batch ``items`` is about to be sent to ``shards`` shards: its spans."""
        chunks = max(it.chunk for it in items) + 1
        self.trace = BatchTrace.start(items[0].fwk.tracing, "prefetch", len(items), chunks, shards)

    def sent(self, chunk: int, shard: int) -> None:
        if self.trace is not None:
            self.trace.call(chunk, shard)

    def answered(self, chunk: int, shard: int) -> None:
        if self.trace is not None:
            self.trace.answered(chunk, shard)

    def take(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        rows: np.ndarray,
        table: NodeTable,
        touched: set[int],
        scores: SpeculativeScores,
        read: Any,
    ) -> FilterOutcome | None:
        """The Filter outcome for ``rows`` from the prefetch, or None (module docstring).
        ``read(item)`` fills ``item.parts`` with the shards' replies (may raise)."""
        item = self.items.pop(pod.key, None)
        if item is None:
            return None
        snapshot = fwk.handle.snapshot
        if (
            item.pod is not pod
            or item.fwk is not fwk
            or not np.array_equal(item.rows, rows)
            or frozenset(state.skip_filter_plugins) != item.skip_filter
            or item.node_version != table.node_version
            or item.objects_version != int(getattr(snapshot, "objects_version", 0))
        ):
            self.misses += 1
            return None
        read(item)
        stale_at = self._touched_at(rows, touched)
        stale = np.flatnonzero(stale_at)
        parts: list[tuple[np.ndarray, FilterOutcome]] = []
        for idx, (outcome, passing, shard_scores, skipped) in item.parts:
            parts.append((idx, outcome))
            if shard_scores is None:
                continue
            keep = ~stale_at[idx[passing]]
            scores.keep(
                state,
                pod,
                rows[idx[passing][keep]],
                {k: v[keep] for k, v in shard_scores.items()},
                skipped,
            )
        if len(stale):
            parts.append((stale, self._again(fwk, state, pod, rows[stale], table, scores)))
        self.hits += 1
        if self.trace is not None:
            self.trace.link()  # this pod's cycle read the batch's answer
        return merge_filter_outcomes(len(rows), parts)

    def _touched_at(self, rows: np.ndarray, touched: set[int]) -> np.ndarray:
        """Which of ``rows`` are in ``touched``: a scratch mask over the table's rows,
        set and cleared per call (np.isin sorts both sides: ~10% of an attempt)."""
        if not touched:
            return np.zeros(len(rows), dtype=bool)
        marks = np.fromiter(touched, dtype=np.int64, count=len(touched))
        size = max(int(marks.max()), int(rows.max(initial=-1))) + 1
        if len(self._mask) < size:
            self._mask = np.zeros(max(size, 2 * len(self._mask)), dtype=bool)
        self._mask[marks] = True
        try:
            return self._mask[rows]
        finally:
            self._mask[marks] = False

    @staticmethod
    def _again(
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        rows: np.ndarray,
        table: NodeTable,
        scores: SpeculativeScores,
    ) -> FilterOutcome:
        """Rows changed since the batch started, Filter on the replica; those that pass
        are scored there too, by the Score phase with the cycle's state (``speculation``)."""
        outcome = fwk.run_filter(state, pod, NodeSlice(table, rows))
        scores.keep_local(state, pod, rows[outcome.passed])
        return outcome
