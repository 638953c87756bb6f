"""How many nodes an attempt evaluates and which of the best it takes (upstream
numFeasibleNodesToFind and selectHost): small rules the cycle, explain and benchmarks
share."""

from __future__ import annotations

import random

import numpy as np

__all__ = [
    "HIGHEST_SCORED_NODES_TO_REPORT",
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "num_feasible_nodes_to_find",
    "select_host",
]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
#: numberOfHighestScoredNodesToReport
HIGHEST_SCORED_NODES_TO_REPORT = 3


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """Adaptive percentageOfNodesToScore: max(5, 50 - n/125) %, never fewer than 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        pct = max(pct, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    n = num_all_nodes * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(
    totals: np.ndarray, rng: random.Random, count: int = HIGHEST_SCORED_NODES_TO_REPORT
) -> tuple[int, list[int]]:
    """Uniform choice among the top-scoring nodes (upstream's reservoir sampling has the
    same distribution), plus the ``count`` best indices with the chosen one first."""
    best = int(totals.max())
    ties = np.flatnonzero(totals == best)
    chosen = int(ties[rng.randrange(len(ties))]) if len(ties) > 1 else int(ties[0])
    k = min(count + 1, len(totals))
    best_k = np.argpartition(-totals, k - 1)[:k] if k < len(totals) else np.arange(len(totals))
    order = best_k[np.lexsort((best_k, -totals[best_k]))].tolist()
    top = [chosen] + [i for i in order if i != chosen]
    return chosen, top[:count]
