"""Scores a shard computes with its Filter answer, used by the Score phase when exact.

Per pod the sharded protocol needs two fan-outs: Filter over the window, then Score over
the feasible nodes once PreScore has run on the coordinator. A Ray call costs far more
than scoring a few hundred rows, so with its Filter answer a shard also runs PreScore
and Score over the rows of its part that passed (``ShardCore.filter_score``), and the
coordinator keeps those scores here. When the Score phase comes, they answer it without
a second fan-out if they are the scores the shard would have returned then:

- every row to score passed Filter in this attempt (the feasible rows always do: the
  nominated-node pass and extenders only remove rows), and was scored with the same
  CycleState object of the same pod;
- PreScore computed the same state on both sides. The shard's PreScore sees the pod and
  the cluster-wide facts it is sent, not the cluster's pods or controllers; the
  plugins whose PreScore reads nothing else are those ``pre_cycle.KNOWN`` lists, when
  the cross-node ones (InterPodAffinity, PodTopologySpread) Skip and the pod has no
  volumes. So: every PreScore plugin is KNOWN, the pod has no volumes, both cross-node
  plugins Skip on the coordinator, and each shard skipped exactly the plugins the
  coordinator skipped.

Rows the coordinator evaluated itself instead of a shard (``prefetch``: rows
changed since the batch started) are kept as rows only (``keep_local``) and scored by
the Score phase on the replica with the cycle's own state, as the in-process executor
would: no second PreScore on a copy for them.

Otherwise the scores are dropped and Score fans out as before. A score of one node
depends on the pod, the state and that node's row only (normalisation happens on the
coordinator, over the feasible rows), so rows scored early or in another chunk are the
same numbers. Not used while metrics are on, so the Score extension point keeps its own
duration metric; traced, it is used as untraced (the ``score`` span then times the
reading of the kept scores, and the shard calls that computed them are ``shardCall``
spans of the Filter phase or of a ``shardBatch``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.pre_cycle import CROSS_NODE, KNOWN, plugin_names

__all__ = ["SpeculativeScores", "speculation_wanted"]


def speculation_wanted(fwk: Framework, pod: Pod) -> bool:
    """Whether a shard should score with its Filter answer (see the module docstring)."""
    return (
        bool(fwk.score)
        and not fwk.metrics.enabled
        and not pod.volumes
        and not pod.resource_claims
        and plugin_names(fwk.pre_score) <= KNOWN
    )


@dataclass(slots=True)
class _Part:
    rows: np.ndarray
    scores: dict[str, np.ndarray]
    skipped: frozenset[str]


@dataclass(slots=True)
class SpeculativeScores:
    """The scores of the current attempt's passing rows, and how often they served."""

    state: CycleState | None = None
    pod: Pod | None = None
    parts: list[_Part] = field(default_factory=list)
    #: rows to score on the replica with the cycle's state (see the module docstring)
    local: list[np.ndarray] = field(default_factory=list)
    hits: int = 0
    misses: int = 0
    #: rows the Score phase read on the replica instead of a shard's answer
    local_rows: int = 0

    def _for(self, state: CycleState, pod: Pod) -> None:
        if self.state is not state or self.pod is not pod:
            self.state, self.pod, self.parts, self.local = state, pod, [], []

    def keep(
        self,
        state: CycleState,
        pod: Pod,
        rows: np.ndarray,
        scores: dict[str, np.ndarray],
        skipped: frozenset[str],
    ) -> None:
        """Scores of ``rows`` (replica rows that passed Filter) from one shard."""
        self._for(state, pod)
        if len(rows):
            self.parts.append(_Part(rows, scores, skipped))

    def keep_local(self, state: CycleState, pod: Pod, rows: np.ndarray) -> None:
        """``rows`` passed Filter on the replica: Score reads them there."""
        self._for(state, pod)
        if len(rows):
            self.local.append(rows)

    def take(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, table: NodeTable
    ) -> dict[str, np.ndarray] | None:
        """The scores of ``rows`` if they are exact (module docstring), else None."""
        parts, local = self.parts, self.local
        same = self.state is state and self.pod is pod
        self.state, self.pod, self.parts, self.local = None, None, [], []
        if not same or not (parts or local):
            return None
        coordinator_skip = frozenset(state.skip_score_plugins)
        if parts and (
            not CROSS_NODE & plugin_names(fwk.pre_score) <= coordinator_skip
            or any(p.skipped != coordinator_skip for p in parts)
        ):
            self.misses += 1
            return None
        held = np.concatenate([p.rows for p in parts] + local)
        order = np.argsort(held, kind="stable")
        at = np.minimum(np.searchsorted(held[order], rows), len(held) - 1)
        if not np.array_equal(held[order][at], rows):
            self.misses += 1
            return None
        pick = order[at]
        n_shard = sum(len(p.rows) for p in parts)
        from_shard = pick < n_shard
        here = np.flatnonzero(~from_shard)
        computed = fwk.run_score(state, pod, NodeSlice(table, rows[here])) if len(here) else {}
        # every part, and the replica's scores, name the same plugins
        names = set(parts[0].scores) if parts else set(computed)
        if any(set(p.scores) != names for p in parts) or (len(here) and set(computed) != names):
            self.misses += 1
            return None
        out: dict[str, np.ndarray] = {}
        there = np.flatnonzero(from_shard)
        for name in names:
            full = np.zeros(len(rows), dtype=np.int64)
            if parts:
                full[there] = np.concatenate([p.scores[name] for p in parts])[pick[there]]
            if len(here):
                full[here] = computed[name]
            out[name] = full
        self.hits += 1
        self.local_rows += len(here)
        return out

    def counters(self) -> dict[str, int]:
        return {
            "speculative_score_hits": self.hits,
            "speculative_score_misses": self.misses,
            "speculative_score_local_rows": self.local_rows,
        }
