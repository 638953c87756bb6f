"""Rows of a pod's window changed since the shards were asked (earlier pods of the batch
assumed, bindings, deletions), evaluated again on the coordinator's replica under the
shards' maxima (``merge``): by the compiled kernel the shards run when it models the
pod, else by the plugins."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.kernels import STATUS_OK, PodQuery, fused
from cluster_sched.kernels.evaluate import POD_ARGS, pack_pod_call
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins._helpers import div_trunc
from cluster_sched.scheduler.shards.compiled import PreparedShape, ShardKernels
from cluster_sched.scheduler.shards.reduce import DEFAULT_NORMALIZED

__all__ = ["ChangedRows", "TouchedRows", "normalized_ints"]

#: prepared pod shapes kept (``ChangedRows._compiled``)
SHAPES_KEPT = 256


def _normalized(raw: np.ndarray, maximum: int, reverse: bool) -> np.ndarray:
    """DefaultNormalizeScore of ``raw`` under the feasible set's maximum ``maximum``."""
    if maximum <= 0:
        return np.full_like(raw, MAX_NODE_SCORE) if reverse else raw.copy()
    out = div_trunc(MAX_NODE_SCORE * raw, maximum)
    return MAX_NODE_SCORE - out if reverse else out  # type: ignore[no-any-return]


def normalized_ints(raw: list[int], maximum: int, reverse: bool) -> list[int]:
    """``_normalized`` in Python ints, for the few rows a pod's rescoring reads (~4 at
    1,000,000 nodes): a handful of numpy calls on 4-element arrays cost the coordinator
    ~10 µs per plugin and pod, this ~1."""
    if maximum <= 0:
        return [MAX_NODE_SCORE] * len(raw) if reverse else list(raw)
    out = [
        (MAX_NODE_SCORE * v) // maximum if v >= 0 else -((-MAX_NODE_SCORE * v) // maximum)
        for v in raw
    ]  # truncating toward zero, as div_trunc (maximum > 0)
    return [MAX_NODE_SCORE - v for v in out] if reverse else out


def _none() -> np.ndarray:
    """No positions (a new writable array: the tie kernels take one array type)."""
    return np.zeros(0, dtype=np.int64)


class TouchedRows:
    """The replica rows changed since a flight was sent (the router's ``_touch`` calls
    ``add``), and their positions in the node order, kept sorted as they arrive.

    Every answered pod asks which positions of its window changed (``in_window``). The
    rows grow by about one per assumed pod, so the positions are placed once each, on
    the first ask after they arrive, and a window's changed positions are two
    bisections: the cost per pod is the rows new since the last ask, not every row
    changed since the flight was sent (a set made an array, masked and sorted per pod)."""

    __slots__ = ("_by", "_placed", "_sorted", "rows")

    def __init__(self) -> None:
        self.rows: list[int] = []
        self._placed = 0
        #: positions of ``rows[:_placed]`` under the order map ``_by``: sorted, distinct
        self._sorted: list[int] = []
        self._by: np.ndarray | None = None

    def add(self, row: int) -> None:
        self.rows.append(row)

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:
        return bool(self.rows)

    def __iter__(self) -> Any:
        return iter(self.rows)

    def in_window(self, position: np.ndarray, n: int, start: int, width: int) -> np.ndarray:
        """Window positions (ascending, distinct) of the changed rows among order
        positions ``start .. start+width-1`` (mod ``n``); ``position``: replica row ->
        order position (-1: none), the map the flight's order was made with."""
        if position is not self._by:  # another order: place every row again
            self._by, self._placed, self._sorted = position, 0, []
        if self._placed < len(self.rows):
            got, limit = self._sorted, len(position)
            for row in self.rows[self._placed :]:
                if 0 <= row < limit:
                    p = int(position[row])
                    if p >= 0:
                        at = bisect_left(got, p)
                        if at == len(got) or got[at] != p:
                            got.insert(at, p)
            self._placed = len(self.rows)
        got = self._sorted
        if not got:
            return _none()
        end = start + width
        lo = bisect_left(got, start)
        if end <= n:
            hi = bisect_left(got, end)
            if lo == hi:
                return _none()
            # the few positions shifted in Python: a numpy subtraction on a handful of
            # them costs more than the list
            return np.array([p - start for p in got[lo:hi]], dtype=np.int64)
        hi = bisect_left(got, end - n)
        if lo == len(got) and hi == 0:
            return _none()
        return np.array(
            [p - start for p in got[lo:]] + [p + n - start for p in got[:hi]], dtype=np.int64
        )


