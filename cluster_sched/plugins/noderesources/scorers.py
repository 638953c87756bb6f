"""The three NodeResourcesFit scoring strategies and BalancedAllocation's scorer, over
(allocatable, requested) int64[m, k] matrices (one row per configured resource), with
upstream's integer arithmetic. Reductions run over the short resource axis (0)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cluster_sched.config.plugin_args import (
    MAX_CUSTOM_PRIORITY_SCORE,
    ResourceSpec,
    UtilizationShapePoint,
)
from cluster_sched.framework.interfaces import MAX_NODE_SCORE
from cluster_sched.plugins._helpers import div_trunc

Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]
MAX_UTILIZATION = 100


INT64_MAX = 2**63 - 1

#: Below this, float64 division of non-negative integers floors exactly like Go's int64
#: division (the quotient's fractional gap 1/b stays far above float64's rounding error).
EXACT_FLOAT_LIMIT = 2**46


def floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a // b for non-negative int64 arrays with b > 0: float64 when exact, else int64."""
    if a.size and (a.max() >= EXACT_FLOAT_LIMIT or b.max() >= EXACT_FLOAT_LIMIT):
        return a // b
    return np.floor(a / b).astype(np.int64)


def scaled_floor_div(n: np.ndarray, scale: int, d: np.ndarray) -> np.ndarray:
    """``n * scale // d`` for int64 ``n >= 0`` and ``d > 0``, exact where ``n * scale``
    would pass int64.

    Upstream computes e.g. ``requested * MaxNodeScore / capacity`` in int64, which wraps
    once requested passes 2**63 / 100 (about 9.2e16: 92 PB of memory, or 92 billion cores
    in milli-units); the result there is garbage, a negative score the framework rejects.
    Every value our parser admits fits int64, so computing those few cells in Python
    integers gives upstream's result wherever upstream does not overflow, and the
    mathematically right one where it does.
    """
    limit = INT64_MAX // scale
    if not n.size or n.max() <= limit:
        return floor_div(n * scale, d)
    big = n > limit
    out = floor_div(np.where(big, 0, n) * scale, d)
    divisors = np.broadcast_to(d, n.shape)[big].tolist()
    out[big] = [v * scale // w for v, w in zip(n[big].tolist(), divisors, strict=True)]
    return out


def _weighted_mean(
    per_resource: np.ndarray, counted: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    w = np.where(counted, weights[:, None], 0)
    total = (per_resource * w).sum(axis=0)
    wsum = w.sum(axis=0)
    return np.where(wsum > 0, total // np.maximum(wsum, 1), 0)


def least_allocated(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = np.asarray([r.weight for r in resources], dtype=np.int64)

    def score(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
        if alloc.size and alloc.min() > 0:
            # every resource counted: no masks needed
            per = scaled_floor_div(np.maximum(alloc - req, 0), MAX_NODE_SCORE, alloc)
            return (weights @ per) // int(weights.sum())
        safe = np.maximum(alloc, 1)
        left = scaled_floor_div(np.maximum(alloc - req, 0), MAX_NODE_SCORE, safe)
        per = np.where((alloc > 0) & (req <= alloc), left, 0)
        return _weighted_mean(per, alloc > 0, weights)

    return score


def most_allocated(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = np.asarray([r.weight for r in resources], dtype=np.int64)

    def score(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
        if alloc.size and alloc.min() > 0:
            per = scaled_floor_div(np.minimum(req, alloc), MAX_NODE_SCORE, alloc)
            return (weights @ per) // int(weights.sum())
        safe = np.maximum(alloc, 1)
        used = scaled_floor_div(np.clip(req, 0, alloc), MAX_NODE_SCORE, safe)
        per = np.where(alloc > 0, used, 0)
        return _weighted_mean(per, alloc > 0, weights)

    return score


def broken_linear(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """Upstream BuildBrokenLinearFunction over int64 utilisations ``p`` (Go truncation)."""
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(shape):
        hit = ~done & (p <= u)
        if i == 0:
            val = np.full(p.shape, s, dtype=np.int64)
        else:
            pu, ps = shape[i - 1]
            val = ps + div_trunc((s - ps) * (p - pu), u - pu)
        out = np.where(hit, val, out)
        done |= hit
    return out


def requested_to_capacity_ratio(
    resources: Sequence[ResourceSpec], shape: Sequence[UtilizationShapePoint]
) -> Scorer:
    weights = np.asarray([r.weight for r in resources], dtype=np.int64)
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = [(pt.utilization, pt.score * scale) for pt in shape]

    def score(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
        safe = np.maximum(alloc, 1)
        over = (alloc == 0) | (req > alloc)
        util = np.where(
            over, MAX_UTILIZATION, scaled_floor_div(np.where(over, 0, req), MAX_UTILIZATION, safe)
        )
        per = broken_linear(points, util)
        counted = (alloc > 0) & (per > 0)
        w = np.where(counted, weights[:, None], 0)
        total = (per * w).sum(axis=0)
        wsum = w.sum(axis=0)
        # math.Round of a non-negative ratio: half away from zero.
        return np.where(wsum > 0, (2 * total + wsum) // np.maximum(2 * wsum, 1), 0)

    return score


def balanced_allocation(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """int64[k]: (1 - std of the used fractions) * 100, float64 in upstream's order."""
    m, k = alloc.shape
    if m == 2 and k and alloc.min() > 0:
        # the common case (cpu, memory, both allocatable): std = |f0 - f1| / 2
        f0 = np.minimum(req[0] / alloc[0], 1.0)
        f1 = np.minimum(req[1] / alloc[1], 1.0)
        return ((1 - np.abs((f0 - f1) / 2)) * float(MAX_NODE_SCORE)).astype(np.int64)
    valid = alloc > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(
            valid, np.minimum(req / np.where(valid, alloc, 1).astype(np.float64), 1.0), 0.0
        )
    count = valid.sum(axis=0)
    std = np.zeros(k, dtype=np.float64)
    two = count == 2
    if two.any():
        # the two valid fractions in resource order: first and last valid row
        first = np.argmax(valid, axis=0)
        last = m - 1 - np.argmax(valid[::-1], axis=0)
        f0 = frac[first, np.arange(k)]
        f1 = frac[last, np.arange(k)]
        std = np.where(two, np.abs((f0 - f1) / 2), std)
    many = count > 2
    if many.any():
        total = np.zeros(k, dtype=np.float64)
        for j in range(m):  # sequential sums over resources, as Go's loop adds them
            total = total + np.where(valid[j], frac[j], 0.0)
        mean = total / np.maximum(count, 1)
        acc = np.zeros(k, dtype=np.float64)
        for j in range(m):
            d = frac[j] - mean
            acc = acc + np.where(valid[j], d * d, 0.0)
        std = np.where(many, np.sqrt(acc / np.maximum(count, 1)), std)
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
