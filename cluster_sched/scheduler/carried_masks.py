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
from cluster_sched.plugins.interpodaffinity.filtering import PreFilterState as IpaState
from cluster_sched.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY as IPA_KEY
from cluster_sched.plugins.podtopologyspread import filtering as spread_filtering
from cluster_sched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY as SPREAD_KEY

__all__ = ["CARRIED_FILTERS", "affinity_mask", "spread_mask"]

#: The cross-node Filters a shape may still carry: applied per pod from the pod's own
#: PreFilter state, over the shape's columns.
CARRIED_FILTERS = frozenset({names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY})
#: Spread (and affinity) verdict patterns remembered per shape (cleared when full).
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


def _affinity_pattern(s: IpaState, table: NodeTable) -> tuple[object, ...] | None:
    """What InterPodAffinity's Filter reads of ``s`` beyond the pod's terms: which
    domains of each map hold a positive count, whether the affinity map is empty, the
    self match; None when a map is not coded by ``table``'s interners."""
    parts: list[object] = [bool(s.affinity), s.self_match]
    for m in (s.affinity, s.anti, s.existing_anti):
        for key, dc in m.items():
            if dc.codes is None or dc.source is not table.label_values.get(key):
                return None
            parts.append((key, np.sort(dc.codes[dc.counts > 0]).tobytes()))
        parts.append(None)
    return tuple(parts)


def affinity_mask(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    base: np.ndarray | None,
    cache: dict[tuple[object, ...], tuple[object, np.ndarray]],
) -> np.ndarray:
    """``base`` AND InterPodAffinity's Filter for this pod over every row (the plugin's
    own vectorised Filter on its PreFilter state), the latter kept in ``cache`` per
    terms and pattern of positive domains (a self-affine group's counts grow, their
    pattern stays)."""
    plugin = next(pl for pl in fwk.filter if pl.name == names.INTER_POD_AFFINITY)
    s = state.get(IPA_KEY)
    pattern = _affinity_pattern(s, table) if isinstance(s, IpaState) else None
    key = None if pattern is None else (id(s.pod.terms), pattern)
    hit = None if key is None else cache.get(key)
    if hit is not None and hit[0] is s.pod.terms:
        passed = hit[1]
    else:
        cap = table.allocatable.shape[1]
        rows = table.order()
        passed = np.zeros(cap, dtype=np.bool_)
        passed[rows] = plugin.filter(state, pod, NodeSlice(table, rows)).passed
        if key is not None:
            if len(cache) >= SPREAD_MASKS_CACHE_SIZE:
                cache.clear()
            cache[key] = (s.pod.terms, passed)
    return passed if base is None else base & passed
