"""Which Score plugins the compiled kernels take, and their raw score columns.

The coordinator's compiled path (``fast_path``) and a shard's (``shards.compiled``) feed
the same fused kernel: NodeResourcesFit and BalancedAllocation are computed inside it
from the node columns; TaintToleration and NodeAffinity are scored by their plugins and
normalised by the kernel over the feasible set (DefaultNormalizeScore, reversed for
taints); ImageLocality's scores are used as they are. One builder for both, so the
two paths cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.kernels import NormalizedScore
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names

__all__ = ["AS_IS_SCORES", "FUSED_SCORES", "NORMALIZED_SCORES", "score_columns"]

#: computed inside the kernel from the node columns
FUSED_SCORES = frozenset({names.NODE_RESOURCES_FIT, names.NODE_RESOURCES_BALANCED_ALLOCATION})
#: plugin -> reverse: normalised by the kernel over the feasible rows
NORMALIZED_SCORES = {names.TAINT_TOLERATION: True, names.NODE_AFFINITY: False}
#: no NormalizeScore: weighted into the kernel's extra column as they are
AS_IS_SCORES = frozenset({names.IMAGE_LOCALITY})


def score_columns(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    active: Sequence[Any],
    nodes: NodeSlice,
    rows: np.ndarray,
) -> tuple[tuple[NormalizedScore, ...], np.ndarray | None]:
    """The non-fused plugins' raw scores on ``rows`` (int64[capacity] columns): the
    normalised ones for the kernel to normalise, the others pre-weighted into one."""
    cap = table.allocatable.shape[1]
    normalized: list[NormalizedScore] = []
    extra: np.ndarray | None = None
    for pl in active:
        if pl.name in FUSED_SCORES:
            continue
        col = np.zeros(cap, dtype=np.int64)
        col[rows] = np.asarray(pl.score(state, pod, nodes), dtype=np.int64)
        weight = fwk.score_weights.get(pl.name, 1)
        if pl.name in NORMALIZED_SCORES:
            normalized.append(NormalizedScore(col, NORMALIZED_SCORES[pl.name], weight))
        else:
            extra = col * weight if extra is None else extra + col * weight
    return tuple(normalized), extra
