"""A run of same-shape pods in one compiled call: for each pod in turn, Filter over its
window, Score, select the host (the scheduler RNG's own draws) and assume it, so the next
pod sees the columns its predecessors changed (issue 23, item 1).

Exactly what ``scheduler.algorithm._fast_attempt`` decides pod after pod on the shape
path: the window from ``next_start_node_index`` (advanced by each pod's evaluated count),
``numFeasibleNodesToFind``, a single feasible node taken unscored, the tie set drawn with
``rng.randrange`` only when it has more than one node. The assume adds the pod's request
vector, non-zero cpu/memory and one pod to the host's row as ``NodeTable.add_pod`` does;
it writes *copies* of the accounting columns: the caller assumes each decided pod in its
cache, which updates the table itself. The run stops before the first pod it cannot
decide (no feasible node: the FitError needs every plugin's reasons; a score out of
range: the numpy path raises the framework's error), leaving the RNG and the rotation as
they were after the last decided pod.

``kernels.run_reference`` holds the same loops over ``evaluate_pod_reference`` and
``random.Random``.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

import numpy as np
from numba import njit

from cluster_sched.api.objects import CPU, MEMORY
from cluster_sched.kernels import fused, mt19937
from cluster_sched.kernels.affinity import (
    NO_AFFINITY,
    AffinityRun,
    affinity_assume,
    affinity_verdicts,
)
from cluster_sched.kernels.evaluate import pack_pod_call, warm_up_inputs
from cluster_sched.kernels.inputs import KernelProfile, PodQuery
from cluster_sched.kernels.scalar import wrap_sub
from cluster_sched.kernels.spread import (
    NO_SPREAD,
    SpreadRun,
    spread_assume,
    spread_groups,
    spread_limits,
    spread_verdicts,
)
from cluster_sched.nodetable.table import NodeTable

__all__ = [
    "HintedRun",
    "PodVector",
    "RunResult",
    "evaluate_hinted_run",
    "evaluate_run",
    "warm_up_run",
]

_JIT = njit(cache=True, nogil=True, error_model="numpy")


#: per thread, the run's copies of the accounting columns by argument index (see
#: ``_own_columns``)
_SCRATCH = threading.local()


def _own_columns(args: list[object]) -> None:
    """The accounting columns of ``pack_pod_call``'s ``args`` (requested, free, nonzero,
    pod_count: the ones a run assumes into) replaced by the run's own copies. The copies
    live in buffers kept per thread and per shape, refilled each run: a fresh array per
    column and run cost a new mapping and its page faults (~0.6 ms a run at 8,192 rows,
    ~10 us per pod of SchedulingBasic's runs), a refill a tenth of that. The kernel
    finishes with them before the call returns (nothing it answers points into them),
    and runs of one thread do not overlap, so a buffer is never in use twice."""
    kept: dict[int, np.ndarray] | None = getattr(_SCRATCH, "columns", None)
    if kept is None:
        kept = _SCRATCH.columns = {}
    for i in (1, 2, 3, 4):
        src = args[i]
        assert isinstance(src, np.ndarray)
        buf = kept.get(i)
        if buf is None or buf.shape != src.shape or buf.dtype != src.dtype:
            buf = kept[i] = np.empty_like(src, order="C")
        np.copyto(buf, src)
        args[i] = buf


@dataclass(frozen=True, slots=True)
class PodVector:
    """What assuming one pod of the run adds to its host's row (``NodeTable.add_pod``):
    ``cols``/``vals`` int64[r] the request vector over table columns (``pods`` apart),
    and the non-zero cpu and memory."""

    cols: np.ndarray
    vals: np.ndarray
    nonzero_cpu: int
    nonzero_memory: int


@dataclass(frozen=True, slots=True)
class RunResult:
    """Per decided pod, in run order (int64[m] each)."""

    hosts: np.ndarray
    evaluated: np.ndarray
    #: feasible nodes found (1: taken unscored)
    found: np.ndarray
    #: size of the best-score tie set (> 1: one rng.randrange draw)
    ties: np.ndarray
    #: next_start_node_index (mod n) before the pod
    starts: np.ndarray

    def __len__(self) -> int:
        return len(self.hosts)


@_JIT
def _decide(
    allocatable, requested, free, nonzero, pod_count, allowed_pods,
    order, s, to_find, fit_req, masks, mask_ids,
    mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
    norm, norm_ids, norm_reverse, norm_weight, extra, extra_id,
    mt, pos, rows, totals, ties,
):  # fmt: skip
    """One pod's compiled attempt from window start ``s``: (host row, found, evaluated,
    tie-set size); host -1 when the kernel cannot decide it (no feasible node, a score
    out of range). ``rows[:found]`` and, when found > 1, ``totals[:found]`` hold the
    feasible rows and their totals."""
    found, evaluated = fused._filter(
        free, pod_count, allowed_pods, order, s, to_find,
        fit_req[0], fit_req[1], masks, mask_ids, rows,
    )  # fmt: skip
    if found == 0:
        return -1, found, evaluated, 0
    if found == 1:
        return rows[0], found, evaluated, 1
    best, status = fused._score(
        allocatable, requested, nonzero, rows, found,
        mode, fit_weight, s_req[0], s_srcs, s_req[1], s_weights, shape_u, shape_s,
        bal_weight, b_req[0], b_req[1],
        norm, norm_ids, norm_reverse, norm_weight, extra, extra_id, totals,
    )  # fmt: skip
    if status != fused.STATUS_OK:
        return -1, found, evaluated, 0
    n_ties = 0
    for k in range(found):
        if totals[k] == best:
            ties[n_ties] = k
            n_ties += 1
    pick = ties[0]
    if n_ties > 1:
        pick = ties[mt19937.randbelow(mt, pos, n_ties)]
    return rows[pick], found, evaluated, n_ties


@_JIT
def _assume(requested, free, nonzero, pod_count, host, add_cols, add_vals, nz_cpu, nz_mem):
    """``NodeTable.add_pod`` of one pod of the run on the run's copies of the columns."""
    for j in range(add_cols.shape[0]):
        c = add_cols[j]
        requested[c, host] += add_vals[j]
        free[c, host] -= add_vals[j]
    nonzero[0, host] += nz_cpu
    nonzero[1, host] += nz_mem
    pod_count[host] += 1


