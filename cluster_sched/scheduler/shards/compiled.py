"""A shard's window evaluated by the coordinator's compiled kernels (``kernels``).

The same fused kernel the compiled path runs on the replica (NodeResourcesFit Filter and
Score, BalancedAllocation, the best-score tie set), over the shard's rows of a window in
window order, with the other plugins as columns over every row of the shard, made once
per pod shape and node-table state (``fast_path`` does the same on the replica):

- Filter: the other active Filter plugins' verdicts, one bool column (only plugins whose
  verdict is the node's and the pod's own: no cross-node plugin active);
- Score: TaintToleration and NodeAffinity raw scores, normalised by the kernel over the
  rows it finds feasible (the shard's rows of the window: ``reduce`` checks that
  every shard's maximum is the same), ImageLocality pre-weighted.

A column that holds one value over every row of the shard (no taint a pod does not
tolerate, no preferred affinity, no image: the usual pod) is not read per row: the mask
is dropped when every row passes, and a normalised or as-is score column becomes its
weighted contribution, added to every total after the kernel (``_Shape.offset``) and
reported as the window's maximum (``PreparedShape.constant``). The kernel then streams
fewer columns per window row; the totals, best and tie sets are the same.

A pod shape here is what those columns read of the pod (containers, tolerations,
affinity, node selector, node name), the skips of its PreFilter and PreScore, and the
cluster-wide facts ImageLocality reads. ``evaluate`` returns None where the kernel does
not model the pod (the caller runs the plugins' numpy path, which gives the same
answer).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.state_codec import encode_value
from cluster_sched.kernels import (
    VALUE_LIMIT,
    Evaluation,
    KernelProfile,
    KernelProfiles,
    NormalizedScore,
    PodQuery,
    PodRequests,
    evaluate_pod,
)
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names
from cluster_sched.scheduler.compiled_scores import (
    AS_IS_SCORES,
    FUSED_SCORES,
    NORMALIZED_SCORES,
    score_columns,
)

if TYPE_CHECKING:
    from cluster_sched.scheduler.shards.ordered import OrderedColumns

__all__ = ["PreparedShape", "ShardKernels"]

#: Filter plugins taken as a verdict column (their verdicts are the node's and pod's own)
COLUMN_FILTERS = frozenset(
    {names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION, names.NODE_AFFINITY}
)
#: shapes remembered (cleared when full: a cache, never a leak)
SHAPES = 256
_SPEC_FIELDS = ("containers", "initContainers", "tolerations", "affinity", "nodeSelector")


#: a constant normalised column is folded only below this (100 * value cannot wrap)
_FOLD_LIMIT = 1 << 40


@dataclass(slots=True)
class _Shape:
    mask: np.ndarray | None
    #: every normalised plugin's raw column (``PreparedShape.names``' order)
    normalized: tuple[NormalizedScore, ...]
    extra: np.ndarray | None
    requests: PodRequests
    #: the normalised columns the kernel reads (the others are constant, folded)
    varying: tuple[NormalizedScore, ...] = ()
    #: the folded normalised columns' value (by position in ``normalized``)
    constant: tuple[int | None, ...] = ()
    #: what the folded columns add to every total: (with normalisation, without)
    offset: tuple[int, int] = (0, 0)


def _constant(col: np.ndarray, every: np.ndarray) -> int | None:
    """The one value ``col`` holds on every row of ``every``, or None."""
    if not len(every):
        return None
    values = col[every]
    low, high = int(values.min()), int(values.max())
    return low if low == high else None


def _folded(score: NormalizedScore, value: int) -> int:
    """DefaultNormalizeScore of a column holding ``value`` on every feasible row, weighted
    (``fused._normalized_into``: maximum > 0 gives 100 per row, else the raw value),
    reversed where the plugin reverses."""
    s = 100 if value > 0 else value
    return (100 - s if score.reverse else s) * score.weight


def _fold(shape: _Shape, every: np.ndarray) -> _Shape:
    """``shape`` with the columns constant over ``every`` folded (module docstring)."""
    if shape.mask is not None and len(every) and bool(shape.mask[every].all()):
        shape.mask = None
    as_is = 0
    if shape.extra is not None:
        value = _constant(shape.extra, every)
        if value is not None and abs(value) < _FOLD_LIMIT:
            shape.extra, as_is = None, value
    varying: list[NormalizedScore] = []
    constant: list[int | None] = []
    normalized = 0
    for score in shape.normalized:
        value = _constant(score.raw, every)
        if value is None or not 0 <= value < _FOLD_LIMIT:
            varying.append(score)
            constant.append(None)
        else:
            constant.append(value)
            normalized += _folded(score, value)
    shape.varying, shape.constant = tuple(varying), tuple(constant)
    shape.offset = (as_is + normalized, as_is)
    return shape


@dataclass(frozen=True, slots=True)
class PreparedShape:
    """A pod shape's kernel inputs over one node-table state (``ShardKernels.prepare``)."""

    profile: KernelProfile
    shape: _Shape
    #: the normalised plugins' names, in ``shape.normalized``'s order
    names: tuple[str, ...]
    #: (id(table), node_version) the columns were made for
    version: tuple[int, int]

    def constant(self) -> dict[str, int]:
        """The normalised plugins whose raw score is one value on every row: that value
        (the maximum over any window of the shard)."""
        got = zip(self.names, self.shape.constant, strict=True)
        return {name: value for name, value in got if value is not None}


