"""The per-pod verdict columns of the cross-node Filter plugins a shape carries
(``fast_path``): PodTopologySpread and InterPodAffinity read only their PreFilter
state (counts per topology domain, as of the pod's own PreFilter) and the nodes'
labels, so each pod's verdict over every row is the shape's other-plugin column ANDed
with theirs; a whole-batch run carries the same counts in the kernel instead
(``kernels.spread``, ``kernels.affinity``)."""

from __future__ import annotations

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names
from cluster_sched.plugins.podtopologyspread import filtering as spread_filtering
from cluster_sched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY as SPREAD_KEY

__all__ = ["CARRIED_FILTERS", "affinity_mask", "spread_mask"]

#: The cross-node Filters a shape may still carry: applied per pod from the pod's own
#: PreFilter state, over the shape's columns.
CARRIED_FILTERS = frozenset({names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY})
#: Spread verdict patterns remembered per shape (cleared when full).
SPREAD_MASKS_CACHE_SIZE = 64


def spread_mask(
    state: CycleState,
    table: NodeTable,
    base: np.ndarray | None,
    cache: dict[tuple[object, ...], np.ndarray],
) -> np.ndarray | None:
    """``base`` (the shape's other-plugin verdicts; None: every row) AND
    PodTopologySpread's for this pod (its PreFilter state: the counts as of now), by row;
    None to decline (no state, or a topology key no node has: no node passes and the
    FitError needs the reasons). Kept in ``cache`` per pattern of passing domains: the
    counts move, the patterns repeat."""
    s = state.get(SPREAD_KEY)
    if not isinstance(s, spread_filtering.PreFilterState):
        return None
    failing = spread_filtering.failing_domains(s, table)
    if failing is None:
        return None
    key = tuple((k, f.tobytes()) for k, f in failing)
    hit = cache.get(key)
    if hit is not None:
        return hit
    cap = table.allocatable.shape[1]
    out = np.ones(cap, dtype=np.bool_) if base is None else base.copy()
    for k, fail in failing:
        col = table.labels[k][:cap]
        out &= col >= 0
        if len(fail):
            out &= ~np.isin(col, fail)
    if len(cache) >= SPREAD_MASKS_CACHE_SIZE:
        cache.clear()
    cache[key] = out
    return out


def affinity_mask(
    fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, base: np.ndarray | None
) -> np.ndarray:
    """``base`` AND InterPodAffinity's Filter for this pod over every row (the plugin's
    own vectorised Filter on its PreFilter state)."""
    plugin = next(pl for pl in fwk.filter if pl.name == names.INTER_POD_AFFINITY)
    cap = table.allocatable.shape[1]
    out = np.ones(cap, dtype=np.bool_) if base is None else base.copy()
    rows = table.order()
    passed = np.zeros(cap, dtype=np.bool_)
    passed[rows] = plugin.filter(state, pod, NodeSlice(table, rows)).passed
    out &= passed
    return out