@_JIT
def _fits_row(free, pod_count, allowed_pods, row, fit_req, masks, mask_ids):
    """Whether ``row`` passes Filter (``fused._filter``'s checks on one row; -1: no
    such node)."""
    if row < 0 or wrap_sub(allowed_pods[row], pod_count[row]) < 1:
        return False
    for c in range(fit_req.shape[1]):
        col = fit_req[0, c]
        if col < 0 or free[col, row] < fit_req[1, c]:
            return False
    for m in range(mask_ids.shape[0]):  # noqa: SIM110 (numba: no generator in all())
        if masks[mask_ids[m], row] == 0:
            return False
    return True


@_JIT
def evaluate_run_kernel(
    allocatable, requested, free, nonzero, pod_count, allowed_pods,
    order, start, to_find, fit_req, masks, mask_ids,
    mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
    norm, norm_ids, norm_reverse, norm_weight, extra, extra_id,
    count, add_cols, add_vals, nz_cpu, nz_mem, mt, pos, rows, totals, ties,
    sp_codes, sp_counts, sp_domains, sp_counted, sp_params, sp_mask,
    af_codes, af_counts, af_kinds, af_delta, af_self, af_mask, out,
):  # fmt: skip
    """``count`` pods one after another (arguments of ``evaluate_pod_kernel`` but
    ``out``; ``requested``, ``free``, ``nonzero``, ``pod_count`` are written: copies).
    ``sp_*``: the run's PodTopologySpread constraints (``kernels.spread.SpreadRun``,
    ``sp_counts`` written), their verdicts kept in ``masks[sp_mask]`` (-1: none);
    ``af_*`` likewise InterPodAffinity's required terms (``kernels.affinity``).
    ``out`` int64[count, 5]: host row, evaluated, found, tie-set size, start. Returns
    how many pods were decided."""
    n = order.shape[0]
    if n == 0:
        return 0
    s = start % n
    limits = np.empty(sp_params.shape[0], dtype=np.int64)
    spread_limits(sp_counts, sp_domains, sp_params, limits)
    passing, groups, members = spread_groups(sp_codes, sp_counts, limits, order)
    if sp_mask >= 0:
        spread_verdicts(sp_codes, sp_counts, limits, order, masks[sp_mask])
    if af_mask >= 0:
        affinity_verdicts(af_codes, af_counts, af_kinds, af_self, order, masks[af_mask])
    for i in range(count):
        host, found, evaluated, n_ties = _decide(
            allocatable, requested, free, nonzero, pod_count, allowed_pods,
            order, s, to_find, fit_req, masks, mask_ids,
            mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
            norm, norm_ids, norm_reverse, norm_weight, extra, extra_id,
            mt, pos, rows, totals, ties,
        )  # fmt: skip
        if host < 0:
            return i
        out[i, 0] = host
        out[i, 1] = evaluated
        out[i, 2] = found
        out[i, 3] = n_ties
        out[i, 4] = s
        s = (s + evaluated) % n
        _assume(requested, free, nonzero, pod_count, host, add_cols, add_vals, nz_cpu, nz_mem)
        if sp_mask >= 0:
            spread_assume(
                sp_codes, sp_counts, sp_domains, sp_counted, sp_params, limits,
                passing, groups, members, host, masks[sp_mask],
            )  # fmt: skip
        if af_mask >= 0:
            affinity_assume(
                af_codes, af_counts, af_kinds, af_delta, af_self, host, order, masks[af_mask]
            )
    return count


