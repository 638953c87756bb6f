"""The calls the cycle makes: one pod, or a batch of pods against the same table state.

Packs a NodeTable's columns and the pods' PodQuery into the arrays of ``kernels.fused``
(every array int64 / uint8, C-contiguous and writable, so numba compiles one
specialisation per entry point and loads it from its on-disk cache afterwards).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.config.plugin_args import NodeResourcesFitArgs, ResourceSpec
from cluster_sched.kernels import fused
from cluster_sched.kernels.inputs import (
    BatchEvaluation,
    Evaluation,
    KernelProfile,
    NormalizedScore,
    PodQuery,
    PodRequests,
)
from cluster_sched.nodetable.interner import Interner
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.noderesources.resources import is_scalar_resource

_NO_IDS = np.zeros(0, dtype=np.int64)
_NO_FLAGS = np.zeros(0, dtype=np.uint8)
#: stand-ins for an empty stack of columns (never indexed: no ids point into them)
_NO_MASKS = np.zeros((0, 1), dtype=np.uint8)
_NO_COLUMNS = np.zeros((0, 1), dtype=np.int64)


def _i64(values: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64).reshape(-1)


def _writable(a: np.ndarray, dtype: type) -> np.ndarray:
    """``a`` as a C-contiguous writable array of ``dtype``: read-only arrays (the table's
    memoised masks, its cached order) would make numba compile a second specialisation."""
    out: np.ndarray = np.ascontiguousarray(a, dtype=dtype)
    return out if out.flags.writeable else out.copy()


def _score_req(res: Interner[str], specs: Sequence[ResourceSpec], pod: np.ndarray) -> np.ndarray:
    """int64[2, m]: per configured score resource, the table column (-1 where
    allocatable_and_requested leaves it at zero: a scalar the pod does not request,
    ``pods``, a name no node has) and the pod's request."""
    cols = [
        -1 if s.name == PODS or (is_scalar_resource(s.name) and pod[i] == 0) else res.get(s.name)
        for i, s in enumerate(specs)
    ]
    return np.array([cols, pod], dtype=np.int64).reshape(2, len(specs))


def _packed(table: NodeTable, profile: KernelProfile, req: PodRequests) -> _Pod:
    """``_Pod`` of ``req``, memoised on it: resource columns are append-only, so the
    vectors stay valid while the interner's length (and identity) is unchanged."""
    res = table.resources
    key = (id(res), len(res), id(profile))
    hit = req.packed.get(key)
    if hit is not None and hit[0] is res and hit[1] is profile:
        return hit[2]  # type: ignore[no-any-return]
    pod = _Pod(table, profile, req)
    if len(req.packed) > 8:
        req.packed.clear()
    req.packed[key] = (res, profile, pod)
    return pod


class _Pod:
    """One pod's request vectors against one table's resource columns."""

    __slots__ = ("b_req", "bal_weight", "fit_req", "s_req")

    def __init__(self, table: NodeTable, profile: KernelProfile, req: PodRequests) -> None:
        res = table.resources
        checked = [(res.get(name), amount) for name, amount in req.checked if amount > 0]
        #: int64[2, q]: NodeResourcesFit's checked (column, amount)
        self.fit_req = np.array(checked, dtype=np.int64).reshape(-1, 2).T.copy()
        self.s_req = _score_req(res, profile.fit.resources, req.fit_score)
        ba = profile.balanced
        m2 = 0 if ba is None else len(ba.resources)
        if ba is None or req.balanced is None or profile.balanced_weight == 0:
            self.bal_weight = 0
            self.b_req = np.zeros((2, m2), dtype=np.int64)
        else:
            self.bal_weight = profile.balanced_weight
            self.b_req = _score_req(res, ba.resources, req.balanced)


class _Columns:
    """Distinct per-row columns of a call (pods of one Deployment share their memoised
    masks), stacked once; ``add`` gives a column's stack row."""

    def __init__(self, cap: int, dtype: type, empty: np.ndarray) -> None:
        self._index: dict[object, int] = {}
        self._cols: list[np.ndarray] = []
        self._cap = cap
        self._dtype = dtype
        self._empty = empty

    def add(self, col: np.ndarray, key: object = None) -> int:
        """Stack row of ``col``; columns are told apart by identity unless ``key``."""
        key = id(col) if key is None else key
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self._cols)
            self._cols.append(col)
        return i

    def stack(self) -> np.ndarray:
        """[columns, cap]; a column shorter than cap (rows 0..size-1 only) is zero-padded."""
        if not self._cols:
            return self._empty
        out: np.ndarray = np.zeros((len(self._cols), self._cap), dtype=self._dtype)
        for i, c in enumerate(self._cols):
            c = np.asarray(c)[: self._cap]
            out[i, : len(c)] = c
        return out


