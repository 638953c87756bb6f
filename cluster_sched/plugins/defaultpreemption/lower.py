"""Per row, the pods a preemptor of priority ``p`` could evict: how many, and how much of
some resources they request, as columns (``lower_columns``).

Removing every lower-priority pod is the first step of each node's dry run
(SelectVictimsOnNode); whether the preemptor then fits under NodeResourcesFit is
arithmetic on these sums. Walking every node's pods for them on every preemption is what
made a preemption cost a Python loop over the nodes; the sums change only on the rows
whose pods changed, so they are kept per table and per (priority, resources) and
recomputed only for the rows whose ``NodeTable.row_version`` moved since. A pod's
priority and requests are part of its accounting (a pod object replaced without a
version change keeps both, ``cache.same_accounting``), so a cached row stays exact.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cluster_sched.nodetable.table import NodeTable

__all__ = ["LowerSums", "lower_columns"]

#: (priority, resource names) entries kept per table before the oldest is dropped
_MAX_ENTRIES = 16
#: where a sum is held (the caller leaves such rows out, see ``lower_columns``)
_HELD = 2**62


@dataclass(slots=True)
class LowerSums:
    """For every row of a table (length ``cap``): ``count`` of pods of priority < p and
    ``sums[c]``, their requests of resource ``names[c]``; ``version`` is the row's
    ``row_version`` they were computed at (-1: never)."""

    names: tuple[str, ...]
    count: np.ndarray
    sums: np.ndarray
    version: np.ndarray


_CACHE: weakref.WeakKeyDictionary[NodeTable, dict[tuple[int, tuple[str, ...]], LowerSums]] = (
    weakref.WeakKeyDictionary()
)


def _fresh(cap: int, names: tuple[str, ...]) -> LowerSums:
    return LowerSums(
        names,
        np.zeros(cap, dtype=np.int64),
        np.zeros((len(names), cap), dtype=np.int64),
        np.full(cap, -1, dtype=np.int64),
    )


def lower_columns(
    table: NodeTable, priority: int, names: Sequence[str], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(count[rows], sums[:, rows])`` of the pods of priority < ``priority`` on ``rows``
    (int64[k], int64[len(names), k]). Sums are plain int64 additions of the pods'
    requests, held at 2**62 at most: rows whose pods' amounts come near int64's range
    (``NodeTable.amount_bound``) are the caller's to leave out."""
    key = (priority, tuple(names))
    entries = _CACHE.get(table)
    if entries is None:
        entries = _CACHE[table] = {}
    hit = entries.get(key)
    cap = len(table.row_version)
    if hit is None or len(hit.version) != cap:
        if hit is None and len(entries) >= _MAX_ENTRIES:
            entries.pop(next(iter(entries)))
        hit = entries[key] = _fresh(cap, key[1])
    current = table.row_version[rows]
    stale = rows[hit.version[rows] != current]
    if len(stale):
        _recompute(hit, table, priority, stale)
        hit.version[stale] = table.row_version[stale]
    return hit.count[rows], hit.sums[:, rows]


def _recompute(hit: LowerSums, table: NodeTable, priority: int, rows: np.ndarray) -> None:
    row_pods = table.row_pods
    names = hit.names
    for r in rows.tolist():
        lower = [p for p in row_pods[r].values() if p.priority < priority]
        hit.count[r] = len(lower)
        for c, name in enumerate(names):
            hit.sums[c, r] = min(sum(p.requests.get(name, 0) for p in lower), _HELD)
