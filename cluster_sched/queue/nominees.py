"""The nominees of a priority and up, per node, kept between scheduling cycles.

Filter with nominated pods and preemption's column screen each need, for the pod being
scheduled, every node's nominated pods of equal or higher priority (the pod itself
aside) and the sums of their requests. After a wave of preemptions hundreds of pods are
nominated, and walking them all (looking each up, testing its priority, summing its
requests) two or three times per attempt made the wave quadratic.

``NomineeIndex`` keeps that answer per priority threshold and recomputes only the nodes
whose answer may have changed: nodes whose nominations changed (the nominator marks
them) and nodes one of whose nominated pods is no longer the very object it was (the
pods are the process's current objects, ``pod_lookup``: an update replaces the object,
a delete makes it None). Checking the objects is one lookup and one identity test per
nominated pod, in C (``map``), so the answers stay those of a fresh walk.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from itertools import compress
from operator import is_not
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from cluster_sched.api.objects import Pod
    from cluster_sched.nodetable.table import NodeTable

__all__ = ["AtLeast", "Columns", "NomineeIndex"]

#: stands for "not looked up yet": never the object a lookup returns
_UNSEEN = object()
#: priority thresholds kept at once (a cluster has few priorities in play)
_THRESHOLDS = 8

Totals = tuple[int, tuple[int, ...] | None]


class AtLeast:
    """Per node, the live nominated pods of priority >= ``priority`` in nomination order
    (only nodes with some), and per resource-name tuple their count and request sums."""

    __slots__ = ("_columns", "_key_nodes", "_uid_nodes", "pods", "priority")

    def __init__(self, priority: int) -> None:
        self.priority = priority
        self.pods: dict[str, list[Pod]] = {}
        #: key / uid -> nodes holding a nominee with it (left out of its own answer)
        self._key_nodes: dict[str, set[str]] = {}
        self._uid_nodes: dict[str, set[str]] = {}
        self._columns: weakref.WeakKeyDictionary[NodeTable, dict[tuple[str, ...], Columns]] = (
            weakref.WeakKeyDictionary()
        )

    @classmethod
    def of(cls, items: Iterable[tuple[str, Sequence[Pod]]], priority: int) -> AtLeast:
        """Built afresh from ``(node, pods)`` (any mapping of nominated pods)."""
        out = cls(priority)
        for node, pods in items:
            out.put(node, pods)
        return out

    def put(self, node: str, live: Sequence[Pod]) -> None:
        """The node's live nominated pods are now ``live`` (any priority, in order)."""
        for p in self.pods.pop(node, ()):
            _unlink(self._key_nodes, p.key, node)
            _unlink(self._uid_nodes, p.meta.uid, node)
        for per in self._columns.values():
            for col in per.values():
                col.dirty.add(node)
        prio = self.priority
        ge = [p for p in live if p.priority >= prio]
        if ge:
            self.pods[node] = ge
            for p in ge:
                self._key_nodes.setdefault(p.key, set()).add(node)
                self._uid_nodes.setdefault(p.meta.uid, set()).add(node)

    def _touched(self, key: str | None, uid: str | None) -> set[str]:
        """Nodes whose answer changes when the pod ``key`` / ``uid`` is left out."""
        out: set[str] = set()
        if key is not None:
            out |= self._key_nodes.get(key, set())
        if uid is not None:
            out |= self._uid_nodes.get(uid, set())
        return out

    def items(
        self,
        except_key: str | None = None,
        except_uid: str | None = None,
    ) -> list[tuple[str, list[Pod]]]:
        """``(node, pods)`` for every node with some, leaving out pods whose key is
        ``except_key`` or whose uid is ``except_uid`` (None: no such test)."""
        touched = self._touched(except_key, except_uid)
        if not touched:
            return list(self.pods.items())
        out = []
        for node, pods in self.pods.items():
            if node in touched:
                pods = [p for p in pods if p.key != except_key and p.meta.uid != except_uid]
                if not pods:
                    continue
            out.append((node, pods))
        return out

    def on(self, node: str, except_key: str | None = None) -> list[Pod]:
        """The node's pods, the pod ``except_key`` left out."""
        pods = self.pods.get(node)
        if not pods:
            return []
        if except_key is None:
            return pods
        return [p for p in pods if p.key != except_key]

    def columns(
        self,
        table: NodeTable,
        names: tuple[str, ...],
        limit: float,
        except_key: str | None = None,
        except_uid: str | None = None,
    ) -> Columns:
        """The nominees' count and request sums of ``names`` on every row of ``table``,
        kept per table and updated for the nodes that changed; the rows of the pod
        ``except_key`` / ``except_uid`` (left out) come as ``overrides``."""
        per = self._columns.get(table)
        if per is None:
            per = self._columns[table] = {}
        col = per.get(names)
        cap = len(table.row_version)
        index = table.index
        if col is None or col.version != table.node_version or len(col.count) != cap:
            col = per[names] = Columns.empty(cap, len(names), table.node_version, limit)
            for node, pods in self.pods.items():
                col.fill(index.get(node), pods, names)
        elif col.dirty:
            for node in col.dirty:
                col.fill(index.get(node), self.pods.get(node, ()), names)
        col.dirty = set()
        col.overrides = {}
        for node in self._touched(except_key, except_uid):
            row = index.get(node)
            if row is not None:
                kept = [
                    p for p in self.pods[node] if p.key != except_key and p.meta.uid != except_uid
                ]
                col.overrides[row] = _totals(kept, names, limit)
        return col


