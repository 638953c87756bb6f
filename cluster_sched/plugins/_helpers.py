"""Arithmetic shared by score plugins, with Go's integer semantics."""

from __future__ import annotations

import numpy as np

from cluster_sched.framework.interfaces import MAX_NODE_SCORE


def div_trunc(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Integer division truncating toward zero, as Go's ``/`` on int64 (numpy floors)."""
    q = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) < 0) ^ (np.asarray(b) < 0), -q, q)


def default_normalize_score(
    scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> np.ndarray:
    """Upstream helper.DefaultNormalizeScore: scale to [0, max] by the max (reversed if asked)."""
    max_count = int(scores.max()) if len(scores) else 0
    if max_count <= 0:
        return np.full_like(scores, max_priority) if reverse else scores.copy()
    out = div_trunc(max_priority * scores, max_count)
    return max_priority - out if reverse else out
