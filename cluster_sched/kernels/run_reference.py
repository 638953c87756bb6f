"""``kernels.run``'s runs in numpy: the oracles of ``tests/kernels``.

``run_reference``: ``evaluate_pod_reference`` per pod on a copy of the table whose
accounting columns take each assume, ``Evaluation.select_row``'s draw.

With a ``SpreadRun``, each pod's PodTopologySpread verdict is computed afresh from the
counts (numpy over every row) and joins the query's masks, and its host's domains count
it afterwards. With an ``AffinityRun`` likewise InterPodAffinity's verdict (numpy over
every row, the filter's rules read from the counts) and each host's domains taking the
run pod's ``delta``.

``hinted_run_reference``: pod after pod, as ``scheduler.batching`` decides a signed pod
with OpportunisticBatching on: while a kept list is usable and the previous pod's host no longer fits the pod
(NodeResourcesFit's verdict and the shape's masks on that one row), the list's head is
the hint and, if it fits, the host, unscored and leaving the rotation where it is; else
``evaluate_pod_reference`` over the window, ``Evaluation.select_row``'s draw, and the
other feasible rows sorted by total (ties in evaluation order, ``np.lexsort`` as
``batching._others_sorted``) become the list.
"""

from __future__ import annotations

import copy
import dataclasses
import random

import numpy as np

from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.kernels import fused
from cluster_sched.kernels.affinity import AFF, AffinityRun
from cluster_sched.kernels.inputs import KernelProfile, PodQuery
from cluster_sched.kernels.reference import evaluate_pod_reference
from cluster_sched.kernels.run import HintedRun, PodVector, RunResult
from cluster_sched.kernels.spread import MAX_SKEW, MIN_DOMAINS, N_DOMAINS, SELF_MATCH, SpreadRun
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.noderesources.fit import fit_verdicts
from cluster_sched.plugins.podtopologyspread.filtering import NO_DOMAIN_MIN

__all__ = ["hinted_run_reference", "run_reference"]


def _fits(table: NodeTable, query: PodQuery, row: int) -> bool:
    if row < 0:
        return False
    rows = np.asarray([row], dtype=np.int64)
    ok = bool(fit_verdicts(NodeSlice(table, rows), query.requests.checked).codes[0] == 0)
    return ok and all(bool(np.asarray(m)[row]) for m in query.masks)


def _assume(t: NodeTable, host: int, vector: PodVector) -> None:
    for c, v in zip(vector.cols.tolist(), vector.vals.tolist(), strict=True):
        t.requested[c, host] += v
        t.free[c, host] -= v
    t.nonzero[0, host] += vector.nonzero_cpu
    t.nonzero[1, host] += vector.nonzero_memory
    t.pod_count[host] += 1


def _copy(table: NodeTable) -> NodeTable:
    """The table with its own accounting columns (the assumes of the run go there)."""
    t = copy.copy(table)
    t.requested, t.free = table.requested.copy(), table.free.copy()
    t.nonzero, t.pod_count = table.nonzero.copy(), table.pod_count.copy()
    return t


def spread_mask(spread: SpreadRun, counts: np.ndarray) -> np.ndarray:
    """bool[cap]: the rows passing every constraint of ``spread`` at ``counts``."""
    ok = np.ones(spread.codes.shape[1], dtype=np.bool_)
    for c in range(len(spread.params)):
        p = spread.params[c]
        least = 0
        if p[N_DOMAINS] >= p[MIN_DOMAINS]:
            eligible = counts[c][spread.domains[c] != 0]
            least = int(eligible.min()) if len(eligible) else NO_DOMAIN_MIN
        limit = p[MAX_SKEW] - p[SELF_MATCH] + least
        codes = spread.codes[c]
        ok &= (codes >= 0) & (counts[c][np.maximum(codes, 0)] <= limit)
    return ok


def affinity_mask(aff: AffinityRun, counts: np.ndarray) -> np.ndarray:
    """bool[cap]: the rows passing every table of ``aff`` at ``counts``."""
    cap = aff.codes.shape[1]
    missing = np.zeros(cap, dtype=np.bool_)
    exist = np.ones(cap, dtype=np.bool_)
    blocked = np.zeros(cap, dtype=np.bool_)
    for j in range(len(aff.kinds)):
        codes = aff.codes[j]
        at = np.where(codes >= 0, counts[j][np.maximum(codes, 0)], 0)
        if aff.kinds[j] == AFF:
            missing |= codes < 0
            exist &= at > 0
        else:
            blocked |= at > 0
    first = bool(aff.self_match[0]) and not counts[aff.kinds == AFF].any()
    return ~missing & (exist | first) & ~blocked


