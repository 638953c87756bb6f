"""What InterPodAffinity and PodTopologySpread share: shard tables and topology counts.

Their PreFilter/PreScore need cluster-wide numbers ("matching pods per zone"), but a
shard only sees its own nodes. So each is written as a MAP over node tables
(``*_partial(compiled, table)``, one per shard, small results keyed by topology value)
and a REDUCE (``merge_domain_counts``). ``tables_of(snapshot)`` is the one place that
says which tables a process can see: today the in-process table; the distributed
executor substitutes shard results there.

``DomainCounts`` is the currency: counts per topology *value* of one topology key.
Values are strings on the wire (codes differ between shards), but a partial keeps the
interned codes of the table that produced it, so Filter on that table (or on any
``subset`` of it, which shares the interners) never touches a string.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.nodetable.interner import Interner
from cluster_sched.nodetable.table import NodeTable

__all__ = [
    "DomainCounts",
    "feasible_rows",
    "merge_domain_counts",
    "namespace_labels",
    "nodes_independent",
    "tables_of",
]


def tables_of(snapshot: Snapshot | NodeTable | None) -> list[NodeTable]:
    """The node tables PreFilter/PreScore may map over for this snapshot (a bare
    NodeTable stands for a snapshot of itself; None sees no nodes)."""
    if snapshot is None:
        return []
    if isinstance(snapshot, NodeTable):
        return [snapshot]
    return list(snapshot.tables)


def nodes_independent(fwk: Any, state: Any) -> bool:
    """No PreFilter plugin that runs for this pod (not skipped in ``state``) has
    AddPod/RemovePod extensions: adding or removing a pod on one node then changes no
    cycle state, so simulations on different nodes (nominated pods, preemption dry
    runs) cannot influence each other and may share one state and one Filter call."""
    skipped = state.skip_filter_plugins
    for pl in fwk.pre_filter:
        if pl.name in skipped:
            continue
        ext = getattr(pl, "pre_filter_extensions", None)
        if ext is not None and ext() is not None:
            return False
    return True


def namespace_labels(snapshot: Snapshot | NodeTable | None, namespace: str) -> dict[str, str]:
    """Labels of ``namespace`` (empty when unknown, as upstream assumes)."""
    if isinstance(snapshot, Snapshot):
        return snapshot.namespace_labels(namespace)
    return {}


def feasible_rows(feasible: Any, table: NodeTable) -> np.ndarray:
    """int64 rows of ``table`` among the feasible nodes, in feasible order. ``feasible``
    is a NodeSlice (rows of one table: empty for any other table) or node names."""
    ftable = getattr(feasible, "table", None)
    if ftable is not None:
        if ftable is table:
            return np.asarray(feasible.rows, dtype=np.int64)
        return np.zeros(0, dtype=np.int64)
    index = table.index
    return np.asarray([index[n] for n in feasible if n in index], dtype=np.int64)


_VALUE_ARRAYS: dict[int, tuple[Interner[str], int, np.ndarray]] = {}


def value_array(interner: Interner[str]) -> np.ndarray:
    """object[len(interner)]: the interned values, cached until the interner grows."""
    hit = _VALUE_ARRAYS.get(id(interner))
    n = len(interner)
    if hit is not None and hit[0] is interner and hit[1] == n:
        return hit[2]
    if len(_VALUE_ARRAYS) > 4096:
        _VALUE_ARRAYS.clear()
    arr = np.empty(n, dtype=object)
    arr[:] = interner.values
    _VALUE_ARRAYS[id(interner)] = (interner, n, arr)
    return arr


@dataclass(frozen=True, slots=True)
class DomainCounts:
    """int64 counts per topology value of one topology key.

    Either *coded* (``source`` interner + ``codes`` int64[k], unique) or *valued*
    (``values`` strings). Entries with a zero count are kept: for PodTopologySpread an
    eligible domain with no matching pod is still a domain.
    """

    counts: np.ndarray
    codes: np.ndarray | None = None
    source: Interner[str] | None = field(default=None, compare=False)
    strings: tuple[str, ...] | None = None
    _dense: dict[int, tuple[Interner[str], int, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def empty(cls) -> DomainCounts:
        return cls(np.zeros(0, dtype=np.int64), strings=())

    @classmethod
    def from_codes(
        cls, source: Interner[str], codes: np.ndarray, counts: np.ndarray
    ) -> DomainCounts:
        return cls(np.asarray(counts, dtype=np.int64), np.asarray(codes, dtype=np.int64), source)

    @classmethod
    def from_values(cls, values: Sequence[str], counts: Sequence[int] | np.ndarray) -> DomainCounts:
        return cls(np.asarray(counts, dtype=np.int64), strings=tuple(values))

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def values(self) -> tuple[str, ...]:
        if self.strings is not None:
            return self.strings
        assert self.source is not None and self.codes is not None
        return tuple(value_array(self.source)[self.codes].tolist())

    def items(self) -> Iterable[tuple[str, int]]:
        return zip(self.values, self.counts.tolist(), strict=True)

    def any_positive(self) -> bool:
        return bool((self.counts > 0).any())

    def nonzero(self) -> DomainCounts:
        """Only the entries with a non-zero count (upstream deletes zeroed pairs)."""
        keep = self.counts != 0
        if keep.all():
            return self
        if self.codes is not None:
            return DomainCounts(self.counts[keep], self.codes[keep], self.source)
        vals = [v for v, k in zip(self.values, keep.tolist(), strict=True) if k]
        return DomainCounts(self.counts[keep], strings=tuple(vals))

    def dense(self, interner: Interner[str] | None) -> np.ndarray:
        """int64[len(interner) + 1]: count per code of ``interner``; the extra last slot
        is 0 so ``dense[col]`` maps the absent-label code -1 to 0."""
        if interner is None:
            return np.zeros(1, dtype=np.int64)
        n = len(interner)
        hit = self._dense.get(id(interner))
        if hit is not None and hit[0] is interner and hit[1] == n:
            return hit[2]
        out = np.zeros(n + 1, dtype=np.int64)
        if self.codes is not None and self.source is interner:
            out[self.codes] = self.counts
        else:
            for value, count in self.items():
                code = interner.get(value)
                if code >= 0:
                    out[code] += count
        out.setflags(write=False)
        self._dense[id(interner)] = (interner, n, out)
        return out

    def get(self, value: str) -> int:
        if self.codes is not None and self.source is not None:
            code = self.source.get(value)
            if code < 0:
                return 0
            hit = (self.codes == code).nonzero()[0]
            return int(self.counts[hit[0]]) if len(hit) else 0
        for v, c in self.items():
            if v == value:
                return c
        return 0

    def with_delta(self, value: str, delta: int) -> DomainCounts:
        """A copy with ``delta`` added to ``value``'s count (the entry is created if new)."""
        if self.codes is not None and self.source is not None:
            code = self.source.get(value)
            if code >= 0:
                hit = (self.codes == code).nonzero()[0]
                counts = self.counts.copy()
                if len(hit):
                    counts[hit[0]] += delta
                    return DomainCounts(counts, self.codes, self.source)
                return DomainCounts(
                    np.append(counts, delta), np.append(self.codes, code), self.source
                )
        values = list(self.values)
        counts = self.counts.copy()
        if value in values:
            counts[values.index(value)] += delta
            return DomainCounts(counts, strings=tuple(values))
        return DomainCounts(np.append(counts, delta), strings=(*values, value))

    def to_wire(self) -> dict[str, list[Any]]:
        """msgpack-able form (values as strings) for shipping between processes."""
        return {"values": list(self.values), "counts": self.counts.tolist()}

    @classmethod
    def from_wire(cls, doc: Mapping[str, Sequence[Any]]) -> DomainCounts:
        return cls.from_values([str(v) for v in doc["values"]], [int(c) for c in doc["counts"]])