@_JIT
def evaluate_hinted_run_kernel(
    allocatable, requested, free, nonzero, pod_count, allowed_pods,
    order, start, to_find, fit_req, masks, mask_ids,
    mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
    norm, norm_ids, norm_reverse, norm_weight, extra, extra_id,
    count, add_cols, add_vals, nz_cpu, nz_mem, mt, pos, rows, totals, ties,
    lists, live_end, last, usable, out,
):  # fmt: skip
    """``evaluate_run_kernel`` with OpportunisticBatching's hint (``framework.batch``):
    ``lists[:live_end]`` the kept sorted list (rows, -1: no such node) that the first pod
    may use when ``usable`` and the previous pod's host ``last`` (-1: gone) rejects it;
    each scored attempt appends its other feasible rows, best total first (ties in
    evaluation order), to ``lists`` as the next pods' list. ``out`` int64[count, 9]: host,
    evaluated, found, tie-set size, start, hint row (-1: none), whether ``last`` rejected
    the pod (-1: not asked), the list's offset and length in ``lists``. A hint that fails
    Filter ends the run (the cycle then runs the plugins, as ``batching`` does)."""
    n = order.shape[0]
    if n == 0:
        return 0
    s = start % n
    live_b = 0
    w = live_end
    for i in range(count):
        rejects = -1
        if usable and live_b < live_end and last >= 0:
            rejects = (
                0 if _fits_row(free, pod_count, allowed_pods, last, fit_req, masks, mask_ids) else 1
            )
            if rejects:
                hint = lists[live_b]
                live_b += 1
                if not _fits_row(free, pod_count, allowed_pods, hint, fit_req, masks, mask_ids):
                    return i
                out[i, 0] = hint
                out[i, 1] = 0  # no window evaluated: the rotation stays
                out[i, 2] = 1
                out[i, 3] = 1
                out[i, 4] = s
                out[i, 5] = hint
                out[i, 6] = 1
                out[i, 7] = 0
                out[i, 8] = 0
                _assume(
                    requested, free, nonzero, pod_count, hint, add_cols, add_vals, nz_cpu, nz_mem
                )
                last = hint
                continue
        host, found, evaluated, n_ties = _decide(
            allocatable, requested, free, nonzero, pod_count, allowed_pods,
            order, s, to_find, fit_req, masks, mask_ids,
            mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
            norm, norm_ids, norm_reverse, norm_weight, extra, extra_id,
            mt, pos, rows, totals, ties,
        )  # fmt: skip
        if host < 0:
            return i
        kept = 0
        if found > 1:
            by_score = np.argsort(-totals[:found], kind="mergesort")  # stable: ties in order
            for j in range(found):
                r = rows[by_score[j]]
                if r != host:
                    lists[w + kept] = r
                    kept += 1
        out[i, 0] = host
        out[i, 1] = evaluated
        out[i, 2] = found
        out[i, 3] = n_ties
        out[i, 4] = s
        out[i, 5] = -1
        out[i, 6] = rejects
        out[i, 7] = w
        out[i, 8] = kept
        live_b, live_end, w = w, w + kept, w + kept
        last, usable = host, True
        s = (s + evaluated) % n
        _assume(requested, free, nonzero, pod_count, host, add_cols, add_vals, nz_cpu, nz_mem)
    return count