class ShardKernels:
    """Per-profile kernel inputs and per-shape columns of one shard's table."""

    def __init__(self) -> None:
        self._profiles = KernelProfiles()
        self._shapes: dict[tuple[Any, ...], _Shape] = {}
        self._version: tuple[int, int] = (-1, -1)
        self._small = False

    def evaluate(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        doc: Any,
        facts: Any,
        table: NodeTable,
        rows: np.ndarray,
        normalize: bool = True,
    ) -> tuple[Evaluation, dict[str, np.ndarray]] | None:
        """The kernel's evaluation of ``rows`` (every one, in order; PreScore done) and
        the raw normalised-plugin columns, or None for the numpy path. ``normalize``
        False: the totals leave the normalised plugins out (the caller adds them under
        maxima of its own)."""
        prepared = self.prepare(fwk, state, pod, doc, facts, table)
        return None if prepared is None else self.run(prepared, table, rows, normalize)

    def prepare(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        doc: Any,
        facts: Any,
        table: NodeTable,
    ) -> PreparedShape | None:
        """The kernel's inputs for ``pod``'s shape over ``table`` (PreScore done), or None
        where the kernel does not model the pod: every pod of the shape may then be
        evaluated by ``run`` alone (``reduce``'s compact asks)."""
        profile = self._profiles.of(fwk)
        if profile is None or not isinstance(doc, dict):
            return None
        version = (id(table), table.node_version)
        if version != self._version:
            self._shapes.clear()
            self._version = version
            self._small = bool(table.allocatable.max(initial=0) < VALUE_LIMIT)
        spec = doc.get("spec") or {}
        key = (
            id(fwk),
            encode_value([spec.get(f) for f in _SPEC_FIELDS]),
            # the amounts the resource plugins read: containers plus spec.overhead and
            # pod-level resources, which the spec fields above do not all carry
            tuple(sorted(pod.requests.items())),
            pod.nonzero_cpu,
            pod.nonzero_memory,
            spec.get("nodeName"),
            frozenset(state.skip_filter_plugins),
            frozenset(state.skip_score_plugins),
            encode_value(facts),
        )
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shape(fwk, state, pod, table, profile)
            if shape is None:
                return None
            if len(self._shapes) >= SHAPES:
                self._shapes.clear()
            self._shapes[key] = shape
        if not self._small or not self._in_domain(table, pod):
            return None
        return PreparedShape(profile, shape, tuple(self._names(fwk, state)), version)

    @staticmethod
    def run(
        prepared: PreparedShape, table: NodeTable, rows: np.ndarray, normalize: bool = True
    ) -> tuple[Evaluation, dict[str, np.ndarray]]:
        """``evaluate`` of ``rows`` for a pod of ``prepared``'s shape (the same node-table
        state: ``prepared.version``)."""
        if prepared.version != (id(table), table.node_version):
            raise ValueError("a prepared shape of another node-table state")
        shape = prepared.shape
        return ShardKernels._run(prepared, table, rows, shape.mask, shape.extra, normalize)

    @staticmethod
    def run_ordered(
        prepared: PreparedShape, view: OrderedColumns, positions: np.ndarray
    ) -> tuple[Evaluation, dict[str, np.ndarray]]:
        """``run`` over ``view``'s copy of the columns (``ordered``): ``positions`` in its
        order instead of rows (feasible "rows" come back as positions). ``view`` is synced
        to the table ``prepared`` was made for."""
        table = view.table
        if table is None or prepared.version != (id(table), table.node_version):
            raise ValueError("a prepared shape of another node-table state")
        mask, extra, varying = view.shape_columns(prepared.shape)
        table_like = cast(NodeTable, view)  # the columns and resources the kernel reads
        return ShardKernels._run(prepared, table_like, positions, mask, extra, True, varying)

    @staticmethod
    def _run(
        prepared: PreparedShape,
        table: NodeTable,
        rows: np.ndarray,
        mask: np.ndarray | None,
        extra: np.ndarray | None,
        normalize: bool,
        varying: tuple[NormalizedScore, ...] | None = None,
    ) -> tuple[Evaluation, dict[str, np.ndarray]]:
        shape = prepared.shape
        query = PodQuery(
            shape.requests,
            start=0,
            masks=() if mask is None else (mask,),
            normalized=(shape.varying if varying is None else varying) if normalize else (),
            extra=extra,
            stable=True,
        )
        ev = evaluate_pod(table, prepared.profile, query, len(rows), rows)
        offset = shape.offset[0 if normalize else 1]
        if offset and len(ev.feasible_rows) >= 2:  # scored: the folded columns' share
            ev = replace(ev, totals=ev.totals + offset, best=ev.best + offset)
        return ev, {name: n.raw for name, n in zip(prepared.names, shape.normalized, strict=True)}

    @staticmethod
    def _names(fwk: Framework, state: CycleState) -> list[str]:
        return [pl.name for pl in fwk.active_score_plugins(state) if pl.name in NORMALIZED_SCORES]

    def _shape(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        profile: KernelProfile,
    ) -> _Shape | None:
        active = [pl.name for pl in fwk.filter if pl.name not in state.skip_filter_plugins]
        others = [n for n in active if n != names.NODE_RESOURCES_FIT]
        if any(n not in COLUMN_FILTERS for n in others):
            return None
        scoring = fwk.active_score_plugins(state)
        if any(
            pl.name not in FUSED_SCORES
            and pl.name not in NORMALIZED_SCORES
            and pl.name not in AS_IS_SCORES
            for pl in scoring
        ):
            return None
        requests = PodRequests.of_pod(pod, profile)
        if (
            requests.balanced is not None
            and names.NODE_RESOURCES_BALANCED_ALLOCATION in state.skip_score_plugins
        ):
            return None
        cap = table.allocatable.shape[1]
        every = table.order()
        nodes = NodeSlice(table, every)
        mask = None
        if others:
            mask = np.zeros(cap, dtype=np.bool_)
            mask[every] = fwk.run_filter(state, pod, nodes, only=frozenset(others)).passed
        normalized, extra = score_columns(fwk, state, pod, table, scoring, nodes, every)
        return _fold(_Shape(mask, normalized, extra, requests), every)

    @staticmethod
    def _in_domain(table: NodeTable, pod: Pod) -> bool:
        """The pod's and the rows' amounts are below VALUE_LIMIT (allocatable is checked
        once per node-table state; ``fast_path._in_domain`` has the reasoning)."""
        biggest = max(pod.nonzero_cpu, pod.nonzero_memory, max(pod.requests.values(), default=0))
        return biggest < VALUE_LIMIT and table.amount_bound_ceiling + biggest < VALUE_LIMIT