def merge_domain_counts(parts: Sequence[DomainCounts]) -> DomainCounts:
    """REDUCE: sum counts of the same value across shards' partials."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return DomainCounts.empty()
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    if first.source is not None and all(
        p.source is first.source and p.codes is not None for p in parts
    ):
        codes = np.concatenate([p.codes for p in parts if p.codes is not None])
        counts = np.concatenate([p.counts for p in parts])
        uniq, inv = np.unique(codes, return_inverse=True)
        return DomainCounts(np.bincount(inv, weights=counts).astype(np.int64), uniq, first.source)
    totals: dict[str, int] = {}
    for p in parts:
        for value, count in p.items():
            totals[value] = totals.get(value, 0) + count
    return DomainCounts.from_values(list(totals), list(totals.values()))


def counts_by_code(
    table: NodeTable, key: str, rows: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per code of label ``key`` over ``rows``: (sum of ``weights``, number of rows).

    ``weights`` is per table row (int64[cap]). Rows without the label are dropped. Both
    results are int64[len(interner)].
    """
    interner = table.label_values.get(key)
    col = table.labels.get(key)
    if interner is None or col is None:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    codes = col[rows]
    has = codes >= 0
    codes = codes[has]
    n = len(interner)
    present = np.bincount(codes, minlength=n)
    if weights is None:
        return present.astype(np.int64), present.astype(np.int64)
    total = np.bincount(codes, weights=weights[rows][has], minlength=n)
    return np.rint(total).astype(np.int64), present.astype(np.int64)
