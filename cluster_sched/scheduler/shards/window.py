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
from cluster_sched.kernels.evaluate import pack_pod_call, warm_up_inputs
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.shards.compiled import PreparedShape, ShardKernels
from cluster_sched.scheduler.shards.ordered import OrderedColumns

__all__ = [
    "WINDOW_FAILED",
    "WINDOW_INVALID",
    "WINDOW_OK",
    "WindowCall",
    "warm_up",
    "window_reduce",
    "window_reduce_reference",
]

#: ``window_reduce``'s outcomes: every row passed and was scored; a row failed Filter; a
#: score left [0, 100] (the plugins' path raises the framework's error)
WINDOW_OK, WINDOW_FAILED, WINDOW_INVALID = range(3)


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
    return WINDOW_OK, best


class WindowCall:
    """``window_reduce`` for the pods of one prepared shape over one synced
    ``OrderedColumns`` (a chunk's): the packed arguments made once, a pod changes the
    positions only."""

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
        self._head, self._tail = args[0:6], args[9:27]
        self._scratch = np.empty((2, 0), dtype=np.int64)
        #: what the folded (constant) columns add to every total (``compiled._Shape``)
        self.offset = prepared.shape.offset[0]
        #: the normalised plugins whose raw columns vary over the shard, in this order,
        #: and those columns in the view's order (their maxima: ``maxima``)
        constant = prepared.shape.constant
        names = [n for n, c in zip(prepared.names, constant, strict=True) if c is None]
        self.varying = [(n, s.raw) for n, s in zip(names, varying, strict=True)]
        self.constant = prepared.constant()

    def __call__(self, positions: np.ndarray) -> tuple[int, int, np.ndarray]:
        """(outcome, best with the folded columns' share, tie bits) of ``positions``."""
        n = len(positions)
        if self._scratch.shape[1] < n:
            self._scratch = np.empty((2, n), dtype=np.int64)
        bits = np.empty((n + 7) >> 3, dtype=np.uint8)
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
    """Compile (or load from numba's cache) ``window_reduce`` now (``kernels.warm_up``'s
    inputs), not in a shard's first call."""
    table, profile, query = warm_up_inputs()
    args = pack_pod_call(table, profile, query, 2)
    rows = np.ascontiguousarray(args[6], dtype=np.int64)
    scratch = np.empty((2, len(rows)), np.int64)
    window_reduce(*args[0:6], rows, *args[9:27], scratch, np.empty(8, np.uint8))  # type: ignore[call-arg]
