"""PodTopologySpread's PreScore on one node table, for a stream of pods of one spec:
``scoring.pre_score_partial`` + ``reduce_partials`` without strings or per-row passes.

Per ScheduleAnyway constraint (not hostname), upstream counts the matching pods per
topology value over every node that holds all keys (when required) and passes the
inclusion policies, and keeps the values the scored nodes hold. The counted rows are
node-derived: a ``_ScorePlan`` keeps them per table state (``node_version``, capacity)
and pod-side inputs, and a cycle reads the counts from the PodIndex's running per-code
totals (``label_sums``) when the counted rows are every holder of the key, else sums
the live per-row column over them. The scored nodes' values come from one pass over
the feasible rows' codes.

Values stay label codes: the state's counts are coded ``DomainCounts`` of the table's
interner, which ``scoring.score_rows`` reads through ``dense`` exactly as it reads the
reduced strings. One upstream detail is kept: without required keys (system default
constraints), a counted node missing the label counts under the value "", and a scored
one makes "" a domain; only a node labelled "" reads that count back.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.nodetable.interner import Interner
from cluster_sched.nodetable.podindex import Weight
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import DomainCounts, counts_by_code
from cluster_sched.plugins.podtopologyspread.constraints import (
    HOSTNAME_LABEL,
    Constraint,
    count_spec,
    inclusion_mask,
    keys_present,
)
from cluster_sched.plugins.podtopologyspread.scoring import (
    PreScoreState,
    topology_normalizing_weight,
)

__all__ = ["ScorePlans"]

#: Plans remembered (cleared when full).
PLANS_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class _Counted:
    """One constraint's counted rows (None for hostname: the node's own pods count)."""

    key: str
    col: np.ndarray | None
    interner: Interner[str] | None
    spec: tuple[tuple[object, ...], Weight] | None
    #: the counted rows are every alive holder of the key: read the per-code totals
    full: bool
    #: int64: counted rows holding the key (summed when not ``full``)
    rows: np.ndarray
    #: int64: counted rows missing the key (their pods count under "")
    missing: np.ndarray
    #: code of the value "" (-1: no node is labelled "")
    empty_code: int


@dataclass(frozen=True, slots=True)
class _ScorePlan:
    refs: tuple[object, ...]
    namespace: str
    version: tuple[int, int, int]
    #: bool[cap]: rows holding every key
    has_all: np.ndarray
    parts: tuple[_Counted | None, ...]


class ScorePlans:
    """``state(...)``: the PreScoreState map/reduce gives for one table."""

    def __init__(self) -> None:
        self._plans: dict[Hashable, _ScorePlan] = {}

    def state(
        self,
        pod: Pod,
        constraints: tuple[Constraint, ...],
        require_all: bool,
        table: NodeTable,
        feasible: np.ndarray,
    ) -> PreScoreState:
        """``feasible``: int64 rows in the order Score will see them."""
        plan = self._plan(pod, constraints, require_all, table)
        if require_all:
            ignored = ~plan.has_all[feasible]
            scored = feasible[~ignored]
        else:
            ignored = np.zeros(len(feasible), dtype=bool)
            scored = feasible
        counts: list[DomainCounts] = []
        weights: list[float] = []
        for p in plan.parts:
            if p is None:
                counts.append(DomainCounts.empty())
                weights.append(topology_normalizing_weight(len(scored)))
                continue
            if p.col is None or p.interner is None:
                # no node holds the key: the scored nodes all read "" (no code to score)
                counts.append(DomainCounts.empty())
                weights.append(topology_normalizing_weight(1 if len(scored) else 0))
                continue
            codes = p.col[scored]
            held = codes >= 0
            present = np.flatnonzero(np.bincount(codes[held], minlength=len(p.interner)))
            size = len(present)
            if not held.all():
                # a scored node without the label: "" is a domain (its code, if some node
                # was ever labelled "", carries the count Score reads back)
                if p.empty_code < 0:
                    size += 1
                elif p.empty_code not in present:
                    present = np.union1d(present, [p.empty_code])
                    size += 1
            counts.append(
                DomainCounts.from_codes(p.interner, present, self._counts(table, p, present))
            )
            weights.append(topology_normalizing_weight(size))
        return PreScoreState(constraints, require_all, tuple(counts), tuple(weights), ignored)

    @staticmethod
    def _counts(table: NodeTable, p: _Counted, present: np.ndarray) -> np.ndarray:
        """int64[len(present)]: matching pods counted per present code."""
        assert p.interner is not None
        if p.spec is None or not len(present):
            return np.zeros(len(present), dtype=np.int64)
        index = table.pod_index
        n = len(p.interner)
        if p.full:
            sums = index.label_sums(*p.spec, p.key)[:n]
        else:
            sums, _ = counts_by_code(table, p.key, p.rows, index.query(*p.spec))
        out = sums[present].astype(np.int64)
        if len(p.missing) and p.empty_code >= 0:
            extra = int(index.query(*p.spec)[p.missing].sum())
            out[present == p.empty_code] += extra
        return out

    def _plan(
        self, pod: Pod, constraints: tuple[Constraint, ...], require_all: bool, table: NodeTable
    ) -> _ScorePlan:
        refs = (constraints, pod.node_selector, pod.affinity, pod.tolerations)
        version = (id(table.pod_index), table.node_version, table._cap)
        key = (id(table), require_all, *map(id, refs))
        hit = self._plans.get(key)
        if (
            hit is not None
            and hit.version == version
            and hit.namespace == pod.meta.namespace
            and all(a is b for a, b in zip(hit.refs, refs, strict=True))
        ):
            return hit
        has_all = keys_present(table, constraints)
        alive = np.flatnonzero(table.alive[: table.size])
        if require_all:
            alive = alive[has_all[alive]]
        parts: list[_Counted | None] = []
        for c in constraints:
            if c.topology_key == HOSTNAME_LABEL:
                parts.append(None)
                continue
            col = table.labels.get(c.topology_key)
            interner = table.label_values.get(c.topology_key)
            spec = count_spec(c.selector, pod.meta.namespace)
            empty = np.zeros(0, dtype=np.int64)
            if col is None or interner is None:
                parts.append(_Counted(c.topology_key, None, None, spec, True, empty, empty, -1))
                continue
            rows = alive[inclusion_mask(table, pod, c)[alive]]
            held = col[rows] >= 0
            holders = int(((col[: table.size] >= 0) & table.alive[: table.size]).sum())
            parts.append(
                _Counted(
                    c.topology_key,
                    col,
                    interner,
                    spec,
                    bool(held.sum() == holders),
                    rows[held],
                    rows[~held],
                    interner.get(""),
                )
            )
        if len(self._plans) >= PLANS_CACHE_SIZE:
            self._plans.clear()
        plan = _ScorePlan(refs, pod.meta.namespace, version, has_all, tuple(parts))
        self._plans[key] = plan
        return plan