class _Normalized(_Columns):
    """NormalizedScore columns: a stack row per distinct (column, reverse, weight)."""

    def __init__(self, cap: int) -> None:
        super().__init__(cap, np.int64, _NO_COLUMNS)
        self.reverse: list[bool] = []
        self.weight: list[int] = []

    def add_score(self, s: NormalizedScore) -> int:
        i = self.add(s.raw, (id(s.raw), s.reverse, s.weight))
        if i == len(self.reverse):
            self.reverse.append(s.reverse)
            self.weight.append(s.weight)
        return i

    def flags(self) -> tuple[np.ndarray, np.ndarray]:
        """(reverse uint8[N], weight int64[N]) per stack row."""
        if not self.reverse:
            return _NO_FLAGS, _NO_IDS
        return np.array(self.reverse, dtype=np.uint8), _i64(self.weight)


_TableArgs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _table_args(table: NodeTable) -> _TableArgs:
    return (
        table.allocatable,
        table.requested,
        table.free,
        table.nonzero,
        table.pod_count,
        table.allowed_pods,
    )


def _order(table: NodeTable, order: np.ndarray | None) -> np.ndarray:
    return _writable(table.order() if order is None else order, np.int64)


def _check(to_find: int) -> None:
    if to_find < 1:
        raise ValueError(f"to_find must be >= 1 (numFeasibleNodesToFind), got {to_find}")


#: Packed columns of ``stable`` queries (see PodQuery.stable), by the columns' identity.
_STABLE: dict[tuple[object, ...], tuple[tuple[object, ...], _Packed]] = {}
STABLE_CACHE_SIZE = 256

_Packed = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int
]


def _pack_columns(cap: int, query: PodQuery) -> _Packed:
    """The query's mask, normalized and extra columns as the kernel's stacks."""
    if query.masks:
        masks = _Columns(cap, np.bool_, _NO_MASKS)
        mask_ids = _i64([masks.add(m) for m in query.masks])
        mask_stack = masks.stack().view(np.uint8)
    else:
        mask_ids, mask_stack = _NO_IDS, _NO_MASKS
    if query.normalized:
        norm = _Normalized(cap)
        norm_ids = _i64([norm.add_score(s) for s in query.normalized])
        norm_stack = norm.stack()
        reverse, weight = norm.flags()
    else:
        norm_stack, norm_ids, reverse, weight = _NO_COLUMNS, _NO_IDS, _NO_FLAGS, _NO_IDS
    extra, extra_id = _NO_COLUMNS, -1
    if query.extra is not None:
        extras = _Columns(cap, np.int64, _NO_COLUMNS)
        extra_id = extras.add(query.extra)
        extra = extras.stack()
    return mask_stack, mask_ids, norm_stack, norm_ids, reverse, weight, extra, extra_id


#: ``pack_pod_call``'s arguments by part, for callers that pass the kernel's table columns
#: or the pod's own arguments to another kernel: the table's six columns (allocatable,
#: requested, free, nonzero, pod_count, allowed_pods), then the rows, the window's
#: start and how many to find, then the pod's query (requests, masks, scores, extra)
TABLE_ARGS = slice(0, 6)
POD_ARGS = slice(9, 27)


