"""InterPodAffinity's required terms inside a run of same-shape pods (issue 23, item 5):
the per-domain counts carried by the kernel, updated after each assume.

Upstream's Filter for one pod (``plugins.interpodaffinity.filtering``) reads three maps
of (topology key, value) -> count that its PreFilter built from the existing pods:

- affinity: a node passes when it holds every required affinity term's key and each
  term's domain has a pod matching all the terms (count > 0), or, while no pod at all
  matches them (the map is empty), when the pod matches its own terms (the first pod
  of a group affine to itself goes anywhere with the keys);
- anti-affinity: a node fails when one of the pod's required anti-affinity terms has a
  matching pod in the node's domain;
- existing anti-affinity: a node fails when an existing pod's required anti-affinity
  term matching this pod has a pod in the node's domain.

Here the maps become ``K`` tables over topology keys, each ``AFF`` (its count must be
positive) or ``BLOCK`` (a positive count fails the node: the pod's anti-affinity and
the existing pods' anti-affinity under one key sum, as only their positivity is read).

For a run, the pods share namespace, labels and terms (``whole_batch``), so each pod's
PreFilter would differ from the first pod's only by the run's own assumed pods, each
of which adds, on its host's domain of each key the host holds, what a pod of the spec
adds to the three maps (``delta``): every affinity term of that key when the pod
matches all its affinity terms; each of its anti-affinity terms of that key matching
it; each of its own anti-affinity terms of that key (as an existing pod's) matching
it. ``AffinityRun`` holds those arrays; ``affinity_run`` builds them from the first
pod's PreFilter state.

Only Filter: the run's InterPodAffinity PreScore must Skip for every pod of the run
(``InterPodAffinity.run_score_skips``); preferred terms, or required affinity terms the
pods match themselves with a non-zero hardPodAffinityWeight, take the per-pod path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from cluster_sched.api.objects import Pod
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.interpodaffinity.filtering import PreFilterState
from cluster_sched.plugins.interpodaffinity.terms import pod_terms

__all__ = [
    "AFF",
    "BLOCK",
    "NO_AFFINITY",
    "AffinityRun",
    "affinity_assume",
    "affinity_run",
    "affinity_verdicts",
]

_JIT = njit(cache=True, nogil=True, error_model="numpy")

#: ``kinds``: the node's domain must hold a positive count / must not
AFF, BLOCK = 0, 1


@dataclass(frozen=True, slots=True)
class AffinityRun:
    """The required terms of a run's pods (K tables) as the kernel reads them."""

    #: int64[K, cap]: the row's code of the table's topology key (-1: no label)
    codes: np.ndarray
    #: int64[K, D]: count per code; written by the kernel (the caller's copy)
    counts: np.ndarray
    #: int64[K]: AFF or BLOCK
    kinds: np.ndarray
    #: int64[K]: what one run pod assumed on a row adds to the row's domain
    delta: np.ndarray
    #: int64[1]: whether the pods match all their own affinity terms (first of a group)
    self_match: np.ndarray

    def copy(self) -> AffinityRun:
        """The same terms with counts of their own (a kernel call writes them)."""
        return AffinityRun(self.codes, self.counts.copy(), self.kinds, self.delta, self.self_match)


NO_AFFINITY = AffinityRun(
    np.zeros((0, 1), dtype=np.int64),
    np.zeros((0, 1), dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int64),
    np.zeros(1, dtype=np.int64),
)


def affinity_run(s: PreFilterState, pod: Pod, table: NodeTable) -> AffinityRun:
    """``s`` (the first pod's InterPodAffinity PreFilter state, its counts as of now) as
    an ``AffinityRun`` over ``table``, for pods of ``pod``'s namespace, labels and terms."""
    inc = s.pod
    labels, ns_labels = dict(inc.labels), dict(inc.ns_labels)
    terms = inc.terms
    #: (kind, key) -> what one run pod adds; dict order: the tables' order
    adds: dict[tuple[int, str], int] = {}
    for t in terms.required_affinity:
        adds[AFF, t.topology_key] = adds.get((AFF, t.topology_key), 0) + int(s.self_match)
    for t in terms.required_anti_affinity:
        hit = t.matches(inc.namespace, labels, {})
        adds[BLOCK, t.topology_key] = adds.get((BLOCK, t.topology_key), 0) + int(hit)
    for t in pod_terms(pod).required_anti_affinity:  # the run's pods as existing pods
        hit = t.matches(inc.namespace, labels, ns_labels)
        adds[BLOCK, t.topology_key] = adds.get((BLOCK, t.topology_key), 0) + int(hit)
    for key in s.existing_anti:
        adds.setdefault((BLOCK, key), 0)
    cap = table.allocatable.shape[1]
    width = 1 + max((len(table.label_values.get(key) or ()) for _, key in adds), default=0)
    k = len(adds)
    codes = np.full((k, cap), -1, dtype=np.int64)
    counts = np.zeros((k, width), dtype=np.int64)
    kinds = np.empty(k, dtype=np.int64)
    delta = np.empty(k, dtype=np.int64)
    for i, ((kind, key), add) in enumerate(adds.items()):
        kinds[i], delta[i] = kind, add
        col, interner = table.labels.get(key), table.label_values.get(key)
        if col is None or interner is None:
            continue
        codes[i] = col[:cap]
        maps = (s.affinity,) if kind == AFF else (s.anti, s.existing_anti)
        for m in maps:
            dc = m.get(key)
            if dc is not None:
                dense = dc.dense(interner)[:-1]
                counts[i, : len(dense)] += dense
    return AffinityRun(codes, counts, kinds, delta, np.array([int(s.self_match)], np.int64))


@_JIT
def _row_passes(codes, counts, kinds, first_of_group, r):
    exist = True
    for j in range(kinds.shape[0]):
        k = codes[j, r]
        if kinds[j] == AFF:
            if k < 0:
                return False
            if counts[j, k] <= 0:
                exist = False
        elif k >= 0 and counts[j, k] > 0:
            return False
    return exist or first_of_group


@_JIT
def _first_of_group(counts, kinds, self_match):
    """No pod matches the affinity terms (every AFF count 0) and the pod matches them."""
    if self_match[0] == 0:
        return False
    for j in range(kinds.shape[0]):
        if kinds[j] == AFF:
            for k in range(counts.shape[1]):
                if counts[j, k] != 0:
                    return False
    return True


@_JIT
def affinity_verdicts(codes, counts, kinds, self_match, order, mask):
    """``mask[row]`` for every row of ``order``: 1 when the row passes every table."""
    first = _first_of_group(counts, kinds, self_match)
    for p in range(order.shape[0]):
        r = order[p]
        mask[r] = 1 if _row_passes(codes, counts, kinds, first, r) else 0


@_JIT
def affinity_assume(codes, counts, kinds, delta, self_match, host, order, mask):
    """One run pod assumed on ``host``: its domains' counts, then the verdicts: a BLOCK
    domain turning positive fails its rows; an AFF domain turning positive may pass
    rows (and ends the first-of-group exception): every verdict again."""
    redo = False
    for j in range(kinds.shape[0]):
        k = codes[j, host]
        if delta[j] == 0 or k < 0:
            continue
        before = counts[j, k]
        counts[j, k] += delta[j]
        if before > 0:
            continue
        if kinds[j] == AFF:
            redo = True
            continue
        for p in range(order.shape[0]):
            r = order[p]
            if codes[j, r] == k:
                mask[r] = 0
    if redo:
        affinity_verdicts(codes, counts, kinds, self_match, order, mask)