def run_reference(
    table: NodeTable,
    profile: KernelProfile,
    query: PodQuery,
    to_find: int,
    count: int,
    vector: PodVector,
    rng: random.Random,
    spread: SpreadRun | None = None,
    affinity: AffinityRun | None = None,
) -> RunResult:
    """Same arguments and answer as ``evaluate_run`` (the table is not written)."""
    t = _copy(table)
    n = len(table.order())
    out: list[tuple[int, int, int, int, int]] = []
    s = query.start % n if n else 0
    counts = None if spread is None else spread.counts.copy()
    aff_counts = None if affinity is None else affinity.counts.copy()
    for _ in range(count if n else 0):
        q = dataclasses.replace(query, start=s)
        if spread is not None and counts is not None:
            q = dataclasses.replace(q, masks=(*q.masks, spread_mask(spread, counts)), stable=False)
        if affinity is not None and aff_counts is not None:
            own = affinity_mask(affinity, aff_counts)
            q = dataclasses.replace(q, masks=(*q.masks, own), stable=False)
        ev = evaluate_pod_reference(t, profile, q, to_find)
        if len(ev.feasible_rows) == 0 or ev.status != fused.STATUS_OK:
            break
        host = ev.select_row(rng)
        out.append((host, ev.evaluated, len(ev.feasible_rows), len(ev.ties), s))
        s = (s + ev.evaluated) % n
        _assume(t, host, vector)
        if spread is not None and counts is not None:
            for c in range(len(spread.params)):
                if spread.counted[c, host]:
                    counts[c, spread.codes[c, host]] += 1
        if affinity is not None and aff_counts is not None:
            for j in range(len(affinity.kinds)):
                if affinity.codes[j, host] >= 0:
                    aff_counts[j, affinity.codes[j, host]] += affinity.delta[j]
    d = np.asarray(out, dtype=np.int64).reshape(-1, 5)
    return RunResult(d[:, 0], d[:, 1], d[:, 2], d[:, 3], d[:, 4])


def hinted_run_reference(
    table: NodeTable,
    profile: KernelProfile,
    query: PodQuery,
    to_find: int,
    count: int,
    vector: PodVector,
    rng: random.Random,
    kept: np.ndarray,
    last: int,
) -> HintedRun:
    """Same arguments and answer as ``evaluate_hinted_run`` (the table is not written)."""
    t = _copy(table)
    n = len(table.order())
    live = [int(r) for r in kept]
    lists = list(live)
    usable = bool(live)
    out: list[tuple[int, ...]] = []
    s = query.start % n if n else 0
    for _ in range(count if n else 0):
        rejects = -1
        if usable and live and last >= 0:
            rejects = 0 if _fits(t, query, last) else 1
            if rejects:
                hint = live.pop(0)
                if not _fits(t, query, hint):
                    break
                out.append((hint, 0, 1, 1, s, hint, 1, 0, 0))
                _assume(t, hint, vector)
                last = hint
                continue
        ev = evaluate_pod_reference(t, profile, dataclasses.replace(query, start=s), to_find)
        if len(ev.feasible_rows) == 0 or ev.status != fused.STATUS_OK:
            break
        host = ev.select_row(rng)
        found = len(ev.feasible_rows)
        live = []
        if found > 1:
            order = np.lexsort((np.arange(found), -ev.totals))
            live = [int(r) for r in ev.feasible_rows[order] if r != host]
        out.append((host, ev.evaluated, found, len(ev.ties), s, -1, rejects, len(lists), len(live)))
        lists += live
        last, usable = host, True
        s = (s + ev.evaluated) % n
        _assume(t, host, vector)
    d = np.asarray(out, dtype=np.int64).reshape(-1, 9)
    run = RunResult(d[:, 0], d[:, 1], d[:, 2], d[:, 3], d[:, 4])
    return HintedRun(run, d[:, 5], d[:, 6], d[:, 7], d[:, 8], np.asarray(lists, dtype=np.int64))
