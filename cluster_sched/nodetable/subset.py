"""Copies of some rows of a NodeTable (``NodeTable.subset``), kept apart from the class
so the table module stays one screenful of concerns."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.nodetable.overflow import OverflowLedger

__all__ = ["subset_of"]


def subset_of(self: Any, rows: np.ndarray, row_columns: tuple[str, ...]) -> Any:
    """A new table holding copies of ``rows`` (as rows 0..k-1), for simulations that
    add or remove pods without touching this one: nominated pods in Filter and
    preemption dry-runs. Interners are shared (append-only), columns copied."""
    rows = np.asarray(rows, dtype=np.int64)
    t = object.__new__(type(self))
    t.__dict__.update(self.__dict__)
    k = len(rows)
    t._cap = max(k, 1)
    t.size = k
    idx = rows if k else np.zeros(1, dtype=np.int64)
    for attr in row_columns:
        col = getattr(self, attr)[..., idx].copy()
        if not k:
            col = col[..., :0]
        setattr(t, attr, col)
    t.labels = {key: col[rows].copy() for key, col in self.labels.items()}
    t.names = [self.names[r] for r in rows.tolist()]
    t.nodes = [self.nodes[r] for r in rows.tolist()]
    t.index = {n: i for i, n in enumerate(t.names) if n is not None}
    t._free_rows = []
    t.row_pods = [d.copy() for d in map(self.row_pods.__getitem__, rows.tolist())]
    remap = {int(r): i for i, r in enumerate(rows.tolist())}
    t._image_rows = {
        img: {remap[r]: size for r, size in present.items() if r in remap}
        for img, present in self._image_rows.items()
    }
    t._drop_derived()
    # add_pod may intern new resources and host ports: a shared interner would get ids
    # the parent's matrices have no row for. Other interners only grow with nodes.
    t.resources = self.resources.copy()
    t.ports = self.ports.copy()
    t.zone_list = self.zone_list.copy()
    t._memo = {}
    t._vectors = {}  # column ids of this table's own resource interner
    t._memo_version = (-1, -1)
    t.node_version = self.node_version + 1_000_000_000
    t.pod_index = self.pod_index.copy_rows(rows, t)
    t.overflow = self.overflow.subset(remap) if self.overflow else OverflowLedger()
    t.volumes = self.volumes.copy_rows(rows)
    return t
