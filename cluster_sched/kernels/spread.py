"""PodTopologySpread's DoNotSchedule Filter inside a run of same-shape pods (issue 23,
item 5): the per-domain counts carried by the kernel, updated after each assume.

Upstream's Filter for one pod (``plugins.podtopologyspread.filtering``), per constraint:
a node passes when it holds the topology key and

    matching pods in its domain + selfMatch - minMatch <= maxSkew

with minMatch the least count over the *eligible* domains (domains of the nodes that
hold every constraint's key and pass the inclusion policies), or 0 while there are fewer
eligible domains than minDomains. PreFilter counts the matching pods (same namespace,
not terminating, matched by a non-empty selector) on the eligible nodes.

For a run, the pods share namespace, labels, node selector, affinity, tolerations and
constraints (``whole_batch``), so every pod's PreFilter sees the same eligible nodes and
domains, and the counts differ from the first pod's only by the run's own assumed pods:
a pod assumed on row ``h`` adds one to constraint ``c``'s domain of ``h`` exactly when
``h`` is eligible for ``c`` and the pod is counted by ``c``'s selector (``counted``).
Nothing else moves the counts inside the call (no pod is added or removed while the
kernel runs), so the verdicts the kernel applies are those each pod's own PreFilter
and Filter would give. ``SpreadRun`` holds those arrays; ``spread_run`` builds them
from the first pod's PreFilter state (None: outside what the kernel models, the run
declines).

Only the Filter: a pod whose PodTopologySpread PreScore is active (ScheduleAnyway
constraints, or the system defaults through a controller) is not run here (its score's
domain weights depend on the feasible set; ``fast_path.run_query`` declines).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from cluster_sched.api.objects import Pod
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.podtopologyspread.constraints import count_spec, selector_matches
from cluster_sched.plugins.podtopologyspread.filtering import (
    NO_DOMAIN_MIN,
    PreFilterState,
    eligible_domains,
)

__all__ = ["NO_SPREAD", "SpreadRun", "spread_limits", "spread_run", "spread_verdicts"]

_JIT = njit(cache=True, nogil=True, error_model="numpy")

#: ``params`` columns
N_DOMAINS, MIN_DOMAINS, MAX_SKEW, SELF_MATCH = range(4)


@dataclass(frozen=True, slots=True)
class SpreadRun:
    """The DoNotSchedule constraints of a run's pods (C of them) as the kernel reads them."""

    #: int64[C, cap]: the row's code of the constraint's topology key (-1: no label)
    codes: np.ndarray
    #: int64[C, D]: matching pods per code (0 outside the eligible domains); written by
    #: the kernel (the caller's copy)
    counts: np.ndarray
    #: uint8[C, D]: the code is an eligible domain (minMatch is taken over these)
    domains: np.ndarray
    #: uint8[C, cap]: a run pod assumed on the row adds one to the row's domain count
    counted: np.ndarray
    #: int64[C, 4]: eligible domains, minDomains, maxSkew, whether the pod matches itself
    params: np.ndarray

    def copy(self) -> SpreadRun:
        """The same constraints with counts of their own (a kernel call writes them)."""
        return SpreadRun(self.codes, self.counts.copy(), self.domains, self.counted, self.params)


NO_SPREAD = SpreadRun(
    np.zeros((0, 1), dtype=np.int64),
    np.zeros((0, 1), dtype=np.int64),
    np.zeros((0, 1), dtype=np.uint8),
    np.zeros((0, 1), dtype=np.uint8),
    np.zeros((0, 4), dtype=np.int64),
)


def spread_run(s: PreFilterState, pod: Pod, table: NodeTable) -> SpreadRun | None:
    """``s`` (the first pod's PreFilter state, its counts as of now) as a ``SpreadRun``
    over ``table``; None when a topology key has no column (no node passes: the FitError
    needs the plugins' reasons) or the state's eligible domains are not the table's."""
    cs = s.constraints
    cap = table.allocatable.shape[1]
    widths = []
    for c in cs:
        interner = table.label_values.get(c.topology_key)
        if interner is None or table.labels.get(c.topology_key) is None:
            return None
        widths.append(len(interner))
    d = max(widths, default=0) + 1
    k = len(cs)
    codes = np.empty((k, cap), dtype=np.int64)
    counts = np.zeros((k, d), dtype=np.int64)
    domains = np.zeros((k, d), dtype=np.uint8)
    counted = np.zeros((k, cap), dtype=np.uint8)
    params = np.empty((k, 4), dtype=np.int64)
    for i, c in enumerate(cs):
        interner = table.label_values[c.topology_key]
        n = widths[i]
        codes[i] = table.labels[c.topology_key][:cap]
        rows, present, _ = eligible_domains(table, pod, cs, c)
        if int(np.count_nonzero(present)) != len(s.domains[i]):
            return None
        counts[i, :n] = s.domains[i].dense(interner)[:n]
        domains[i, :n] = present[:n]
        if count_spec(c.selector, pod.meta.namespace) is not None and selector_matches(
            c.selector, pod.meta.labels
        ):
            counted[i, rows] = 1
        params[i] = (len(s.domains[i]), c.min_domains, c.max_skew, int(s.self_match[i]))
    return SpreadRun(codes, counts, domains, counted, params)


@_JIT
def spread_limits(counts, domains, params, out):
    """``out[c]``: the largest domain count constraint ``c`` lets a node pass with
    (maxSkew - selfMatch + minMatch)."""
    for c in range(params.shape[0]):
        least = 0
        if params[c, N_DOMAINS] >= params[c, MIN_DOMAINS]:
            least = NO_DOMAIN_MIN
            for k in range(domains.shape[1]):
                if domains[c, k] and counts[c, k] < least:
                    least = counts[c, k]
        out[c] = params[c, MAX_SKEW] - params[c, SELF_MATCH] + least


@_JIT
def spread_verdicts(codes, counts, limits, order, mask):
    """``mask[row]`` for every row of ``order``: 1 when the row passes every constraint."""
    for p in range(order.shape[0]):
        r = order[p]
        ok = 1
        for c in range(codes.shape[0]):
            k = codes[c, r]
            if k < 0 or counts[c, k] > limits[c]:
                ok = 0
                break
        mask[r] = ok


@_JIT
def spread_assume(codes, counts, domains, counted, params, limits, host, order, mask):
    """One run pod assumed on ``host``: its domains' counts, then the verdicts again
    when a limit moved or a domain crossed its limit."""
    nc = params.shape[0]
    if nc == 0:
        return
    moved = False
    for c in range(nc):
        if counted[c, host]:
            k = codes[c, host]
            counts[c, k] += 1
            if counts[c, k] == limits[c] + 1:
                moved = True
    before = limits.copy()
    spread_limits(counts, domains, params, limits)
    for c in range(nc):
        if limits[c] != before[c]:
            moved = True
    if moved:
        spread_verdicts(codes, counts, limits, order, mask)
