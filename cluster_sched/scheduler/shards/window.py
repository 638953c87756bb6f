"""A shard's whole answer for one pod's window in one compiled call: every row passes
Filter, the best weighted total, and which rows hold it as packed bits.

``reduce`` needs no more of the fused kernel's evaluation (``kernels.evaluate_pod``):
not the feasible rows (all of them, or the pod is FAILED here), not the totals, not the
tie positions, which it used to scatter into a bool per row and pack. ``window_reduce``
calls the fused kernel's own Filter and Score passes (``fused._filter``, ``fused._score``:
the same arithmetic, so the same totals) over the positions of the shard's ordered
columns (``ordered``), then writes the tie bits in ``np.packbits``' layout (first row in
the high bit) into the reply's buffer. The packed arguments of a pod shape are made once
per chunk (``WindowCall``), its pods only change the positions. One row is scored alone
(``_score`` of one feasible row: the totals the fused kernel gives that row when it is
evaluated twice, which is how ``run_ordered`` scored it).

``window_reduce_reference`` is the same answer from ``ShardKernels.run_ordered`` (the
fused kernel's evaluation): the tests hold them equal.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numba import njit

from cluster_sched.kernels import STATUS_OK, PodQuery, fused
from cluster_sched.kernels.evaluate import POD_ARGS, TABLE_ARGS, pack_pod_call, warm_up_inputs
from cluster_sched.kernels.scalar import REQUESTED_TO_CAPACITY_RATIO
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.shards.compiled import PreparedShape, ShardKernels
from cluster_sched.scheduler.shards.ordered import OrderedColumns

__all__ = [
    "WINDOW_FAILED",
    "WINDOW_INVALID",
    "WINDOW_OK",
    "WindowCall",
    "evaluate_rows",
    "warm_up",
    "window_call",
    "window_from_rows",
    "window_reduce",
    "window_reduce_reference",
]

#: shapes whose ``WindowCall`` a view keeps (each with its row scores: 9 bytes per row of
#: the shard, 4.5 MB at 500,000 rows; cleared when full)
CALLS_KEPT = 16

#: ``window_reduce``'s outcomes: every row passed and was scored; a row failed Filter; a
#: score left [0, 100] (the plugins' path raises the framework's error)
WINDOW_OK, WINDOW_FAILED, WINDOW_INVALID = range(3)


@njit(cache=True, nogil=True)
def _pack_ties(totals, best, bits):  # type: ignore[no-untyped-def]
    """One bit per entry of ``totals``, set where it is ``best``, in ``np.packbits``
    order (the first entry in the high bit), into ``bits``."""
    n = totals.shape[0]
    full = n >> 3
    for b in range(full):  # eight rows per byte, no branch
        v = np.int64(0)
        for j in range(8):
            v |= np.int64(totals[8 * b + j] == best) << (7 - j)
        bits[b] = v
    if n & 7:
        v = np.int64(0)
        for j in range(n - 8 * full):
            v |= np.int64(totals[8 * full + j] == best) << (7 - j)
        bits[full] = v


@njit(cache=True, nogil=True, error_model="numpy")
def window_reduce(
    allocatable, requested, free, nonzero, pod_count, allowed_pods,
    positions, fit_req, masks, mask_ids,
    mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
    norm, norm_ids, norm_reverse, norm_weight, extra, extra_id,
    scratch, bits,
):  # fmt: skip
    """(outcome, best) of ``positions`` (int64[n], n >= 1); on WINDOW_OK ``bits`` (uint8,
    >= ceil(n / 8)) holds one bit per position, set where its total is the best, in
    ``np.packbits`` order. ``scratch`` int64[2, >= n]. Arguments otherwise as
    ``fused.evaluate_pod_kernel`` (``evaluate.pack_pod_call``)."""
    n = positions.shape[0]
    found, _ = fused._filter(
        free, pod_count, allowed_pods, positions, 0, n,
        fit_req[0], fit_req[1], masks, mask_ids, scratch[0],
    )  # fmt: skip
    if found != n:
        return WINDOW_FAILED, 0
    totals = scratch[1]
    best, status = fused._score(
        allocatable, requested, nonzero, positions, n,
        mode, fit_weight, s_req[0], s_srcs, s_req[1], s_weights, shape_u, shape_s,
        bal_weight, b_req[0], b_req[1],
        norm, norm_ids, norm_reverse, norm_weight, extra, extra_id, totals,
    )  # fmt: skip
    if status != fused.STATUS_OK:
        return WINDOW_INVALID, 0
    _pack_ties(totals[:n], best, bits)
    return WINDOW_OK, best


@njit(cache=True, nogil=True, error_model="numpy")
def evaluate_rows(
    allocatable, requested, free, nonzero, pod_count, allowed_pods,
    positions, fit_req, masks, mask_ids,
    mode, fit_weight, s_req, s_srcs, s_weights, shape_u, shape_s, bal_weight, b_req,
    norm, norm_ids, norm_reverse, norm_weight, extra, extra_id,
    scratch, failed, totals,
):  # fmt: skip
    """Each of ``positions``' own verdict and total, as any window holding it would give
    them (``RowScores``): ``failed[p]`` whether position ``p`` fails Filter, ``totals[p]``
    its weighted total. Returns whether they hold for every window: the scores were in
    range and NodeResourcesFit's path (``fused._window_flags``: a whole-window choice)
    is its regular one over these rows, so over any subset of them too."""
    n = positions.shape[0]
    if n == 0:
        return True
    found, _ = fused._filter(
        free, pod_count, allowed_pods, positions, 0, n,
        fit_req[0], fit_req[1], masks, mask_ids, scratch[0],
    )  # fmt: skip
    for k in range(n):
        failed[positions[k]] = 1
    for k in range(found):
        failed[scratch[0, k]] = 0
    m = s_req.shape[1]
    if fit_weight != 0 and m > 0 and mode != REQUESTED_TO_CAPACITY_RATIO:
        alloc = np.empty((m, n), dtype=np.int64)
        req = np.empty((m, n), dtype=np.int64)
        fused._gather(
            allocatable, requested, nonzero, positions, n, False, s_req[0], s_srcs, s_req[1],
            alloc, req,
        )  # fmt: skip
        fast, int_div = fused._window_flags(alloc, req, n, mode)
        if not fast or int_div:
            return False
    _, status = fused._score(
        allocatable, requested, nonzero, positions, n,
        mode, fit_weight, s_req[0], s_srcs, s_req[1], s_weights, shape_u, shape_s,
        bal_weight, b_req[0], b_req[1],
        norm, norm_ids, norm_reverse, norm_weight, extra, extra_id, scratch[1],
    )  # fmt: skip
    for k in range(n):
        totals[positions[k]] = scratch[1, k]
    return status == fused.STATUS_OK


@njit(cache=True, nogil=True)
def _from_run(failed, totals, bits):  # type: ignore[no-untyped-def]
    """``window_from_rows`` of one run of positions (slices: loops that vectorise)."""
    n = totals.shape[0]
    bad = np.uint8(0)
    for k in range(n):
        bad |= failed[k]
    if bad:
        return WINDOW_FAILED, 0
    best = np.iinfo(np.int64).min
    for k in range(n):
        best = max(best, totals[k])
    _pack_ties(totals, best, bits)
    return WINDOW_OK, best


@njit(cache=True, nogil=True)
def window_from_rows(failed, totals, positions, bits):  # type: ignore[no-untyped-def]
    """``window_reduce``'s answer from the rows' own verdicts and totals
    (``evaluate_rows``) for ``positions`` as ``ShardWindows.span`` gives them: one
    ascending run, or two (a window wrapping the order's end: gathered)."""
    n = positions.shape[0]
    p0 = positions[0]
    if positions[n - 1] - p0 == n - 1:  # ascending and distinct: one run
        return _from_run(failed[p0 : p0 + n], totals[p0 : p0 + n], bits)
    return _from_run(failed[positions], totals[positions], bits)


class WindowCall:
    """``window_reduce`` for the pods of one prepared shape over one ``OrderedColumns``
    layout (kept by the view until its next full copy, ``window_call``): the packed
    arguments made once, a pod changes the positions only.

    Row scores. A pod's total on a row reads the row and the shape only, except where
    the kernel chooses a path for the whole window (NodeResourcesFit's, from the
    window's allocatable and products; DefaultNormalizeScore's maximum). So when no
    normalised column varies over the shard and every row takes NodeResourcesFit's
    regular path (``evaluate_rows``), each row's verdict and total are computed once
    (every row of the shard, on the shape's first window) and again only for rows pod
    deltas change (``refresh``, from the view's ``sync``); a window's answer is then a
    max and a compare over its rows (``window_from_rows``), the same answer as
    ``window_reduce``'s."""

    def __init__(self, prepared: PreparedShape, view: OrderedColumns) -> None:
        table = view.table
        if table is None or prepared.version != (id(table), table.node_version):
            raise ValueError("a prepared shape of another node-table state")
        mask, extra, varying = view.shape_columns(prepared.shape)
        query = PodQuery(
            prepared.shape.requests,
            start=0,
            masks=() if mask is None else (mask,),
            normalized=varying,
            extra=extra,
            stable=True,
        )
        args = pack_pod_call(cast(NodeTable, view), prepared.profile, query, 1, _ONE)
        self._head, self._tail = args[TABLE_ARGS], args[POD_ARGS]
        self._scratch = np.empty((2, 0), dtype=np.int64)
        #: what the folded (constant) columns add to every total (``compiled._Shape``)
        self.offset = prepared.shape.offset[0]
        #: the normalised plugins whose raw columns vary over the shard, in this order,
        #: and those columns in the view's order (their maxima: ``maxima``)
        constant = prepared.shape.constant
        names = [n for n, c in zip(prepared.names, constant, strict=True) if c is None]
        self.varying = [(n, s.raw) for n, s in zip(names, varying, strict=True)]
        self.constant = prepared.constant()
        #: row scores (class docstring): None until the first window; ``usable`` False
        #: when they cannot stand for windows (then every window runs the kernel)
        self.usable = not varying
        self._failed: np.ndarray | None = None
        self._totals = np.zeros(0, dtype=np.int64)
        self._size = len(view.rows)

    def _rows(self, positions: np.ndarray) -> bool:
        assert self._failed is not None
        n = len(positions)
        if self._scratch.shape[1] < n:
            self._scratch = np.empty((2, n), dtype=np.int64)
        regular = evaluate_rows(  # type: ignore[call-arg]
            *self._head, positions, *self._tail, self._scratch, self._failed, self._totals
        )
        return bool(regular)

    def refresh(self, positions: np.ndarray) -> None:
        """Rows at ``positions`` changed (pod deltas): their row scores again."""
        if self._failed is not None and self.usable and len(positions):
            self.usable = self._rows(np.ascontiguousarray(positions, dtype=np.int64))

    def __call__(self, positions: np.ndarray) -> tuple[int, int, np.ndarray]:
        """(outcome, best with the folded columns' share, tie bits) of ``positions``."""
        n = len(positions)
        bits = np.empty((n + 7) >> 3, dtype=np.uint8)
        if self.usable and self._failed is None:
            self._failed = np.ones(self._size, dtype=np.uint8)
            self._totals = np.zeros(self._size, dtype=np.int64)
            self.usable = self._rows(np.arange(self._size, dtype=np.int64))
        if self.usable:
            outcome, best = window_from_rows(self._failed, self._totals, positions, bits)
        else:
            if self._scratch.shape[1] < n:
                self._scratch = np.empty((2, n), dtype=np.int64)
            outcome, best = window_reduce(  # type: ignore[call-arg]
                *self._head, positions, *self._tail, self._scratch, bits
            )
        return int(outcome), int(best) + self.offset, bits

    def maxima(self, positions: np.ndarray | slice) -> dict[str, int]:
        """Per normalised plugin, the highest raw score over ``positions``."""
        out = dict(self.constant)
        for name, raw in self.varying:
            out[name] = int(raw[positions].max())
        return out


def window_call(view: OrderedColumns, prepared: PreparedShape) -> WindowCall:
    """The view's ``WindowCall`` for ``prepared``'s shape (made on first use; the view
    drops them with its layout and refreshes their row scores through pod deltas)."""
    got = view.calls.get(id(prepared.shape))
    if got is None or got[0] is not prepared.shape:
        if len(view.calls) >= CALLS_KEPT:
            view.calls.clear()
        got = (prepared.shape, WindowCall(prepared, view))
        view.calls[id(prepared.shape)] = got
    call: WindowCall = got[1]
    return call


_ONE = np.zeros(1, dtype=np.int64)


def window_reduce_reference(
    prepared: PreparedShape, view: OrderedColumns, positions: np.ndarray
) -> tuple[int, int, np.ndarray]:
    """``WindowCall(prepared, view)(positions)`` from the fused kernel's evaluation
    (``ShardKernels.run_ordered``, a lone row evaluated twice), for the tests."""
    k = 2 if len(positions) == 1 else 1
    ev, _ = ShardKernels.run_ordered(prepared, view, np.repeat(positions, k))
    if len(ev.feasible_rows) != len(positions) * k:
        return WINDOW_FAILED, 0, np.zeros(0, dtype=np.uint8)
    if ev.status != STATUS_OK:
        return WINDOW_INVALID, 0, np.zeros(0, dtype=np.uint8)
    if k > 1:
        return WINDOW_OK, int(ev.totals[0]), np.packbits(np.ones(1, dtype=np.bool_))
    ties = np.zeros(len(positions), dtype=np.bool_)
    ties[ev.ties] = True
    return WINDOW_OK, int(ev.best), np.packbits(ties)


def warm_up() -> None:
    """Compile (or load from numba's cache) this module's kernels now (on
    ``kernels.warm_up``'s inputs), not in a shard's first call."""
    table, profile, query = warm_up_inputs()
    args = pack_pod_call(table, profile, query, 2)
    rows = np.ascontiguousarray(args[6], dtype=np.int64)
    scratch = np.empty((2, len(rows)), np.int64)
    bits = np.empty(8, np.uint8)
    window_reduce(*args[TABLE_ARGS], rows, *args[POD_ARGS], scratch, bits)  # type: ignore[call-arg]
    cap = table.allocatable.shape[1]
    failed, totals = np.ones(cap, np.uint8), np.zeros(cap, np.int64)
    evaluate_rows(*args[TABLE_ARGS], rows, *args[POD_ARGS], scratch, failed, totals)  # type: ignore[call-arg]
    window_from_rows(failed, totals, rows, bits)
