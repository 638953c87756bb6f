"""PodTopologySpread PreScore (map/reduce), Score and NormalizeScore.

For ScheduleAnyway constraints, upstream:

- ignores feasible nodes missing a topology key (unless the constraints are the system
  defaults, so zone-less nodes still get hostname spreading; their missing zone then
  reads as the value "");
- takes as domains the values the remaining feasible nodes hold, and counts matching
  pods per domain over *all* nodes that hold every key (when required) and pass the
  inclusion policies; hostname constraints count the scored node's own pods instead;
- weighs each constraint by ``log(number of domains + 2)`` (for hostname, the number
  of scored nodes), scores ``count * weight + maxSkew - 1`` summed over constraints and
  rounded half away from zero, then normalizes so the least crowded node gets 100.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.interfaces import MAX_NODE_SCORE
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import DomainCounts, merge_domain_counts, value_array
from cluster_sched.plugins.podtopologyspread.constraints import (
    HOSTNAME_LABEL,
    Constraint,
    count_query,
    inclusion_mask,
    keys_present,
)

#: upstream invalidScore: marks ignored nodes between Score and NormalizeScore
INVALID_SCORE = -1


@dataclass(frozen=True, slots=True)
class ScorePartial:
    """One table's share: per constraint, the domains its scored nodes hold and the
    matching-pod counts per value over all its counted nodes; plus how many of its
    feasible nodes were scored and which (in ``feasible`` order) were ignored."""

    domains: tuple[frozenset[str], ...]
    counts: tuple[DomainCounts, ...]
    scored: int
    ignored: np.ndarray


def _value_sums(
    table: NodeTable, key: str, rows: np.ndarray, weights: np.ndarray | None
) -> dict[str, int]:
    """Per value of label ``key`` over ``rows`` (absent label reads as ""): the sum of
    ``weights``, or with ``weights`` None the number of rows. Aggregated by code first,
    so strings are touched once per distinct value."""
    col = table.labels.get(key)
    interner = table.label_values.get(key)
    w = np.ones(len(rows), dtype=np.int64) if weights is None else weights
    if weights is not None:
        nz = w != 0
        rows, w = rows[nz], w[nz]
    out: dict[str, int] = {}
    if col is None or interner is None:
        if len(rows):
            out[""] = int(w.sum())
        return out
    codes = col[rows]
    has = codes >= 0
    sums = np.bincount(codes[has], weights=w[has], minlength=len(interner))
    keep = (sums != 0).nonzero()[0]
    for value, total in zip(value_array(interner)[keep].tolist(), sums[keep].tolist(), strict=True):
        out[value] = round(total)
    if not has.all():
        out[""] = out.get("", 0) + int(w[~has].sum())
    return out


def pre_score_partial(
    pod: Pod,
    constraints: tuple[Constraint, ...],
    require_all: bool,
    table: NodeTable,
    feasible_rows: np.ndarray,
) -> ScorePartial:
    """MAP over one table. ``feasible_rows`` are this table's feasible nodes (rows)."""
    has_all = keys_present(table, constraints)
    ignored = ~has_all[feasible_rows] if require_all else np.zeros(len(feasible_rows), dtype=bool)
    scored_rows = feasible_rows[~ignored]
    alive = np.flatnonzero(table.alive[: table.size])
    if require_all:
        alive = alive[has_all[alive]]
    domains: list[frozenset[str]] = []
    counts: list[DomainCounts] = []
    for c in constraints:
        if c.topology_key == HOSTNAME_LABEL:
            domains.append(frozenset())
            counts.append(DomainCounts.empty())
            continue
        domains.append(frozenset(_value_sums(table, c.topology_key, scored_rows, None)))
        rows = alive[inclusion_mask(table, pod, c)[alive]]
        per_row = count_query(table, c.selector, pod.meta.namespace)[rows]
        totals = _value_sums(table, c.topology_key, rows, per_row)
        counts.append(DomainCounts.from_values(list(totals), list(totals.values())))
    return ScorePartial(tuple(domains), tuple(counts), len(scored_rows), ignored)


def topology_normalizing_weight(size: int) -> float:
    """upstream topologyNormalizingWeight: log(size + 2)."""
    return math.log(float(size + 2))


@dataclass(frozen=True, slots=True)
class PreScoreState:
    constraints: tuple[Constraint, ...]
    require_all: bool
    #: per constraint: domain value -> matching pods (empty for hostname)
    counts: tuple[DomainCounts, ...]
    weights: tuple[float, ...]
    #: bool[len(feasible)]: ignored nodes, in the order NormalizeScore receives scores
    ignored: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def reduce_partials(
    constraints: tuple[Constraint, ...], require_all: bool, parts: Sequence[ScorePartial]
) -> PreScoreState:
    """REDUCE: union the domains, sum counts restricted to them, weigh each constraint."""
    counts: list[DomainCounts] = []
    weights: list[float] = []
    scored = sum(p.scored for p in parts)
    for i, c in enumerate(constraints):
        if c.topology_key == HOSTNAME_LABEL:
            counts.append(DomainCounts.empty())
            weights.append(topology_normalizing_weight(scored))
            continue
        domain: set[str] = set()
        for p in parts:
            domain |= p.domains[i]
        merged = merge_domain_counts([p.counts[i] for p in parts])
        have = dict(merged.items())
        values = sorted(domain)
        counts.append(DomainCounts.from_values(values, [have.get(v, 0) for v in values]))
        weights.append(topology_normalizing_weight(len(domain)))
    ignored = np.concatenate([p.ignored for p in parts]) if parts else np.zeros(0, dtype=bool)
    return PreScoreState(constraints, require_all, tuple(counts), tuple(weights), ignored)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """Go's math.Round for non-negative floats (np.round rounds half to even)."""
    f = np.floor(x)
    return (f + (x - f >= 0.5)).astype(np.int64)


def score_rows(s: PreScoreState, pod: Pod, table: NodeTable, rows: np.ndarray) -> np.ndarray:
    """int64[k]: raw scores; ignored nodes score 0."""
    k = len(rows)
    total = np.zeros(k, dtype=np.float64)
    for i, c in enumerate(s.constraints):
        col = table.labels.get(c.topology_key)
        if col is None:
            continue
        codes = col[rows]
        has = codes >= 0
        if c.topology_key == HOSTNAME_LABEL:
            cnt = count_query(table, c.selector, pod.meta.namespace)[rows]
        else:
            cnt = s.counts[i].dense(table.label_values.get(c.topology_key))[codes]
        add = cnt.astype(np.float64) * s.weights[i] + float(c.max_skew - 1)
        total += np.where(has, add, 0.0)
    out = _round_half_away(total)
    if s.require_all:
        out[~keys_present(table, s.constraints)[rows]] = 0
    return out


def normalize(s: PreScoreState, scores: np.ndarray) -> np.ndarray:
    """upstream NormalizeScore: 100 * (max + min - score) / max over scored nodes;
    ignored nodes get 0; all 100 when the max is 0."""
    if len(s.ignored) == len(scores):
        ignored = s.ignored
    else:
        ignored = np.zeros(len(scores), dtype=bool)
    valid = ~ignored
    if not valid.any():
        return np.zeros_like(scores)
    lo = int(scores[valid].min())
    hi = max(int(scores[valid].max()), 0)
    if hi == 0:
        out = np.full_like(scores, MAX_NODE_SCORE)
    else:
        out = MAX_NODE_SCORE * (hi + lo - scores) // hi
    out[ignored] = 0
    return out
