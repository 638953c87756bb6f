"""Columnar node state: the scheduler's NodeInfo list, as numpy columns.

One ``NodeTable`` holds one shard of the cluster (the whole cluster with the in-process
executor). Rows are stable slots: a removed node frees its slot for reuse, so row ids held
by callers stay meaningful until the node is removed. Pod accounting is incremental:
``add_pod``/``remove_pod`` touch one row, never rebuild anything.

Shapes (``cap`` = allocated rows, ``R`` = interned resources, ``T`` = distinct taints,
``P`` = distinct host-port triples). Matrices are resource-major (one contiguous row per resource, taint or port) because
plugins gather a few resources for many nodes: ``free[c][rows]`` is a fast 1-D gather,
and reductions run across a handful of rows instead of along a narrow axis.

- ``allocatable``, ``requested``, ``free``: int64[R, cap] — cpu in millis, others in
  units; ``free`` is allocatable - requested, kept in step; sums past int64 saturate
  (``overflow`` keeps them exactly, see nodetable/overflow.py)
- ``nonzero``: int64[2, cap] — cpu/memory requested with scoring defaults (100m, 200Mi)
- ``pod_count``, ``allowed_pods``: int64[cap]
- ``unschedulable``, ``alive``: bool[cap]
- ``labels[key]``: int32[cap] — interned value code, -1 where the label is absent
- ``taint_pos``: int16[T, cap] — 1 + position of taint t in the node's taint list, 0 if absent
- ``port_count``: int32[P, cap] — pods on the node using (hostIP, protocol, hostPort)

``node_version`` changes whenever node-derived columns (labels, taints, allocatable, images,
membership) change; ``pod_version`` whenever pod accounting changes. Plugins key caches on
them, which is how identical pods share work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from cluster_sched.api.objects import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Node, Pod, Taint
from cluster_sched.nodetable.bulk import upsert_nodes, write_taints_images
from cluster_sched.nodetable.images import ImageIndex
from cluster_sched.nodetable.interner import Interner
from cluster_sched.nodetable.order import ZoneList, zone_interleaved_order, zone_key
from cluster_sched.nodetable.overflow import BOUND_LIMIT, OverflowLedger, pod_amount
from cluster_sched.nodetable.podindex import PodIndex
from cluster_sched.nodetable.ports import PortKey, may_claim_host_ports, pod_host_ports
from cluster_sched.nodetable.subset import subset_of
from cluster_sched.nodetable.volumes import VolumeIndex

R_CPU = 0
R_MEMORY = 1
R_EPHEMERAL = 2
#: Resources every table has, in this column order.
BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)

#: Node-derived arrays memoised per table before the memo is cleared.
_MEMO_LIMIT = 4096
#: Per-row columns (last axis = row): grown together, copied together by ``subset``.
_ROW_COLUMNS = (
    "alive",
    "allocatable",
    "requested",
    "free",
    "nonzero",
    "pod_count",
    "amount_bound",
    "allowed_pods",
    "unschedulable",
    "zone_code",
    "seq",
    "taint_pos",
    "port_count",
    "row_version",
)


class NodeTable:
    """The node columns of one shard. See the module docstring for shapes."""

    def __init__(self, capacity: int = 64) -> None:
        self.resources: Interner[str] = Interner(BASE_RESOURCES)
        self.taints: Interner[Taint] = Interner()
        self.ports: Interner[PortKey] = Interner()
        self.images: Interner[str] = Interner()
        self.label_values: dict[str, Interner[str]] = {}
        self.labels: dict[str, np.ndarray] = {}

        self._cap = max(capacity, 8)
        self.size = 0
        self.names: list[str | None] = []
        self.nodes: list[Node | None] = []
        self.index: dict[str, int] = {}
        self._free_rows: list[int] = []

        cap = self._cap
        self.alive = np.zeros(cap, dtype=bool)
        self.allocatable = np.zeros((len(self.resources), cap), dtype=np.int64)
        self.requested = np.zeros((len(self.resources), cap), dtype=np.int64)
        self.nonzero = np.zeros((2, cap), dtype=np.int64)
        #: allocatable - requested, kept in step so Fit reads one column per resource
        self.free = np.zeros((len(self.resources), cap), dtype=np.int64)
        self.pod_count = np.zeros(cap, dtype=np.int64)
        #: per row, the ``pod_version`` of its last pod change (caches of per-row pod sums)
        self.row_version = np.zeros(cap, dtype=np.int64)
        #: exact values of the requested/nonzero cells that saturated at int64, and per
        #: row (float64) the sum of its pods' largest amounts: below BOUND_LIMIT no cell
        #: of the row can overflow, so the exact path is skipped (nodetable/overflow.py)
        self.overflow = OverflowLedger()
        self.amount_bound = np.zeros(cap, dtype=np.float64)
        #: never below any row's ``amount_bound`` (it only grows): an O(1) upper bound
        #: for checks that would otherwise take the column's max per pod
        self.amount_bound_ceiling = 0.0
        self.allowed_pods = np.zeros(cap, dtype=np.int64)
        self.unschedulable = np.zeros(cap, dtype=bool)
        self.zone_code = np.zeros(cap, dtype=np.int64)
        self.seq = np.zeros(cap, dtype=np.int64)
        self._next_seq = 0
        self.zones: Interner[str] = Interner()
        #: zones in the nodeTree's order (when each (re)gained its first node)
        self.zone_list = ZoneList()
        self.taint_pos = np.zeros((0, cap), dtype=np.int16)
        self.port_count = np.zeros((0, cap), dtype=np.int32)
        # image id -> {row: size}; flattened lazily into ImageIndex
        self._image_rows: dict[int, dict[int, int]] = {}
        self._image_index: ImageIndex | None = None

        #: pods accounted on each row, by key (preemption and simulations read them)
        self.row_pods: list[dict[str, Pod]] = []
        self.pod_index: PodIndex = PodIndex(self)
        #: volumes the pods of each row use (only pods with volumes touch it)
        self.volumes: VolumeIndex = VolumeIndex(cap)
        self.node_version: int = 0
        #: id(requests) -> (requests, columns, values): see _pod_vector
        self._vectors: dict[int, tuple[Mapping[str, int], list[int], list[int]]] = {}
        self.pod_version: int = 0
        self._memo: dict[object, np.ndarray] = {}
        self._memo_version: tuple[int, int] = (-1, -1)
        self._order: np.ndarray | None = None
        self._name_array: np.ndarray | None = None

    # ------------------------------------------------------------------ shape management

    @property
    def n_nodes(self) -> int:
        return len(self.index)

    def _grow_rows(self, need: int) -> None:
        if need <= self._cap:
            return
        new = self._cap
        while new < need:
            new *= 2
        extra = new - self._cap

        def pad(a: np.ndarray, fill: int | bool = 0) -> np.ndarray:
            shape = (*a.shape[:-1], extra)
            return np.concatenate([a, np.full(shape, fill, dtype=a.dtype)], axis=-1)

        for attr in _ROW_COLUMNS:
            setattr(self, attr, pad(getattr(self, attr)))
        for key, col in self.labels.items():
            self.labels[key] = pad(col, -1)
        self._cap = new
        self.pod_index.grow(new)
        self.volumes.grow(new)

    def _sync_columns(self) -> None:
        """Widen matrices whose interner gained values (resources, taints, ports)."""
        r = len(self.resources)
        if self.allocatable.shape[0] < r:
            z = np.zeros((r - self.allocatable.shape[0], self._cap), dtype=np.int64)
            self.allocatable = np.concatenate([self.allocatable, z])
            self.requested = np.concatenate([self.requested, z.copy()])
            self.free = np.concatenate([self.free, z.copy()])
        t = len(self.taints)
        if self.taint_pos.shape[0] < t:
            z16 = np.zeros((t - self.taint_pos.shape[0], self._cap), dtype=np.int16)
            self.taint_pos = np.concatenate([self.taint_pos, z16])
        p = len(self.ports)
        if self.port_count.shape[0] < p:
            z32 = np.zeros((p - self.port_count.shape[0], self._cap), dtype=np.int32)
            self.port_count = np.concatenate([self.port_count, z32])

    def resource_col(self, name: str) -> int:
        """Column of resource ``name``, creating it (zero everywhere) if new."""
        i = self.resources.get(name)
        if i < 0:
            i = self.resources.intern(name)
            self._sync_columns()
        return i

    def resource_vector(self, amounts: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """Sparse (columns, values) of a resource map, skipping ``pods`` (counted apart)."""
        cols: list[int] = []
        vals: list[int] = []
        for name, v in amounts.items():
            if name == PODS or v == 0:
                continue
            cols.append(self.resource_col(name))
            vals.append(v)
        return np.asarray(cols, dtype=np.intp), np.asarray(vals, dtype=np.int64)

    def _pod_vector(self, requests: Mapping[str, int]) -> tuple[list[int], list[int]]:
        """``resource_vector`` as lists, remembered per requests object: pods parsed
        from one spec share it, and the columns of a resource never move."""
        hit = self._vectors.get(id(requests))
        if hit is not None and hit[0] is requests:
            return hit[1], hit[2]
        cols, vals = self.resource_vector(requests)
        if len(self._vectors) >= 4096:
            self._vectors.clear()
        out = (requests, cols.tolist(), vals.tolist())
        self._vectors[id(requests)] = out
        return out[1], out[2]

    # ------------------------------------------------------------------ nodes

    def upsert_node(self, node: Node, row: int | None = None) -> int:
        """Add a node, or update its node-derived columns keeping its pod accounting.

        ``row`` places a new node at that row: a shard's rows are chosen by the
        coordinator, which must know them to address the shard without names.
        """
        existing = self.index.get(node.name)
        if existing is None:
            row = self._take_row(row)
            self.index[node.name] = row
            self.names[row] = node.name
            self.alive[row] = True
            self._clear_pod_columns(row)
            self.seq[row] = self._next_seq
            self._next_seq += 1
            old_zone = None
        else:
            row = existing
            old_zone = int(self.zone_code[row])
            self._clear_node_columns(row)
        self.nodes[row] = node
        self._write_node_columns(row, node)
        new_zone = int(self.zone_code[row])
        if new_zone != old_zone:
            # upstream nodeTree.updateNode: a zone change is remove + add (end of the zone)
            if old_zone is not None:
                self.zone_list.remove(old_zone)
                self.seq[row] = self._next_seq
                self._next_seq += 1
            self.zone_list.add(new_zone)
        self.free[:, row] = self.allocatable[:, row] - self.requested[:, row]
        self._node_changed()
        return row

    def upsert_nodes(self, nodes: Sequence[Node], rows: Sequence[int] | None = None) -> list[int]:
        """``upsert_node`` of each node in order (``rows[i]`` for ``nodes[i]``), new nodes
        in bulk: the same table state, a fraction of the cost (nodetable/bulk.py)."""
        return upsert_nodes(self, nodes, rows)

    def _clear_pod_columns(self, row: int) -> None:
        """No pod accounted on ``row`` (a new node, or one removed)."""
        self.requested[:, row] = 0
        self.nonzero[:, row] = 0
        self.overflow.clear_row(row)
        self.amount_bound[row] = 0.0
        self.pod_count[row] = 0
        self.port_count[:, row] = 0
        self.row_pods[row] = {}
        self.pod_version += 1
        self.row_version[row] = self.pod_version
        self.pod_index.clear_row(row)
        self.volumes.clear_row(row)

    def _take_row(self, row: int | None) -> int:
        """A free row: the requested one, else the last freed, else a new one."""
        if row is None:
            if self._free_rows:
                return self._free_rows.pop()
            row = self.size
        elif row < self.size:
            if self.alive[row]:
                raise ValueError(f"row {row} is taken by node {self.names[row]!r}")
            self._free_rows.remove(row)
            return row
        while self.size <= row:
            if self.size < row:
                self._free_rows.insert(0, self.size)
            self.size += 1
            self._grow_rows(self.size)
            self.names.append(None)
            self.nodes.append(None)
            self.row_pods.append({})
        return row

    def remove_node(self, name: str) -> int | None:
        """Drop a node's row. Pod accounting goes with it; the cache keeps the pods."""
        row = self.index.pop(name, None)
        if row is None:
            return None
        self.zone_list.remove(int(self.zone_code[row]))
        self._clear_node_columns(row)
        self.alive[row] = False
        self.names[row] = None
        self.nodes[row] = None
        self.free[:, row] = 0
        self._clear_pod_columns(row)
        self._free_rows.append(row)
        self._node_changed()
        return row

    def _node_changed(self) -> None:
        self.node_version += 1
        self._drop_derived()

    def _drop_derived(self) -> None:
        """Forget what is derived from node membership (rebuilt when next read)."""
        self._order = self._name_array = self._image_index = None

    def _clear_node_columns(self, row: int) -> None:
        self.allocatable[:, row] = 0
        self.allowed_pods[row] = 0
        self.unschedulable[row] = False
        self.taint_pos[:, row] = 0
        for col in self.labels.values():
            col[row] = -1
        for rows in self._image_rows.values():
            rows.pop(row, None)

    def _write_node_columns(self, row: int, node: Node) -> None:
        for name, v in node.allocatable.items():
            if name == PODS:
                self.allowed_pods[row] = v
            else:
                c = self.resource_col(name)  # may widen the matrices: index after
                self.allocatable[c, row] = v
        self.unschedulable[row] = node.unschedulable
        self.zone_code[row] = self.zones.intern(zone_key(node.labels))
        for key, value in node.labels.items():
            col = self.labels.get(key)
            if col is None:
                col = np.full(self._cap, -1, dtype=np.int32)
                self.labels[key] = col
                self.label_values[key] = Interner()
            col[row] = self.label_values[key].intern(value)
        write_taints_images(self, row, node)

    # ------------------------------------------------------------------ pods

    def add_pod(self, row: int, pod: Pod, sign: int = 1) -> None:
        """Account ``pod`` on ``row`` (``sign=-1`` removes it). Callers keep adds and
        removes paired (the cache does); accounting a pod twice double-counts it."""
        if sign > 0:
            self.row_pods[row][pod.key] = pod
        else:
            self.row_pods[row].pop(pod.key, None)
        cols, vals = self._pod_vector(pod.requests)
        bound = self.amount_bound[row] + sign * pod_amount(pod)
        self.amount_bound[row] = bound
        if bound > self.amount_bound_ceiling:
            self.amount_bound_ceiling = float(bound)
        cpu, memory = sign * pod.nonzero_cpu, sign * pod.nonzero_memory
        if bound >= BOUND_LIMIT or self.overflow.has_row(row):
            self.overflow.add_pod_exact(self, row, cols, [sign * v for v in vals], cpu, memory)
        else:
            # element by element: a pod requests a handful of resources, and numpy's
            # scalar item updates cost less than building index arrays for them
            requested, free = self.requested, self.free
            for col, v in zip(cols, vals, strict=True):
                requested[col, row] += sign * v
                free[col, row] -= sign * v
            self.nonzero[0, row] += cpu
            self.nonzero[1, row] += memory
        self.pod_count[row] += sign
        for key in pod_host_ports(pod):
            p = self.ports.intern(key)
            self._sync_columns()
            self.port_count[p, row] += sign
        self.pod_index.add(row, pod, sign)
        if pod.volumes:
            self.volumes.add(row, pod, sign)
        self.pod_version += 1
        self.row_version[row] = self.pod_version

    def add_pods(self, rows: Sequence[int], pods: Sequence[Pod], sign: int = 1) -> None:
        """``add_pod(rows[i], pods[i], sign)`` for each ``i`` in order, the columns updated
        in one pass (simulations move thousands of pods per cycle): the same table state
        (tests/plugins/test_crossnode_account.py); pods with host ports go through add_pod."""
        table = self
        if not pods:
            return
        row_pods = table.row_pods
        index = table.pod_index
        index_built = index.built
        bulk_rows: list[int] = []
        bulk: list[Pod] = []
        versions: dict[int, int] = {}  # row -> pod_version after its last pod, as add_pod
        for row, pod in zip(rows, pods, strict=True):
            if pod.volumes or may_claim_host_ports(pod):
                table.add_pod(row, pod, sign)
                versions[row] = table.pod_version
                continue
            if sign > 0:
                row_pods[row][pod.key] = pod
            else:
                row_pods[row].pop(pod.key, None)
            if index_built:
                index.add(row, pod, sign)
            bulk_rows.append(row)
            bulk.append(pod)
            table.pod_version += 1
            versions[row] = table.pod_version
        if not bulk:
            return
        n = len(bulk)
        requests = [p.requests for p in bulk]
        names = set().union(*requests)
        names.discard(PODS)  # counted apart, as resource_vector does
        if any(table.resources.get(name) < 0 for name in names):
            # New resources: intern them in the order add_pod would (first non-zero request).
            for r in requests:
                table.resource_vector(r)
        at = np.asarray(bulk_rows, dtype=np.int64)
        columns: list[tuple[int, np.ndarray]] = []
        for name in names:
            vals = np.fromiter((r.get(name, 0) for r in requests), dtype=np.int64, count=n)
            if vals.any():
                columns.append((table.resource_col(name), vals))
        cpu = np.fromiter((p.nonzero_cpu for p in bulk), dtype=np.int64, count=n)
        mem = np.fromiter((p.nonzero_memory for p in bulk), dtype=np.int64, count=n)
        amount = np.maximum.reduce([cpu, mem, *(vals for _, vals in columns)])
        np.add.at(table.amount_bound, at, sign * amount.astype(np.float64))
        top = float(table.amount_bound[at].max())
        table.amount_bound_ceiling = max(table.amount_bound_ceiling, top)
        if top >= BOUND_LIMIT or table.overflow.has_any(bulk_rows):
            table.overflow.add_pods_exact(table, bulk_rows, columns, cpu, mem, sign)
        else:
            for col, vals in columns:
                np.add.at(table.requested[col], at, sign * vals)
                np.subtract.at(table.free[col], at, sign * vals)
            np.add.at(table.nonzero[0], at, sign * cpu)
            np.add.at(table.nonzero[1], at, sign * mem)
        np.add.at(table.pod_count, at, sign)
        table.row_version[list(versions)] = list(versions.values())

    def remove_pod(self, row: int, pod: Pod) -> None:
        self.add_pod(row, pod, sign=-1)

    # ------------------------------------------------------------------ views

    def memo(self, key: object, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """Cache a node-derived array (shape [cap, ...]) until node columns change.

        This is how the pods of one Deployment share selector and taint work: the key is
        the pod-side input (a selector, a toleration tuple), the value a full column.
        """
        version = (self.node_version, self._cap)
        if self._memo_version != version:
            self._memo = {}
            self._memo_version = version
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            hit = compute()
            hit.setflags(write=False)
            self._memo[key] = hit
        return hit

    def order(self) -> np.ndarray:
        """Alive rows in upstream's nodeTree order (zones interleaved), int64[n_nodes]."""
        if self._order is None:
            rows = np.fromiter(self.index.values(), dtype=np.int64, count=len(self.index))
            rows.sort()
            ranks = self.zone_list.ranks(len(self.zones))
            self._order = zone_interleaved_order(rows, self.zone_code, self.seq, ranks)
        return self._order

    def name_array(self) -> np.ndarray:
        """Node names by row (object array, None for free rows)."""
        if self._name_array is None:
            self._name_array = np.array(self.names, dtype=object)
        return self._name_array

    def label_code(self, key: str, value: str) -> int:
        """Interned code of ``value`` for label ``key``, or -1 if no node has it."""
        interner = self.label_values.get(key)
        return -1 if interner is None else interner.get(value)

    def image_index(self) -> ImageIndex:
        if self._image_index is None:
            self._image_index = ImageIndex.build(self._image_rows)
        return self._image_index

    def subset(self, rows: np.ndarray) -> NodeTable:
        """A new table holding copies of ``rows`` (as rows 0..k-1), for simulations that
        add or remove pods without touching this one (``nodetable.subset``)."""
        return subset_of(self, rows, _ROW_COLUMNS)  # type: ignore[no-any-return]

    def rows_of(self, names: Iterable[str]) -> np.ndarray:
        return np.asarray([self.index[n] for n in names if n in self.index], dtype=np.int64)
