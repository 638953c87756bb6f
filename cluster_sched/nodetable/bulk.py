"""New nodes into a NodeTable in bulk: the listing of a million nodes, a watch batch's
run of node adds, a shard's preload (issues 22 and 23).

``upsert_nodes`` leaves the table exactly as ``upsert_node`` per node in order would:
the same rows (free rows popped, skipped explicit rows noted free), interner ids, zone
list, ``seq``, ``pod_version``/``row_version`` and ``node_version`` (advanced by one per
node, so whatever is keyed on them sees what it would have). What differs is the cost:
rows are reserved and columns grown once; resource columns are written once per group of
nodes sharing one allocatable map (nodes parsed from shared manifests hold the same
object); label values are interned per key over the batch and written as one column
assignment; the zone list is updated once. Only what is per node by nature (names, label
maps, taints and images, which few nodes have) stays a Python loop.
``tests/nodetable/test_nodetable_bulk.py`` compares both ways on random histories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from cluster_sched.api.objects import PODS, Node, Pod, Taint
from cluster_sched.nodetable.interner import Interner
from cluster_sched.nodetable.order import ZoneList, zone_key
from cluster_sched.nodetable.overflow import OverflowLedger
from cluster_sched.nodetable.podindex import PodIndex
from cluster_sched.nodetable.volumes import VolumeIndex


class NodeTable(Protocol):
    """What of ``nodetable.table.NodeTable`` the bulk path writes (that module uses this
    one: a protocol keeps the import one way)."""

    index: dict[str, int]
    names: list[str | None]
    nodes: list[Node | None]
    row_pods: list[dict[str, Pod]]
    _free_rows: list[int]
    size: int
    _cap: int
    _next_seq: int
    node_version: int
    pod_version: int
    alive: np.ndarray
    seq: np.ndarray
    unschedulable: np.ndarray
    zone_code: np.ndarray
    free: np.ndarray
    allocatable: np.ndarray
    allowed_pods: np.ndarray
    requested: np.ndarray
    nonzero: np.ndarray
    amount_bound: np.ndarray
    pod_count: np.ndarray
    port_count: np.ndarray
    row_version: np.ndarray
    taint_pos: np.ndarray
    zones: Interner[str]
    taints: Interner[Taint]
    images: Interner[str]
    zone_list: ZoneList
    overflow: OverflowLedger
    pod_index: PodIndex
    volumes: VolumeIndex
    labels: dict[str, np.ndarray]
    label_values: dict[str, Interner[str]]
    _image_rows: dict[int, dict[int, int]]

    def upsert_node(self, node: Node, row: int | None = None) -> int: ...

    def resource_col(self, name: str) -> int: ...

    def _grow_rows(self, need: int) -> None: ...

    def _sync_columns(self) -> None: ...

    def _node_changed(self) -> None: ...


def upsert_nodes(
    table: NodeTable, nodes: Sequence[Node], rows: Sequence[int] | None = None
) -> list[int]:
    """``[table.upsert_node(n, r) for n, r in zip(nodes, rows)]``, new nodes in bulk.

    A node the table holds (an update), or a name repeated in ``nodes``, goes through
    ``upsert_node`` at its place in the order; each run of new nodes between them is
    added by ``add_new_nodes``. ``rows`` (None: the table picks) as for ``upsert_node``.
    """
    if rows is not None and len(rows) != len(nodes):
        raise ValueError(f"{len(nodes)} nodes but {len(rows)} rows")
    out: list[int] = []
    index = table.index
    start = 0
    run: set[str] = set()
    for i, node in enumerate(nodes):
        name = node.name
        if name not in index and name not in run:
            run.add(name)
            continue
        if start < i:
            out += add_new_nodes(table, nodes[start:i], None if rows is None else rows[start:i])
            run = set()
        out.append(table.upsert_node(node, None if rows is None else int(rows[i])))
        start = i + 1
    if start < len(nodes):
        out += add_new_nodes(table, nodes[start:], None if rows is None else rows[start:])
    return out


def add_new_nodes(
    table: NodeTable, nodes: Sequence[Node], rows: Sequence[int] | None = None
) -> list[int]:
    """Nodes the table does not hold (distinct names), in one pass; their rows."""
    n = len(nodes)
    if n == 0:
        return []
    taken = _reserve_rows(table, n, rows)
    at = np.asarray(taken, dtype=np.intp)
    names, row_pods, table_nodes = table.names, table.row_pods, table.nodes
    for row, node in zip(taken, nodes, strict=True):
        names[row] = node.name
        table_nodes[row] = node
        row_pods[row] = {}
    table.index.update(zip([node.name for node in nodes], taken, strict=True))
    table.alive[at] = True
    _clear_pod_rows(table, taken, at)
    table.seq[at] = np.arange(table._next_seq, table._next_seq + n, dtype=np.int64)
    table._next_seq += n
    _write_resources(table, nodes, at)
    table.unschedulable[at] = np.fromiter((x.unschedulable for x in nodes), dtype=bool, count=n)
    zone_codes = table.zones.intern_many([zone_key(x.labels) for x in nodes])
    table.zone_code[at] = zone_codes
    _write_labels(table, nodes, at)
    for row, node in zip(taken, nodes, strict=True):
        if node.taints or node.images:
            write_taints_images(table, row, node)
    table.zone_list.add_many(zone_codes)
    table.free[:, at] = table.allocatable[:, at]  # requested is 0 on a new node's row
    table.node_version += n - 1  # one per node, as upsert_node: _node_changed adds the last
    table._node_changed()
    return taken


def _reserve_rows(table: NodeTable, n: int, rows: Sequence[int] | None) -> list[int]:
    """The rows ``_take_row`` would hand out for ``n`` new nodes in turn, the row lists
    extended and the columns grown once (checked before anything changes)."""
    free = table._free_rows
    size = table.size
    if rows is None:
        k = min(n, len(free))
        taken = [free.pop() for _ in range(k)]
        taken += range(size, size + n - k)
        new_size = size + n - k
    else:
        # _take_row per row, on a copy of the free list: nothing changes if a row is taken
        taken = [int(r) for r in rows]
        alive = table.alive
        sim = list(free)
        new_size = size
        batch: set[int] = set()
        for r in taken:
            if r < new_size:
                if (r < size and alive[r]) or r in batch:
                    raise ValueError(f"row {r} is taken by node {table.names[r]!r}")
                sim.remove(r)
            else:
                sim[0:0] = range(r - 1, new_size - 1, -1)  # skipped rows, inserted first
                new_size = r + 1
            batch.add(r)
        free[:] = sim
    grow = new_size - size
    if grow:
        table.size = new_size
        table._grow_rows(new_size)
        table.names.extend([None] * grow)
        table.nodes.extend([None] * grow)
        table.row_pods.extend({} for _ in range(grow))
    return taken


def _clear_pod_rows(table: NodeTable, taken: list[int], at: np.ndarray) -> None:
    """``_clear_pod_columns`` of each row in order (row_pods are set by the caller)."""
    n = len(taken)
    table.requested[:, at] = 0
    table.nonzero[:, at] = 0
    if table.overflow.has_any(taken):
        for row in taken:
            table.overflow.clear_row(row)
    table.amount_bound[at] = 0.0
    table.pod_count[at] = 0
    table.port_count[:, at] = 0
    table.row_version[at] = np.arange(table.pod_version + 1, table.pod_version + n + 1)
    table.pod_version += n
    if table.pod_index.built:
        for row in taken:
            table.pod_index.clear_row(row)
    if table.volumes.cols:
        for col in table.volumes.cols.values():
            col[at] = 0
        table.volumes.version += n


def _write_resources(table: NodeTable, nodes: Sequence[Node], at: np.ndarray) -> None:
    """Allocatable per group of nodes sharing one map: new resources interned in the
    order one-by-one would meet them, then one column write per (group, resource)."""
    groups: dict[int, list[int]] = {}
    for i, node in enumerate(nodes):
        g = groups.get(id(node.allocatable))
        if g is None:
            groups[id(node.allocatable)] = [i]
        else:
            g.append(i)
    for members in groups.values():
        allocatable = nodes[members[0]].allocatable
        cols = [(table.resource_col(name), v) for name, v in allocatable.items() if name != PODS]
        where = at[members] if len(members) < len(at) else at
        for c, v in cols:
            table.allocatable[c, where] = v
        if PODS in allocatable:
            table.allowed_pods[where] = allocatable[PODS]


def _write_labels(table: NodeTable, nodes: Sequence[Node], at: np.ndarray) -> None:
    """Label codes interned per key over the batch (nodes in order), one column write per
    key; a new key's column is made in the order its first node brings it."""
    by_key: dict[str, tuple[list[int], list[str]]] = {}
    for i, node in enumerate(nodes):
        for key, value in node.labels.items():
            got = by_key.get(key)
            if got is None:
                by_key[key] = ([i], [value])
            else:
                got[0].append(i)
                got[1].append(value)
    for key, (members, values) in by_key.items():
        col = table.labels.get(key)
        if col is None:
            col = np.full(table._cap, -1, dtype=np.int32)
            table.labels[key] = col
            table.label_values[key] = Interner()
        codes = table.label_values[key].intern_many(values)
        col[at[members] if len(members) < len(at) else at] = codes


def write_taints_images(table: NodeTable, row: int, node: Node) -> None:
    """A node's taints and images on ``row`` (one node at a time, or in bulk)."""
    for pos, taint in enumerate(node.taints):
        t = table.taints.intern(taint)
        table._sync_columns()
        if table.taint_pos[t, row] == 0:
            table.taint_pos[t, row] = pos + 1
    for image in node.images:
        for name in image.names:
            i = table.images.intern(name)
            table._image_rows.setdefault(i, {})[row] = image.size_bytes
