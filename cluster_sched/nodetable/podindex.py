"""Per-row pod counts the cross-node plugins read (InterPodAffinity, PodTopologySpread).

Those plugins ask questions like "how many pods in namespace ``ns`` matching selector
``S`` sit on each node?" or "how many pods on each node carry a required anti-affinity
term with topology key ``k`` that matches the incoming pod?". Answering them by scanning
every pod each cycle is what makes the naive scheduler slow, so the index keeps two
incremental structures instead:

- **groups**: pods sharing a *signature* (namespace, labels, terminating or not, and
  their pod (anti-)affinity) share one ``PodGroup``. A Deployment's replicas are one
  group, so the number of groups tracks workloads, not pods. Each group records how many
  of its pods sit on each row.
- **queries**: a query is a key plus a ``weight(group) -> int`` function (evaluated once
  per group, then remembered). Its answer is ``int64[cap]``: for each row, the sum of
  the weights of the pods there. Registered answers are kept up to date on every pod
  add/remove (touching only the queries whose weight is non-zero for that pod's group),
  so a cycle reads a ready column instead of walking pods.

Queries are evicted least-recently-used beyond ``MAX_QUERIES``; re-registering one costs
one pass over the groups. The NodeTable calls ``add``/``grow``/``clear_row``/``copy_rows``;
simulation tables (``NodeTable.subset``) get a lazy index that is built from their
``row_pods`` on first use, since most simulations never ask.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.nodetable.interner import Interner

#: Registered queries kept per table before the least recently used is dropped.
MAX_QUERIES = 512

#: ``weight(group)``: how much each pod of ``group`` adds to its row's count.
Weight = Callable[["PodGroup"], int]

GroupSignature = tuple[str, tuple[tuple[str, str], ...], bool, Any, Any]


class IndexedTable(Protocol):
    """What a PodIndex reads from its NodeTable (which owns the index and calls its hooks):
    row capacity, used rows, node label columns and the pods accounted per row."""

    @property
    def _cap(self) -> int:
        """Allocated rows: the length of every per-row array."""

    @property
    def size(self) -> int:
        """Rows in use (alive or freed); rows beyond hold nothing."""

    @property
    def node_version(self) -> int:
        """Changes whenever node labels (or other node columns) change."""

    @property
    def labels(self) -> Mapping[str, np.ndarray]:
        """Label key -> int32[cap] interned value code, -1 where absent."""

    @property
    def label_values(self) -> Mapping[str, Interner[str]]:
        """Label key -> interner of its values (codes index it)."""

    @property
    def row_pods(self) -> Sequence[Mapping[str, Pod]]:
        """Per row, the pods accounted on it by key (a lazy index is built from them)."""


def pod_signature(pod: Pod) -> GroupSignature:
    """What the cross-node plugins can tell apart about an existing pod: namespace, labels,
    whether it is terminating, and its pod affinity / anti-affinity."""
    aff = pod.affinity
    return (
        pod.meta.namespace,
        tuple(sorted(pod.meta.labels.items())),
        pod.meta.deletion_timestamp is not None,
        None if aff is None else aff.pod_affinity,
        None if aff is None else aff.pod_anti_affinity,
    )


@dataclass(slots=True, eq=False)
class PodGroup:
    """Pods with one signature. ``pod`` is a representative (the first seen): its
    namespace, labels and pod (anti-)affinity are the group's. ``derived`` is scratch
    space for plugins (e.g. parsed affinity terms), computed once per group."""

    gid: int
    pod: Pod
    namespace: str
    labels: Mapping[str, str]
    terminating: bool
    #: row -> number of this group's pods on it (no zero entries)
    rows: dict[int, int] = field(default_factory=dict)
    #: query id -> this group's non-zero weight in that query
    weights: dict[int, int] = field(default_factory=dict)
    derived: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class _Query:
    qid: int
    weight: Weight
    #: int64[cap]: per-row sum of weights
    counts: np.ndarray
    #: gids with a non-zero weight (to unhook them on eviction)
    groups: list[int]
    #: label key -> (node_version, int64[n_codes]): ``counts`` summed by label code,
    #: kept in step on pod changes and rebuilt when node columns change
    by_label: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)


class PodIndex:
    """Pod groups and registered per-row queries over one NodeTable (see module doc)."""

    def __init__(self, table: IndexedTable, *, lazy: bool = False) -> None:
        self.table = table
        self._built = not lazy
        self._groups: list[PodGroup] = []
        self._by_sig: dict[GroupSignature, PodGroup] = {}
        #: row -> the groups with pods there (their counts are in ``PodGroup.rows``): one
        #: gid for the common row of one workload, a set only where several meet, so a
        #: million occupied rows cost an int each, not a dict each
        self._row_groups: dict[int, int | set[int]] = {}
        self._queries: OrderedDict[Hashable, _Query] = OrderedDict()
        self._by_qid: dict[int, _Query] = {}
        self._next_qid = 0
        #: bumps when a group is created; caches over "all groups" key on it
        self.version = 0
        self._derived: dict[Hashable, tuple[int, Any]] = {}

    @property
    def built(self) -> bool:
        """False while a lazy index has not been read yet (``add`` is then a no-op)."""
        return self._built

    # ------------------------------------------------------------------ table hooks

    def grow(self, cap: int) -> None:
        for q in self._queries.values():
            extra = cap - len(q.counts)
            if extra > 0:
                q.counts = np.concatenate([q.counts, np.zeros(extra, dtype=np.int64)])

    def add(self, row: int, pod: Pod, sign: int) -> None:
        if not self._built:
            return
        self._add(row, pod, sign)

    def clear_row(self, row: int) -> None:
        if not self._built:
            return
        for gid in _gids(self._row_groups.pop(row, None)):
            self._groups[gid].rows.pop(row, None)
        for q in self._queries.values():
            if row < len(q.counts):
                q.counts[row] = 0

    def copy_rows(self, rows: np.ndarray, new_table: IndexedTable) -> PodIndex:
        """A lazy index for a subset table: built from its ``row_pods`` when first read."""
        return PodIndex(new_table, lazy=True)

    # ------------------------------------------------------------------ reads

    @property
    def groups(self) -> list[PodGroup]:
        """Every group ever seen (some may have no pods left)."""
        self._ensure_built()
        return self._groups

    def query(self, key: Hashable, weight: Weight) -> np.ndarray:
        """int64[cap]: per row, the sum of ``weight(group)`` over the pods on it.

        ``key`` must identify ``weight`` (same key, same function result for every
        group). The array is live: read it before the table changes, never write it.
        """
        self._ensure_built()
        q = self._queries.get(key)
        if q is not None:
            self._queries.move_to_end(key)
            return q.counts
        if len(self._queries) >= MAX_QUERIES:
            _, old = self._queries.popitem(last=False)
            self._unhook(old)
        qid = self._next_qid
        self._next_qid += 1
        q = _Query(qid, weight, np.zeros(self.table._cap, dtype=np.int64), [])
        for g in self._groups:
            w = int(weight(g))
            if w:
                g.weights[qid] = w
                q.groups.append(g.gid)
                if g.rows:
                    rows = np.fromiter(g.rows.keys(), dtype=np.int64, count=len(g.rows))
                    cnt = np.fromiter(g.rows.values(), dtype=np.int64, count=len(g.rows))
                    q.counts[rows] += w * cnt
        self._queries[key] = q
        self._by_qid[qid] = q
        return q.counts

    def label_sums(self, key: Hashable, weight: Weight, label: str) -> np.ndarray:
        """int64[>= number of codes of ``label``]: ``query(key, weight)`` summed by the
        rows' code of node label ``label`` (rows without it are left out). Maintained
        incrementally, so a cycle reads per-domain totals without a pass over rows.
        Index with codes below ``len(table.label_values[label])``; beyond is zero."""
        counts = self.query(key, weight)
        q = self._queries[key]
        hit = q.by_label.get(label)
        version = self.table.node_version
        if hit is not None and hit[0] == version:
            return hit[1]
        col = self.table.labels.get(label)
        interner = self.table.label_values.get(label)
        if col is None or interner is None:
            return np.zeros(0, dtype=np.int64)
        rows = (counts[: self.table.size] != 0).nonzero()[0]
        codes = col[rows]
        has = codes >= 0
        sums = np.zeros(len(interner) + 16, dtype=np.int64)
        np.add.at(sums, codes[has], counts[rows][has])
        q.by_label[label] = (version, sums)
        return sums

    def cached(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """Memoise a value derived from the groups' signatures (not their pod counts),
        until a new group appears."""
        self._ensure_built()
        hit = self._derived.get(key)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        if len(self._derived) >= MAX_QUERIES:
            self._derived.clear()
        value = compute()
        self._derived[key] = (self.version, value)
        return value

    def any_group(self, predicate: Callable[[PodGroup], bool]) -> bool:
        """Whether any pod group (every signature ever seen) satisfies ``predicate``."""
        self._ensure_built()
        return any(predicate(g) for g in self._groups)

    def pods_on(self, row: int) -> int:
        """Pods accounted on ``row`` (all groups)."""
        self._ensure_built()
        return sum(self._groups[gid].rows[row] for gid in _gids(self._row_groups.get(row)))

    # ------------------------------------------------------------------ internals

    def _ensure_built(self) -> None:
        if self._built:
            return
        self._built = True
        for row, pods in enumerate(self.table.row_pods):
            for pod in pods.values():
                self._add(row, pod, 1)

    def _group_of(self, pod: Pod) -> PodGroup:
        sig = pod_signature(pod)
        g = self._by_sig.get(sig)
        if g is None:
            g = PodGroup(len(self._groups), pod, pod.meta.namespace, dict(pod.meta.labels), sig[2])
            self._groups.append(g)
            self._by_sig[sig] = g
            self.version += 1
            for q in self._queries.values():
                w = int(q.weight(g))
                if w:
                    g.weights[q.qid] = w
                    q.groups.append(g.gid)
        return g

    def _add(self, row: int, pod: Pod, sign: int) -> None:
        g = self._group_of(pod)
        n = g.rows.get(row, 0) + sign
        if n:
            g.rows[row] = n
            self._note_group(row, g.gid)
        else:
            g.rows.pop(row, None)
            self._drop_group(row, g.gid)
        version = self.table.node_version
        for qid, w in g.weights.items():
            q = self._by_qid[qid]
            q.counts[row] += sign * w
            if q.by_label:
                self._bump_labels(q, row, sign * w, version)

    def _note_group(self, row: int, gid: int) -> None:
        have = self._row_groups.get(row)
        if have is None:
            self._row_groups[row] = gid
        elif isinstance(have, int):
            if have != gid:
                self._row_groups[row] = {have, gid}
        else:
            have.add(gid)

    def _drop_group(self, row: int, gid: int) -> None:
        have = self._row_groups.get(row)
        if have is None:
            return
        if isinstance(have, int):
            if have == gid:
                del self._row_groups[row]
            return
        have.discard(gid)
        if len(have) == 1:
            self._row_groups[row] = next(iter(have))

    def _bump_labels(self, q: _Query, row: int, delta: int, version: int) -> None:
        labels = self.table.labels
        for label, (v, sums) in list(q.by_label.items()):
            if v != version:
                continue  # stale: rebuilt on the next read
            code = int(labels[label][row])
            if code < 0:
                continue
            if code >= len(sums):
                sums = np.concatenate([sums, np.zeros(code + 16 - len(sums), dtype=np.int64)])
                q.by_label[label] = (v, sums)
            sums[code] += delta

    def _unhook(self, q: _Query) -> None:
        del self._by_qid[q.qid]
        for gid in q.groups:
            self._groups[gid].weights.pop(q.qid, None)


def _gids(have: int | set[int] | None) -> Iterable[int]:
    """The gids of one ``_row_groups`` value."""
    if have is None:
        return ()
    return (have,) if isinstance(have, int) else have