def pack_pod_call(
    table: NodeTable,
    profile: KernelProfile,
    query: PodQuery,
    to_find: int,
    order: np.ndarray | None = None,
) -> tuple[object, ...]:
    """The arguments of ``fused.evaluate_pod_kernel`` for one query (its ``out`` array
    last): what ``evaluate_pod`` passes, for benchmarks that call the kernel directly.

    Table columns as NodeTable (int64[R, cap], nonzero int64[2, cap], pod_count and
    allowed_pods int64[cap]); ``order`` int64[n] rows in nodeTree order, the window
    starting at ``start % n``; ``masks`` uint8[M, cap] (non-zero = passes), rows
    ``mask_ids`` apply. ``fit_req`` int64[2, q]: NodeResourcesFit's checked (column,
    amount), column -1 where no node has the resource. ``s_req`` int64[2, m]: per
    configured Fit score resource (column, -1 when skipped; the pod's request), with
    ``s_srcs``/``s_weights`` [m] from the profile; ``fit_weight`` 0: not scored. ``b_req``
    the same for BalancedAllocation, ``bal_weight`` 0: not scored (PreScore Skip).
    ``norm`` int64[N, cap] raw DefaultNormalizeScore columns (rows ``norm_ids`` apply,
    reversed where ``norm_reverse``, times ``norm_weight``); ``extra`` int64[E, cap] row
    ``extra_id`` (-1: none) is added as is.
    """
    _check(to_find)
    rows = _order(table, order)
    cap = table.allocatable.shape[1]
    pod = _packed(table, profile, query.requests)
    if query.stable:
        sources: tuple[object, ...] = (
            *query.masks,
            *(s.raw for s in query.normalized),
            query.extra,
        )
        key = (
            cap,
            tuple(map(id, sources)),
            tuple((s.reverse, s.weight) for s in query.normalized),
        )
        hit = _STABLE.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], sources, strict=True)):
            if len(_STABLE) >= STABLE_CACHE_SIZE:
                _STABLE.clear()
            hit = _STABLE[key] = (sources, _pack_columns(cap, query))
        columns = hit[1]
    else:
        columns = _pack_columns(cap, query)
    mask_stack, mask_ids, norm_stack, norm_ids, reverse, weight, extra, extra_id = columns
    out = np.empty((3, max(1, min(to_find, len(rows)))), dtype=np.int64)
    return (
        *_table_args(table),
        rows, query.start, to_find, pod.fit_req, mask_stack, mask_ids,
        profile.mode, profile.fit_weight, pod.s_req, profile.s_srcs, profile.s_weights,
        profile.shape_u, profile.shape_s, pod.bal_weight, pod.b_req,
        norm_stack, norm_ids, reverse, weight, extra, extra_id,
        out,
    )  # fmt: skip


def evaluate_pod(
    table: NodeTable,
    profile: KernelProfile,
    query: PodQuery,
    to_find: int,
    order: np.ndarray | None = None,
) -> Evaluation:
    """Filter, score and the best-score tie set of one pod, in one compiled pass.

    ``order``: int64[n] rows to evaluate in nodeTree order (default ``table.order()``;
    pass the PreFilterResult-narrowed rows otherwise); the window starts at
    ``query.start % n`` and stops at the ``to_find``-th feasible node.
    """
    args = pack_pod_call(table, profile, query, to_find, order)
    found, evaluated, best, n_ties, status = fused.evaluate_pod_kernel(*args)
    out = args[-1]
    return Evaluation(out[0, :found], out[1, :found], evaluated, best, out[2, :n_ties], status)  # type: ignore[index]


def fits_row(table: NodeTable, profile: KernelProfile, requests: PodRequests, row: int) -> bool:
    """NodeResourcesFit's verdict on one row, as ``evaluate_pod`` with ``order=[row]``
    gives it (``found == 1``) without a kernel call: one node is a few scalar compares,
    and the call's packing and dispatch cost ten times more (OpportunisticBatching's
    one-node checks ask this per pod)."""
    if int(table.allowed_pods[row]) - int(table.pod_count[row]) < 1:
        return False
    cols, amounts = _packed(table, profile, requests).fit_req
    free = table.free
    for col, amount in zip(cols.tolist(), amounts.tolist(), strict=True):
        if col < 0 or int(free[col, row]) < amount:
            return False
    return True