class ChangedRows:
    """Weighted totals of changed rows; ``miss(why)`` records why a pod was declined."""

    def __init__(self, miss: Callable[[str], None]) -> None:
        self.miss = miss
        #: the compiled kernels over the replica, and their inputs by pod shape
        self.kernels = ShardKernels()
        #: keyed by identities (``merge._shape_key``) that hold only while the batch's
        #: items keep the objects alive: ``forget`` when the batch ends
        self._prepared: dict[tuple[Any, ...], RowTotals | None] = {}

    def forget(self) -> None:
        self._prepared = {}

    def rescore(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: np.ndarray,
        maxima: Mapping[str, int],
        shape: tuple[Any, ...],
    ) -> np.ndarray | None:
        """Weighted totals of changed ``rows`` on the replica under the shards' maxima, or
        None when one no longer passes Filter or the maxima would move. ``shape``: what
        the kernel's inputs for the pod depend on (``_compiled``)."""
        compiled = self._compiled(fwk, state, pod, table, rows, maxima, shape)
        if compiled is not None:
            return compiled
        nodes = NodeSlice(table, rows)
        if not fwk.run_filter(state, pod, nodes).passed.all():
            self.miss("changed-filter")
            return None
        total = np.zeros(len(rows), dtype=np.int64)
        for name, raw in fwk.run_score(state, pod, nodes).items():
            reverse = DEFAULT_NORMALIZED.get(name)
            if reverse is not None:
                m = maxima.get(name, 0)
                if len(raw) and int(raw.max()) > m:
                    self.miss("changed-maxima")
                    return None
                raw = _normalized(raw, m, reverse)
            elif getattr(fwk.plugins[name], "normalize_score", None) is not None:
                self.miss("changed-normalize")
                return None
            if len(raw) and (raw.max() > MAX_NODE_SCORE or raw.min() < MIN_NODE_SCORE):
                self.miss("changed-range")
                return None
            total += raw * fwk.score_weights.get(name, 1)
        return total

    def _compiled(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: np.ndarray,
        maxima: Mapping[str, int],
        shape: tuple[Any, ...],
    ) -> np.ndarray | None:
        """``_rescore`` by the compiled kernel (the shards' own, ``compiled``) when it
        models the pod: its totals without the normalised plugins, which are added under
        the shards' maxima. None: the plugins' numpy path decides (also on a miss). The
        kernel's inputs are prepared once per ``shape`` (the pod's shape key, PreScore
        skips and requests: what ``ShardKernels.prepare`` reads) and node-table state,
        and its call packed once per prepared shape (``RowTotals``)."""
        one = len(rows) == 1  # the kernel scores two rows or more: the row twice
        version = (id(table), table.node_version)
        call = self._prepared.get(shape)
        if shape not in self._prepared or (call is not None and call.prepared.version != version):
            if len(self._prepared) >= SHAPES_KEPT:
                self._prepared.clear()
            prepared = self.kernels.prepare(fwk, state, pod, pod.raw, None, table)
            call = None if prepared is None else RowTotals(prepared)
            self._prepared[shape] = call
        if call is None:
            return None
        totals = call(table, np.repeat(rows, 2) if one else rows)
        if totals is None:
            return None
        total = totals[:1] if one else totals
        if not call.columns:
            return total
        added = [0] * len(total)
        for name, col in call.columns:
            raw, m = col[rows].tolist(), maxima.get(name, 0)
            if raw and max(raw) > m:
                return None
            weight = fwk.score_weights.get(name, 1)
            for i, v in enumerate(normalized_ints(raw, m, DEFAULT_NORMALIZED[name])):
                added[i] += v * weight
        total += np.asarray(added, dtype=np.int64)
        return total


class RowTotals:
    """The compiled kernel's weighted totals of a few replica rows for one prepared
    shape, without the normalised plugins (``ShardKernels.run(normalize=False)``'s
    totals, the same kernel on the same arguments), its call packed once.

    A pod's rescoring reads ~4 rows at 1,000,000 nodes: ``run`` packed the kernel's 28
    arguments per call (the query, the pod's request vectors, the stable columns' cache
    key: ~18 µs of the coordinator's ~70 per pod in rescoring). The packed arguments
    are the shape's: its requests against the table's resource columns (kept while the
    table's resource interner is the same object at the same length, as
    ``evaluate._packed`` keeps them), its mask and extra columns (the prepared shape's,
    made for its node-table state: ``prepared.version``, checked per call). The table's
    own columns are read from the table at each call (their contents change with every
    assumed pod, and a growing table replaces them)."""

    __slots__ = ("_resources", "_tail", "columns", "offset", "prepared")

    def __init__(self, prepared: PreparedShape) -> None:
        self.prepared = prepared
        shape = prepared.shape
        #: what the folded columns add to every total without normalisation
        self.offset = shape.offset[1]
        #: (name, raw column) of each normalised plugin (``prepared.names``' order)
        self.columns = tuple(zip(prepared.names, (s.raw for s in shape.normalized), strict=True))
        self._resources: tuple[object, int] | None = None
        self._tail: tuple[object, ...] = ()

    def __call__(self, table: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        """The totals of ``rows`` (int64, two or more, each passing Filter), or None when
        one fails Filter or a score is out of range (the caller's numpy path decides)."""
        prepared = self.prepared
        if prepared.version != (id(table), table.node_version):
            raise ValueError("a prepared shape of another node-table state")
        res = table.resources
        if (
            self._resources is None
            or self._resources[0] is not res
            or self._resources[1] != len(res)
        ):
            shape = prepared.shape
            query = PodQuery(
                shape.requests,
                start=0,
                masks=() if shape.mask is None else (shape.mask,),
                extra=shape.extra,
                stable=True,
            )
            args = pack_pod_call(table, prepared.profile, query, len(rows), rows)
            self._tail, self._resources = args[POD_ARGS], (res, len(res))
        n = len(rows)
        out = np.empty((3, n), dtype=np.int64)
        found, _, _, _, status = fused.evaluate_pod_kernel(  # type: ignore[call-arg]
            table.allocatable, table.requested, table.free, table.nonzero,
            table.pod_count, table.allowed_pods,
            rows, 0, n, *self._tail, out,
        )  # fmt: skip
        if status != STATUS_OK or found != n:
            return None
        totals = out[1]
        if self.offset:
            totals += self.offset
        return totals
