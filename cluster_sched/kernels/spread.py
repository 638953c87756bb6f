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

__all__ = [
    "NO_SPREAD",
    "SpreadRun",
    "spread_assume",
    "spread_groups",
    "spread_limits",
    "spread_run",
    "spread_verdicts",
]

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
def spread_groups(codes, counts, limits, order):
    """What ``spread_assume`` keeps beside the counts: ``passing[c, k]`` whether
    constraint ``c``'s domain ``k`` is within its limit, and the rows of ``order``
    grouped by domain, ``members[c, starts[c, k]:starts[c, k + 1]]`` those whose code
    for ``c`` is ``k`` (a counting sort)."""
    nc, d = counts.shape
    n = order.shape[0]
    passing = np.zeros((nc, d), dtype=np.uint8)
    starts = np.zeros((nc, d + 1), dtype=np.int64)
    members = np.empty((nc, n), dtype=np.int64)
    fill = np.empty(d, dtype=np.int64)
    for c in range(nc):
        for k in range(d):
            passing[c, k] = counts[c, k] <= limits[c]
        for p in range(n):
            k = codes[c, order[p]]
            if k >= 0:
                starts[c, k + 1] += 1
        for k in range(d):
            starts[c, k + 1] += starts[c, k]
            fill[k] = starts[c, k]
        for p in range(n):
            r = order[p]
            k = codes[c, r]
            if k >= 0:
                members[c, fill[k]] = r
                fill[k] += 1
    return passing, starts, members


@_JIT
def _regroup(codes, counts, limits, passing, starts, members, c, k, mask):
    """Constraint ``c``'s domain ``k`` checked against its limit; when its verdict
    flipped, the verdicts of its rows again (every constraint's domain of each)."""
    ok = counts[c, k] <= limits[c]
    if ok == (passing[c, k] != 0):
        return
    passing[c, k] = ok
    for j in range(starts[c, k], starts[c, k + 1]):
        r = members[c, j]
        v = 1
        for e in range(codes.shape[0]):
            q = codes[e, r]
            if q < 0 or passing[e, q] == 0:
                v = 0
                break
        mask[r] = v


@_JIT
def spread_assume(
    codes, counts, domains, counted, params, limits, passing, starts, members, host, mask
):  # fmt: skip
    """One run pod assumed on ``host``: its domains' counts, then the verdicts of the
    rows whose domain crossed its limit (``spread_groups``' state): only the host's
    domains may cross while a limit stays, every domain when it moves. ``mask`` ends
    as ``spread_verdicts`` over the new counts would leave it."""
    nc = params.shape[0]
    if nc == 0:
        return
    before = np.empty(nc, dtype=np.int64)
    for c in range(nc):
        before[c] = limits[c]
        if counted[c, host]:
            counts[c, codes[c, host]] += 1
    spread_limits(counts, domains, params, limits)
    for c in range(nc):
        if limits[c] != before[c]:
            for k in range(counts.shape[1]):
                _regroup(codes, counts, limits, passing, starts, members, c, k, mask)
        elif counted[c, host]:
            _regroup(codes, counts, limits, passing, starts, members, c, codes[c, host], mask)