def _ragged(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Int lists as int64[B, max(len, 1)], zero-padded, plus their lengths."""
    lengths = [len(x) for x in lists]
    width = max(1, *lengths)
    if width == 1 and not any(lengths):
        return np.zeros((len(lists), 1), dtype=np.int64), np.zeros(len(lists), dtype=np.int64)
    padded = [x + [0] * (width - len(x)) for x in lists]
    return np.array(padded, dtype=np.int64), _i64(lengths)


def _fit_reqs(pods: Sequence[_Pod]) -> tuple[np.ndarray, np.ndarray]:
    """The pods' int64[2, q] checked requests as int64[B, 2, max(q, 1)] plus the q's."""
    lengths = [p.fit_req.shape[1] for p in pods]
    out = np.zeros((len(pods), 2, max(1, *lengths)), dtype=np.int64)
    for i, p in enumerate(pods):
        out[i, :, : lengths[i]] = p.fit_req
    return out, _i64(lengths)


def evaluate_batch(
    table: NodeTable,
    profile: KernelProfile,
    queries: Sequence[PodQuery],
    to_find: int,
    order: np.ndarray | None = None,
) -> BatchEvaluation:
    """``evaluate_pod`` for every query against the same table state, in one kernel call
    (the batched scheduler's speculative evaluation). Each query keeps its own start,
    masks and columns; ``evaluate_pod`` on each gives the same answers."""
    _check(to_find)
    rows = _order(table, order)
    b = len(queries)
    k = max(1, min(to_find, len(rows)))
    if not b:
        return BatchEvaluation(np.zeros((0, 3, k), dtype=np.int64), np.zeros((0, 5), np.int64))
    cap = table.allocatable.shape[1]
    # distinct request vectors once: one Deployment's pods share a PodRequests
    unique: dict[int, int] = {}
    pods: list[_Pod] = []
    pod_idx = []
    for q in queries:
        pod = _packed(table, profile, q.requests)
        u = unique.get(id(pod))
        if u is None:
            u = unique[id(pod)] = len(pods)
            pods.append(pod)
        pod_idx.append(u)
    masks, norm = _Columns(cap, np.bool_, _NO_MASKS), _Normalized(cap)
    extra = _Columns(cap, np.int64, _NO_COLUMNS)
    mask_ids, mask_n = _ragged([[masks.add(m) for m in q.masks] for q in queries])
    norm_ids, norm_n = _ragged([[norm.add_score(s) for s in q.normalized] for q in queries])
    extra_ids = _i64([extra.add(q.extra) if q.extra is not None else -1 for q in queries])
    fit_req, fit_n = _fit_reqs(pods)
    reverse, weight = norm.flags()
    out = np.empty((b, 3, k), dtype=np.int64)
    meta = np.empty((b, 5), dtype=np.int64)
    fused.evaluate_batch_kernel(
        *_table_args(table),
        rows, _i64([q.start for q in queries]), np.full(b, to_find, dtype=np.int64),
        _i64(pod_idx), fit_req, fit_n, masks.stack().view(np.uint8), mask_ids, mask_n,
        profile.mode, profile.fit_weight, np.stack([p.s_req for p in pods]), profile.s_srcs,
        profile.s_weights, profile.shape_u, profile.shape_s,
        _i64([p.bal_weight for p in pods]), np.stack([p.b_req for p in pods]),
        norm.stack(), norm_ids, norm_n, reverse, weight, extra.stack(), extra_ids,
        out, meta,
    )  # fmt: skip
    return BatchEvaluation(out, meta)


def warm_up_inputs() -> tuple[NodeTable, KernelProfile, PodQuery]:
    """A two-node table, the default resource plugins' profile and a query using every
    column kind: one small call with them compiles (or loads) an entry point for every
    later call, which packs the same argument types."""
    from cluster_sched.config.plugin_args import NodeResourcesBalancedAllocationArgs
    from cluster_sched.plugins.noderesources.balanced_allocation import BalancedAllocation
    from cluster_sched.plugins.noderesources.fit import Fit

    table = NodeTable()
    for name in ("a", "b"):
        alloc = {CPU: 4000, MEMORY: 8 << 30, PODS: 10}
        table.upsert_node(Node(ObjectMeta(name), allocatable=alloc, capacity=alloc))
    profile = KernelProfile(
        Fit(NodeResourcesFitArgs()), BalancedAllocation(NodeResourcesBalancedAllocationArgs())
    )
    requests = PodRequests(
        ((CPU, 1000), (MEMORY, 1 << 30)), _i64([1000, 1 << 30]), _i64([1000, 1 << 30])
    )
    cap = table.allocatable.shape[1]
    query = PodQuery(
        requests,
        masks=(np.ones(cap, dtype=bool),),
        normalized=(NormalizedScore(np.zeros(cap, dtype=np.int64), True, 1),),
        extra=np.zeros(cap, dtype=np.int64),
    )
    return table, profile, query


def warm_up() -> None:
    """Compile (or load from numba's on-disk cache) both entry points, so the first
    scheduling cycle does not pay for it."""
    table, profile, query = warm_up_inputs()
    evaluate_pod(table, profile, query, 2)
    evaluate_batch(table, profile, [query, PodQuery(query.requests)], 2)
