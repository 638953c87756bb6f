"""The numpy path the kernels must equal: same signature as ``evaluate_pod``, built from
the plugins' own functions (NodeResourcesFit's verdicts and scores, BalancedAllocation's
scores, DefaultNormalizeScore) and the cycle's window rule (algorithm.py: windows that
double until ``to_find`` feasible nodes are found, evaluation stopping right after the
last of them). It is the oracle of ``tests/kernels`` and the baseline of
``benchmarks/kernel_bench.py``.
"""

from __future__ import annotations

import numpy as np

from cluster_sched.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, NodeSlice
from cluster_sched.kernels import fused
from cluster_sched.kernels.inputs import Evaluation, KernelProfile, PodQuery
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins._helpers import default_normalize_score
from cluster_sched.plugins.noderesources.balanced_allocation import balanced_scores
from cluster_sched.plugins.noderesources.fit import fit_verdicts, resource_scores

#: algorithm._find_nodes_that_pass_filters' smallest window
MIN_WINDOW = 64


def find_feasible(
    table: NodeTable, query: PodQuery, to_find: int, order: np.ndarray
) -> tuple[np.ndarray, int]:
    """Feasible rows in evaluation order and how many nodes were evaluated."""
    n = len(order)
    start = query.start % n
    rotated = np.concatenate((order[start:], order[:start])) if start else order
    window = min(n, max(to_find, MIN_WINDOW))
    parts: list[np.ndarray] = []
    found = pos = 0
    while pos < n and found < to_find:
        chunk = rotated[pos : pos + window]
        passed = fit_verdicts(NodeSlice(table, chunk), query.requests.checked).codes == 0
        for mask in query.masks:
            passed &= np.asarray(mask, dtype=bool)[chunk]
        cum = np.cumsum(passed)
        if found + int(cum[-1]) >= to_find:
            cut = int(np.searchsorted(cum, to_find - found)) + 1
        else:
            cut = len(chunk)
        parts.append(chunk[:cut][passed[:cut]])
        found += int(passed[:cut].sum())
        pos += cut
        window = min(n - pos, window * 2)
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), pos


def evaluate_pod_reference(
    table: NodeTable,
    profile: KernelProfile,
    query: PodQuery,
    to_find: int,
    order: np.ndarray | None = None,
) -> Evaluation:
    """``kernels.evaluate_pod`` in numpy."""
    if to_find < 1:
        raise ValueError(f"to_find must be >= 1 (numFeasibleNodesToFind), got {to_find}")
    order = table.order() if order is None else np.asarray(order, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    if len(order) == 0:
        return Evaluation(empty, empty, 0, 0, empty)
    feasible, evaluated = find_feasible(table, query, to_find, order)
    k = len(feasible)
    if k < 2:  # schedule_pod takes the only feasible node without scoring
        return Evaluation(feasible, np.zeros(k, dtype=np.int64), evaluated, 0, np.arange(k))
    nodes = NodeSlice(table, feasible)
    req = query.requests
    weighted: list[tuple[np.ndarray, int]] = []
    if profile.fit_weight:
        scores = resource_scores(nodes, profile.fit.resources, profile.scorer, req.fit_score)
        weighted.append((scores, profile.fit_weight))
    ba = profile.balanced
    if ba is not None and profile.balanced_weight and req.balanced is not None:
        weighted.append(
            (balanced_scores(nodes, ba.resources, req.balanced), profile.balanced_weight)
        )
    for s in query.normalized:
        weighted.append((default_normalize_score(s.raw[feasible], s.reverse), s.weight))
    status = fused.STATUS_OK
    totals = np.zeros(k, dtype=np.int64)
    for scores, weight in weighted:
        # Framework.normalize_scores' range check, then weighted_total
        if scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE:
            status = fused.STATUS_INVALID_SCORE
        totals += scores * weight
    if query.extra is not None:
        totals += query.extra[feasible]
    best = int(totals.max())
    return Evaluation(feasible, totals, evaluated, best, np.flatnonzero(totals == best), status)
