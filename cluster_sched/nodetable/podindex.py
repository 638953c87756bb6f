"""Per-node pod indexes the cross-node plugins read (InterPodAffinity, PodTopologySpread).

The NodeTable owns one PodIndex and calls it on every pod add/remove and row change, so
the index stays incremental like the resource columns. This base version keeps nothing;
the cross-node plugins extend it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cluster_sched.api.objects import Pod

if TYPE_CHECKING:
    from cluster_sched.nodetable.table import NodeTable


class PodIndex:
    """Hook points: ``grow`` (rows reallocated), ``add`` (pod accounted, sign ±1),
    ``clear_row`` (node removed), ``copy_rows`` (a subset table for simulations)."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table

    def grow(self, cap: int) -> None:
        return None

    def add(self, row: int, pod: Pod, sign: int) -> None:
        return None

    def clear_row(self, row: int) -> None:
        return None

    def copy_rows(self, rows: np.ndarray, new_table: NodeTable) -> PodIndex:
        return PodIndex(new_table)