def _unlink(nodes_of: dict[str, set[str]], name: str, node: str) -> None:
    nodes = nodes_of.get(name)
    if nodes is not None:
        nodes.discard(node)
        if not nodes:
            del nodes_of[name]


def _totals(pods: Sequence[Pod], names: tuple[str, ...], limit: float) -> Totals:
    """(count, sums of ``names``; None when one reaches ``limit``)."""
    sums = tuple(sum(p.requests.get(n, 0) for p in pods) for n in names)
    return len(pods), None if max(sums, default=0) >= limit else sums


class Columns:
    """Per row of one node table, the nominees' ``count`` (int64) and request ``sums``
    (int64[len(names), rows]); ``big`` rows, whose sums reach the limit (kept exact in
    Python ints no further), hold zero sums. ``overrides``: row -> (count, sums or None
    when big) for the rows the last ``AtLeast.columns`` call left a pod out of."""

    __slots__ = ("big", "count", "dirty", "limit", "overrides", "sums", "version")

    def __init__(
        self, count: np.ndarray, sums: np.ndarray, big: np.ndarray, version: int, limit: float
    ) -> None:
        self.count, self.sums, self.big = count, sums, big
        self.version = version
        self.limit = limit
        #: nodes whose nominees changed since the last read
        self.dirty: set[str] = set()
        self.overrides: dict[int, Totals] = {}

    @classmethod
    def empty(cls, cap: int, m: int, version: int, limit: float) -> Columns:
        zeros = np.zeros(cap, dtype=np.int64)
        return cls(zeros, np.zeros((m, cap), dtype=np.int64), zeros.astype(bool), version, limit)

    def fill(self, row: int | None, pods: Sequence[Pod], names: tuple[str, ...]) -> None:
        if row is None:
            return
        n, sums = _totals(pods, names, self.limit)
        self.count[row] = n
        self.big[row] = sums is None
        self.sums[:, row] = 0 if sums is None else sums

    def at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(count, sums, big) of ``rows``, the overrides applied."""
        count, sums, big = self.count[rows], self.sums[:, rows], self.big[rows]
        if self.overrides:
            for i in np.flatnonzero(np.isin(rows, list(self.overrides))).tolist():
                n, s = self.overrides[int(rows[i])]
                count[i], big[i] = n, s is None
                sums[:, i] = 0 if s is None else s
        return count, sums, big


class NomineeIndex:
    """``AtLeast`` answers over a nominator's nominations (node -> keys, in order),
    brought up to date on each read (see the module doc)."""

    __slots__ = ("_by_node", "_dirty", "_node_of", "_seen", "_thresholds", "lookup")

    def __init__(
        self,
        by_node: dict[str, dict[str, None]],
        node_of: dict[str, str],
        lookup: Callable[[str], Pod | None],
    ) -> None:
        self._by_node = by_node
        self._node_of = node_of
        self.lookup = lookup
        #: nominated key -> the object it was last seen as (``_UNSEEN``: not yet)
        self._seen: dict[str, object] = {}
        #: nodes whose nominations changed since the last read
        self._dirty: set[str] = set()
        self._thresholds: dict[int, AtLeast] = {}

    def moved(self, pod_key: str, old_node: str | None, new_node: str) -> None:
        """The nominator moved ``pod_key`` from ``old_node`` to ``new_node`` ("": none)."""
        if old_node:
            self._dirty.add(old_node)
        if new_node:
            self._dirty.add(new_node)
            self._seen[pod_key] = _UNSEEN
        else:
            self._seen.pop(pod_key, None)

    def reset(self, lookup: Callable[[str], Pod | None]) -> None:
        """Forget everything (the nominations were reloaded, or the lookup replaced)."""
        self.lookup = lookup
        self._seen.clear()
        self._dirty.clear()
        self._thresholds.clear()
        for keys in self._by_node.values():
            for key in keys:
                self._seen[key] = _UNSEEN

    def at_least(self, priority: int) -> AtLeast:
        """The answer for ``priority``, up to date with the nominations and the pods."""
        self._refresh()
        got = self._thresholds.get(priority)
        if got is None:
            if len(self._thresholds) >= _THRESHOLDS:
                self._thresholds.pop(next(iter(self._thresholds)))
            got = self._thresholds[priority] = AtLeast(priority)
            for node in self._by_node:
                got.put(node, self._live(node))
        return got

    def _live(self, node: str) -> list[Pod]:
        seen = self._seen
        return [p for p in map(seen.get, self._by_node.get(node, ())) if p is not None]  # type: ignore[misc]

    def _refresh(self) -> None:
        seen = self._seen
        keys = list(seen)
        now = list(map(self.lookup, keys))
        changed = list(map(is_not, now, seen.values()))
        dirty = self._dirty
        if any(changed):
            for key, obj in zip(compress(keys, changed), compress(now, changed), strict=True):
                seen[key] = obj
                node = self._node_of.get(key)
                if node:
                    dirty.add(node)
        if not dirty:
            return
        self._dirty = set()
        for at in self._thresholds.values():
            for node in dirty:
                at.put(node, self._live(node))