def evaluate_run(
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
    """Decide up to ``count`` pods of one shape (``query``: the first pod's start, the
    shape's columns) in one call; ``rng`` is advanced by the draws of the decided pods.
    ``spread``, ``affinity``: the pods' PodTopologySpread and InterPodAffinity Filter,
    their counts as of the first pod (not written). The table is not written."""
    args: list[object] = list(pack_pod_call(table, profile, query, to_find))
    args.pop()  # evaluate_pod_kernel's out
    _own_columns(args)
    sp = NO_SPREAD if spread is None else spread.copy()
    af = NO_AFFINITY if affinity is None else affinity.copy()
    sp_mask = _own_mask(args, table) if spread is not None else -1
    af_mask = _own_mask(args, table) if affinity is not None else -1
    k = max(1, min(to_find, len(table.order())))
    rows = np.empty(k, dtype=np.int64)
    totals = np.empty(k, dtype=np.int64)
    ties = np.empty(k, dtype=np.int64)
    out = np.empty((max(count, 1), 5), dtype=np.int64)
    mt, pos = mt19937.state_of(rng)
    cols = np.ascontiguousarray(vector.cols, dtype=np.int64)
    vals = np.ascontiguousarray(vector.vals, dtype=np.int64)
    m = evaluate_run_kernel(  # type: ignore[call-arg]
        *args, count, cols, vals, vector.nonzero_cpu, vector.nonzero_memory,
        mt, pos, rows, totals, ties,
        sp.codes, sp.counts, sp.domains, sp.counted, sp.params, sp_mask,
        af.codes, af.counts, af.kinds, af.delta, af.self_match, af_mask, out,
    )  # fmt: skip
    mt19937.restore(rng, mt, pos)
    d = out[:m]
    return RunResult(d[:, 0], d[:, 1], d[:, 2], d[:, 3], d[:, 4])


def _own_mask(args: list[object], table: NodeTable) -> int:
    """A verdict column of the run's own appended to the call's mask stack (``args``:
    ``pack_pod_call``'s, the stack and its ids replaced) and applied; its index."""
    stack, ids = args[10], args[11]
    assert isinstance(stack, np.ndarray) and isinstance(ids, np.ndarray)
    at = stack.shape[0]
    own = np.zeros((at + 1, table.allocatable.shape[1]), dtype=np.uint8)
    own[:at] = stack
    args[10], args[11] = own, np.append(ids, at).astype(np.int64)
    return at


@dataclass(frozen=True, slots=True)
class HintedRun:
    """``evaluate_hinted_run``'s answer: ``run`` as ``evaluate_run``'s (a hinted pod:
    evaluated 0, found 1, start the unmoved rotation) and per decided pod (int64[m]
    each) its hint row (-1: none), whether the previous host rejected it (-1: not
    asked), and the rows its attempt kept for the next pods (``kept(i)``)."""

    run: RunResult
    hints: np.ndarray
    rejects: np.ndarray
    list_begin: np.ndarray
    list_len: np.ndarray
    lists: np.ndarray

    def __len__(self) -> int:
        return len(self.run)

    def kept(self, i: int) -> np.ndarray:
        """int64[k]: rows pod ``i``'s scored attempt left for the next pods, best first."""
        b = int(self.list_begin[i])
        return self.lists[b : b + int(self.list_len[i])]


def evaluate_hinted_run(
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
    """``evaluate_run`` with OpportunisticBatching's hints: ``kept`` int64[L] the list
    the first pod may take its hint from (empty: none usable), ``last`` the previous
    pod's host row (-1: gone)."""
    args: list[object] = list(pack_pod_call(table, profile, query, to_find))
    args.pop()
    _own_columns(args)
    k = max(1, min(to_find, len(table.order())))
    scratch = [np.empty(k, dtype=np.int64) for _ in range(3)]
    lists = np.empty(len(kept) + max(count, 1) * k, dtype=np.int64)
    lists[: len(kept)] = kept
    out = np.empty((max(count, 1), 9), dtype=np.int64)
    mt, pos = mt19937.state_of(rng)
    cols = np.ascontiguousarray(vector.cols, dtype=np.int64)
    vals = np.ascontiguousarray(vector.vals, dtype=np.int64)
    m = evaluate_hinted_run_kernel(  # type: ignore[call-arg]
        *args, count, cols, vals, vector.nonzero_cpu, vector.nonzero_memory,
        mt, pos, *scratch, lists, len(kept), last, len(kept) > 0, out,
    )  # fmt: skip
    mt19937.restore(rng, mt, pos)
    d = out[:m]
    run = RunResult(d[:, 0], d[:, 1], d[:, 2], d[:, 3], d[:, 4])
    return HintedRun(run, d[:, 5], d[:, 6], d[:, 7], d[:, 8], lists)


def warm_up_run() -> None:
    """Compile (or load from numba's on-disk cache) ``evaluate_run_kernel`` and
    ``evaluate_hinted_run_kernel`` at start-up, so the first run of a batch does not pay
    for it inside the measured window."""
    table, profile, query = warm_up_inputs()
    cols, vals = table.resource_vector({CPU: 1000, MEMORY: 1 << 30})
    vector = PodVector(cols, vals, 1000, 1 << 30)
    evaluate_run(table, profile, query, 2, 2, vector, random.Random(0))
    kept = np.zeros(1, dtype=np.int64)
    evaluate_hinted_run(table, profile, query, 2, 2, vector, random.Random(0), kept, 0)
