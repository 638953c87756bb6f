"""The placement log replayed with array operations, and the nodes' allocatable as a matrix.

The figures over time (``report.series``) replay ``RunStats.placement_log`` in time order:
a stable sort, so entries of one instant keep the order the watch saw them. An entry is a
bind (a node named) or an unbind (no node). What an entry takes back depends on the pod's
previous entry only: a bind's requests are held until the pod's next entry (an unbind or
a re-bind), so an entry undoes its pod's previous entry exactly when that was a bind.
``SortedLog`` works that link out once for every entry; each figure is then a cumulative
sum. At a million pods the per-entry Python loops this replaces took most of a run's
summary (issue 22); the loops live on in tests/report/test_replay.py as the reference
the arrays are checked against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import Node
from cluster_sched.scheduler.stats import RunStats

__all__ = [
    "SortedLog",
    "allocatable_matrix",
    "codes",
    "distinct_rows",
    "in_use_steps",
    "running_steps",
    "sorted_log",
]


def codes(items: Sequence[str]) -> tuple[np.ndarray, dict[str, int]]:
    """int64 codes of ``items`` (equal strings, equal codes; first seen, code 0) and the
    code of each distinct string."""
    ids: dict[str, int] = {}
    out = np.fromiter(
        (ids.setdefault(s, len(ids)) for s in items), dtype=np.int64, count=len(items)
    )
    return out, ids


def distinct_rows(
    maps: Sequence[Mapping[str, int]], columns: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """``(table, which)``: int64[k, len(columns)] rows of the distinct mapping objects
    among ``maps`` (``m.get(column, 0)``) and, per map, its row in the table. The parser
    shares one mapping between the nodes of a pool (and between pods of one shape), so
    a million maps are a few rows: each is read once, not once per object. Distinct by
    identity: two equal mappings may take two rows, with the same values."""
    n = len(maps)
    if n == 0:
        return np.zeros((0, len(columns)), dtype=np.int64), np.zeros(0, dtype=np.int64)
    ids = np.fromiter((id(m) for m in maps), dtype=np.uint64, count=n)
    _, first, which = np.unique(ids, return_index=True, return_inverse=True)
    table = np.array(
        [[maps[i].get(c, 0) for c in columns] for i in first.tolist()], dtype=np.int64
    ).reshape(len(first), len(columns))
    return table, which.reshape(n).astype(np.int64)


def allocatable_matrix(nodes: Sequence[Node], resources: Sequence[str]) -> np.ndarray:
    """int64[n_nodes, n_resources]: each node's allocatable amount of each resource (0
    when it offers none), in ``resources`` order."""
    table, which = distinct_rows([n.allocatable for n in nodes], resources)
    return table[which]


@dataclass(frozen=True, slots=True)
class SortedLog:
    """The placement log in replay order (``sorted_log``); arrays are per entry."""

    #: float64: when each entry happened (the scheduler's clock), ascending
    times: np.ndarray
    #: the node each entry binds to ("" for an unbind), as codes of ``node_codes``
    nodes: np.ndarray
    node_codes: dict[str, int]
    #: bool: the entry binds its pod
    bind: np.ndarray
    #: int64: each entry's pod, as a code (one per distinct pod key)
    pods: np.ndarray
    #: the pod keys, in replay order
    keys: list[str]
    cpu: np.ndarray
    memory: np.ndarray
    #: int64: the index of the entry whose requests this one takes back (its pod's
    #: previous entry, when that was a bind), else -1
    undoes: np.ndarray

    def __len__(self) -> int:
        return len(self.times)

    def node_names(self) -> list[str]:
        """The node each entry binds to ("" for an unbind), in replay order."""
        names = [""] * len(self.node_codes)
        for name, code in self.node_codes.items():
            names[code] = name
        return [names[c] for c in self.nodes.tolist()]


def sorted_log(stats: RunStats) -> SortedLog:
    """``stats.placement_log`` in replay order, with each entry's ``undoes`` link."""
    cols = stats.placement_log.columns()
    order = np.argsort(cols.times, kind="stable")
    n = len(order)
    node_all, node_codes = codes(cols.nodes)
    pod_all, _ = codes(cols.keys)
    nodes = node_all[order]
    pods = pod_all[order]
    bind = nodes != node_codes.get("", -1)
    # each pod's entries in replay order: the previous one of the same pod is adjacent
    by_pod = np.lexsort((np.arange(n), pods))
    same = pods[by_pod[1:]] == pods[by_pod[:-1]]
    previous = np.full(n, -1, dtype=np.int64)
    previous[by_pod[1:][same]] = by_pod[:-1][same]
    held = previous >= 0
    held[held] = bind[previous[held]]
    keys = cols.keys
    return SortedLog(
        times=cols.times[order],
        nodes=nodes,
        node_codes=node_codes,
        bind=bind,
        pods=pods,
        keys=[keys[i] for i in order.tolist()],
        cpu=cols.cpu[order],
        memory=cols.memory[order],
        undoes=np.where(held, previous, -1),
    )


def in_use_steps(log: SortedLog) -> np.ndarray:
    """float64[n]: nodes holding at least one pod after each entry. An entry first takes
    its pod off the node of the bind it undoes, then puts it on its own node: a node
    comes into use when its count goes 0 -> 1 and leaves it at 1 -> 0."""
    n = len(log)
    undo = np.flatnonzero(log.undoes >= 0)
    put = np.flatnonzero(log.bind)
    # events ordered by entry, the take-off before the put-on
    entry = np.concatenate([undo, put])
    seq = np.concatenate([2 * undo, 2 * put + 1])
    node = np.concatenate([log.nodes[log.undoes[undo]], log.nodes[put]])
    delta = np.concatenate([np.full(len(undo), -1), np.ones(len(put), dtype=np.int64)])
    by_node = np.lexsort((seq, node))
    node, delta, entry = node[by_node], delta[by_node], entry[by_node]
    after = np.cumsum(delta)
    starts = np.ones(len(node), dtype=bool)
    starts[1:] = node[1:] != node[:-1]
    # the running count within each node's own events
    base = np.maximum.accumulate(np.where(starts, np.arange(len(node)), 0))
    after = after - (after[base] - delta[base])
    before = after - delta
    change = ((before == 0) & (after > 0)).astype(np.int64) - ((before > 0) & (after == 0))
    per_entry = np.zeros(n, dtype=np.int64)
    np.add.at(per_entry, entry, change)
    return np.cumsum(per_entry).astype(np.float64)


def running_steps(log: SortedLog) -> np.ndarray:
    """float64[n]: pods bound after each entry (a bind of a pod not held adds one, an
    unbind of a held pod takes one away)."""
    held = log.undoes >= 0
    change = (log.bind & ~held).astype(np.int64) - (~log.bind & held)
    return np.cumsum(change).astype(np.float64)
