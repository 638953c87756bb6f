"""The shard's kernel columns laid out in the replica's node order, so a window is a run.

A shard's rows are numbered as its nodes arrived; a window is a range of the replica's
order (nodeTree order: zones interleaved). Where arrivals do not alternate zones exactly,
the shard's rows of a window are a local shuffle of its row numbers, and the compiled
kernel reads every column through the row list (no vectorised slices): measured in the
shard actors of a full run, 22 ns per row against 13-14 over a run of rows.

``OrderedColumns`` keeps a copy of the six table columns the kernel reads (and, per pod
shape, its mask and score columns) with position ``i`` holding the shard row
``ShardWindows.rows[i]``: the rows of a window are then the positions ``i0 .. i1``, one
run. The copy is made again when the order, the node-table state (``node_version``) or
its resources change; between those only pods change the columns, and the rows their
deltas touched (``mark``) are copied over before the next evaluation (``sync``). The
kernel reads the same values in the same order as over the table, so its answer is the
same: feasible "rows" are positions here, which ``reduce`` does not read. The view also
keeps each shape's ``window.WindowCall`` (its packed arguments and row scores over this
layout): dropped with the layout, their row scores refreshed for the rows ``sync`` copies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.kernels import NormalizedScore
from cluster_sched.nodetable.table import NodeTable

__all__ = ["OrderedColumns"]

#: shapes' columns kept (cleared when full, as ``compiled.SHAPES``)
SHAPES = 256
_COLUMNS = ("allocatable", "requested", "free", "nonzero", "pod_count", "allowed_pods")


class OrderedColumns:
    """The table's kernel columns in the shard's order (module docstring). Duck-types the
    NodeTable attributes ``kernels.evaluate`` reads: the six columns and ``resources``."""

    def __init__(self) -> None:
        self.table: NodeTable | None = None
        self.key: tuple[int, ...] = ()
        #: position -> shard row, and shard row -> position (-1: not in the order)
        self.rows = np.zeros(0, dtype=np.int64)
        self.position = np.zeros(0, dtype=np.int64)
        #: shard rows whose pod accounting changed since the last ``sync``
        self.dirty: set[int] = set()
        #: per _Shape (by identity): its columns in this order
        self.shapes: dict[int, tuple[Any, Any, np.ndarray | None, tuple[NormalizedScore, ...]]] = {}
        #: per _Shape (by identity): its ``window.WindowCall`` over this layout
        self.calls: dict[int, tuple[Any, Any]] = {}
        self.resources: Any = None
        self.allocatable = self.requested = self.free = self.nonzero = np.zeros((0, 0), np.int64)
        self.pod_count = self.allowed_pods = np.zeros(0, dtype=np.int64)

    def mark(self, row: int) -> None:
        """A pod delta changed ``row``'s accounting."""
        if self.table is not None:
            self.dirty.add(row)

    def sync(self, table: NodeTable, rows: np.ndarray, order_version: int) -> None:
        """Bring the copy up to ``table`` for the order whose shard rows are ``rows``."""
        key = (order_version, len(rows), table.node_version, len(table.resources))
        if table is not self.table or key != self.key:
            self.table, self.key, self.rows = table, key, rows
            self.position = np.full(table.allocatable.shape[1], -1, dtype=np.int64)
            self.position[rows] = np.arange(len(rows), dtype=np.int64)
            self.resources = table.resources
            for name in _COLUMNS:
                col = getattr(table, name)
                setattr(self, name, np.ascontiguousarray(col[..., rows]))
            self.dirty.clear()
            self.shapes.clear()
            self.calls.clear()
            return
        if not self.dirty:
            return
        changed = np.fromiter(self.dirty, dtype=np.int64, count=len(self.dirty))
        self.dirty.clear()
        changed = changed[changed < len(self.position)]
        at = self.position[changed]
        keep = at >= 0
        changed, at = changed[keep], at[keep]
        for name in _COLUMNS:
            getattr(self, name)[..., at] = getattr(table, name)[..., changed]
        for _, call in self.calls.values():  # their row scores of those rows
            call.refresh(at)

    def shape_columns(
        self, shape: Any
    ) -> tuple[np.ndarray | None, np.ndarray | None, tuple[NormalizedScore, ...]]:
        """``shape``'s mask, extra and kernel-read normalised columns in this order."""
        got = self.shapes.get(id(shape))
        if got is None or got[0] is not shape:
            rows = self.rows
            got = (
                shape,
                None if shape.mask is None else np.ascontiguousarray(shape.mask[rows]),
                None if shape.extra is None else np.ascontiguousarray(shape.extra[rows]),
                tuple(NormalizedScore(s.raw[rows], s.reverse, s.weight) for s in shape.varying),
            )
            if len(self.shapes) >= SHAPES:
                self.shapes.clear()
            self.shapes[id(shape)] = got
        return got[1], got[2], got[3]
