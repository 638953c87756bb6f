"""The coordinator's record of which shard holds which node, and what each must be sent.

``ShardRouter`` is the cache's NodeStateSink when shards are used: it keeps the
coordinator's replica table current, chooses each new node's shard (the least loaded)
and its row there, and queues every node/pod change as a delta for the owning shard
(deltas are described in ``core``).

New nodes are placed in bulk. ``upsert_node`` of a node no shard holds yet only notes it
(its replica row is marked pending); the next call that needs a placement (any other
change, a read of the deltas or of the row maps) places every pending node at once over
numpy columns (``least_loaded``, ``_RowAllocator.take_many``: the same shards and rows as
placing them one by one) and queues them as ``["nodes", ...]`` deltas of up to
``NODES_PER_DELTA`` nodes. So a million listed nodes cost no Python work per node here
beyond noting them, and no list per node while they wait.

What a shard is not sent. With cost-based dispatch most attempts (every pod the compiled
path answers) run on the replica, and a shard is only read by the attempts it declines,
so deltas wait until a shard is called (or the loop is idle) and are kept short while
they wait: a pod confirmed by the watch with the same accounting replaces the pending
"pod+" delta or is not sent at all (the shard's copy already counts the same for every
Filter and Score plugin, see ``cache.same_accounting``); a pod removed before its "pod+"
left cancels it. A shard whose waiting changes (``waiting``: a "nodes" delta counts its
nodes) outgrow ``STALE_FACTOR`` times its own state (nodes + pods) stops collecting
them: before its next call it is reset and rebuilt from the replica, which costs one
state's worth. So a shard costs the coordinator no work per pod when it is never called,
and at most twice the minimum when it is.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.nodetable.table import NodeTable

if TYPE_CHECKING:
    from cluster_sched.scheduler.shards.rescore import TouchedRows

Delta = list[Any]
#: changes pushed per shard per idle loop turn, and the backlog below which a shard is
#: never marked stale
DELTA_BACKLOG = 4096
#: a shard's waiting changes beyond this many times its state (nodes + pods) make it stale
STALE_FACTOR = 2
#: the delta that empties a shard before a rebuild from the replica's full state
RESET: Delta = ["reset"]
#: seconds after a shard's last call during which an idle loop pushes it its waiting
#: deltas (``ShardedSource.sync_when_idle``). Shards the dispatch rule leaves idle (every
#: attempt on the replica, as at 100,000 nodes on 2 cores) are pushed nothing: their
#: deltas wait, coalesced, for their next call (or, grown past the shard, a rebuild)
IDLE_SYNC_AFTER_USE = 30.0
#: new nodes per ``["nodes", nodes, rows, replica_rows]`` delta
NODES_PER_DELTA = 1024
#: ``shard_of_row`` of a replica row whose new node is not placed yet
_PENDING = -2


def weight(delta: Delta) -> int:
    """The changes a delta carries: a "nodes" delta its nodes, any other one."""
    return len(delta[1]) if delta and delta[0] == "nodes" else 1


def least_loaded(load: Sequence[int], k: int) -> np.ndarray:
    """The shard of each of ``k`` new nodes, in order, when each goes to the least loaded
    shard (the lowest index among equals) and adds one to its load (``least_loaded_
    reference``). Each shard offers one slot per load level from its own up; the nodes
    take the slots in (level, shard) order, which is the order those picks take them."""
    start = np.asarray(load, dtype=np.int64)
    n = len(start)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(start.min()), int(start.min()) + k  # hi: the emptiest shard alone holds k
    while lo < hi:  # the lowest level T with at least k slots below it
        mid = (lo + hi) // 2
        if int(np.maximum(mid - start, 0).sum()) >= k:
            hi = mid
        else:
            lo = mid + 1
    counts = np.maximum(lo - start, 0)
    shard = np.repeat(np.arange(n, dtype=np.int64), counts)
    level = np.arange(len(shard), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    level += np.repeat(start, counts)
    order = np.argsort(level * n + shard, kind="stable")[:k]
    return shard[order]


def least_loaded_reference(load: Sequence[int], k: int) -> list[int]:
    """``least_loaded`` one node at a time (the rule as it reads; tests compare)."""
    now = list(load)
    out = []
    for _ in range(k):
        shard = min(range(len(now)), key=now.__getitem__)
        now[shard] += 1
        out.append(shard)
    return out


class _RowAllocator:
    """The shard table's own row choice (last freed first, else the next new row),
    replayed here so the coordinator can address shard rows directly."""

    def __init__(self) -> None:
        self.free: list[int] = []
        self.size = 0

    def take_many(self, m: int) -> np.ndarray:
        """``m`` rows as ``m`` single takes would give them."""
        reused = min(m, len(self.free))
        out = np.empty(m, dtype=np.int64)
        if reused:
            out[:reused] = self.free[len(self.free) - reused :][::-1]
            del self.free[len(self.free) - reused :]
        out[reused:] = np.arange(self.size, self.size + m - reused, dtype=np.int64)
        self.size += m - reused
        return out

    def give(self, row: int) -> None:
        self.free.append(row)


def _objects(items: Sequence[Any]) -> np.ndarray:
    """``items`` as a 1-d object array (indexed by row arrays without a Python loop)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class ShardRouter:
    """NodeStateSink for sharded execution (see the module docstring)."""

    def __init__(self, n_shards: int, table: NodeTable | None = None) -> None:
        self.table = table or NodeTable()
        self.n_shards = n_shards
        self._deltas: list[list[Delta]] = [[] for _ in range(n_shards)]
        #: per shard: the changes its waiting deltas carry (``weight``)
        self.waiting = [0] * n_shards
        self.load = [0] * n_shards
        self.alloc = [_RowAllocator() for _ in range(n_shards)]
        #: per replica row: owning shard (-1 none, ``_PENDING`` not placed yet) and the
        #: row inside that shard
        self._shard_of_row = np.full(64, -1, dtype=np.int32)
        self._shard_row = np.zeros(64, dtype=np.int64)
        self.pods_on = [0] * n_shards
        #: per shard: pod key -> position of its waiting "pod+" delta (for coalescing)
        self.pending_add: list[dict[str, int]] = [{} for _ in range(n_shards)]
        #: shards that collect no deltas: rebuilt from the replica before their next call
        self._stale = [False] * n_shards
        #: replica rows changed since a batch was prefetched (None: not recording)
        self.touched: set[int] | None = None
        #: the reduced protocol's batches in flight: each records the rows changed since
        #: it was sent (``pipeline``: the current batch and the next one, sent ahead)
        self.marks: list[TouchedRows] = []
        #: new nodes noted but not placed yet, and their replica rows (``place_pending``)
        self._new_nodes: list[Node] = []
        self._new_rows: list[int] = []
        #: when deltas were last taken for a call to a shard (``take_deltas``)
        self.last_used = -IDLE_SYNC_AFTER_USE

    # -- what readers see: every noted node placed first

    @property
    def deltas(self) -> list[list[Delta]]:
        """Per shard, its waiting deltas in order."""
        self.place_pending()
        return self._deltas

    @property
    def stale(self) -> list[bool]:
        self.place_pending()
        return self._stale

    @property
    def shard_of_row(self) -> np.ndarray:
        """Per replica row, its shard (-1: no node there)."""
        self.place_pending()
        return self._shard_of_row

    @property
    def shard_row(self) -> np.ndarray:
        """Per replica row, its row inside its shard."""
        self.place_pending()
        return self._shard_row

    @property
    def node_shard(self) -> dict[str, tuple[int, int]]:
        """Node name -> (shard, row there), for every placed node (tests, debugging)."""
        self.place_pending()
        owner, rows = self._shard_of_row, self._shard_row
        return {n: (int(owner[r]), int(rows[r])) for n, r in self.table.index.items()}

    # -- placing and queueing

    def place_pending(self) -> None:
        """Place every noted new node (see the module docstring): shards by
        ``least_loaded``, rows by each shard's allocator, deltas in noting order."""
        if not self._new_rows:
            return
        replica = np.asarray(self._new_rows, dtype=np.int64)
        nodes = _objects(self._new_nodes)
        self._new_rows, self._new_nodes = [], []
        shards = least_loaded(self.load, len(replica))
        for shard in range(self.n_shards):
            idx = np.flatnonzero(shards == shard)
            if not len(idx):
                continue
            rows = self.alloc[shard].take_many(len(idx))
            self._shard_of_row[replica[idx]] = shard
            self._shard_row[replica[idx]] = rows
            before = self.load[shard]
            self.load[shard] += len(idx)
            self._push_nodes(shard, nodes[idx], rows, replica[idx], before)

    def _push_nodes(
        self, shard: int, nodes: np.ndarray, rows: np.ndarray, replica: np.ndarray, load: int
    ) -> None:
        """``_push`` of one "node" delta per node, as one delta per NODES_PER_DELTA
        nodes: the shard goes stale exactly where one push at a time would make it."""
        if self._stale[shard]:
            return
        i = np.arange(1, len(rows) + 1, dtype=np.int64)
        limit = np.maximum(DELTA_BACKLOG, STALE_FACTOR * (load + i + self.pods_on[shard]))
        if bool(np.any(self.waiting[shard] + i > limit)):
            self.mark_stale(shard)
            return
        q = self._deltas[shard]
        for a in range(0, len(rows), NODES_PER_DELTA):
            b = a + NODES_PER_DELTA
            q.append(["nodes", nodes[a:b].tolist(), rows[a:b], replica[a:b]])
        self.waiting[shard] += len(rows)

    def _push(self, shard: int, delta: Delta) -> None:
        if self._stale[shard]:
            return
        self._deltas[shard].append(delta)
        self.waiting[shard] += 1
        limit = max(DELTA_BACKLOG, STALE_FACTOR * (self.load[shard] + self.pods_on[shard]))
        if self.waiting[shard] > limit:
            self.mark_stale(shard)

    def mark_stale(self, shard: int) -> None:
        """Drop the shard's waiting deltas; it is rebuilt before its next call."""
        self._deltas[shard] = []
        self.waiting[shard] = 0
        self.pending_add[shard] = {}
        self._stale[shard] = True

    def _touch(self, replica_row: int) -> None:
        if self.touched is not None:
            self.touched.add(replica_row)
        for marks in self.marks:
            marks.add(replica_row)

    def _fit(self, replica_row: int) -> None:
        """Row maps long enough for ``replica_row``."""
        if replica_row < len(self._shard_of_row):
            return
        grow = max(replica_row + 1, 2 * len(self._shard_of_row)) - len(self._shard_of_row)
        self._shard_of_row = np.concatenate([self._shard_of_row, np.full(grow, -1, dtype=np.int32)])
        self._shard_row = np.concatenate([self._shard_row, np.zeros(grow, dtype=np.int64)])

    # -- NodeStateSink

    def upsert_node(self, node: Node) -> None:
        replica_row = self.table.upsert_node(node)
        self._fit(replica_row)
        self._touch(replica_row)
        shard = int(self._shard_of_row[replica_row])
        if shard == -1:  # a new node: placed with the others when next needed
            self._shard_of_row[replica_row] = _PENDING
            self._new_nodes.append(node)
            self._new_rows.append(replica_row)
            return
        self.place_pending()  # nodes noted before this update: their deltas go first
        shard = int(self._shard_of_row[replica_row])
        self._push(shard, ["node", node, int(self._shard_row[replica_row]), replica_row])

    def upsert_nodes(self, nodes: Sequence[Node]) -> None:
        """``upsert_node`` of each in order: new nodes (the listing's, a watch batch's
        run) into the replica in bulk and noted for placement together."""
        index = self.table.index
        if not nodes:
            return
        if any(node.name in index for node in nodes) or len({n.name for n in nodes}) < len(nodes):
            for node in nodes:
                self.upsert_node(node)
            return
        rows = self.table.upsert_nodes(nodes)
        at = np.asarray(rows, dtype=np.int64)
        self._fit(int(at.max()))
        if self.touched is not None:
            self.touched.update(rows)
        for marks in self.marks:
            marks.rows.extend(rows)  # TouchedRows.add of each
        assert (self._shard_of_row[at] == -1).all()  # new rows: no shard holds them yet
        self._shard_of_row[at] = _PENDING
        self._new_nodes.extend(nodes)
        self._new_rows.extend(rows)

    def remove_node(self, name: str) -> None:
        self.place_pending()
        at = self.table.index.get(name)
        pods = len(self.table.row_pods[at]) if at is not None else 0
        replica_row = self.table.remove_node(name)
        if replica_row is None:
            return
        self._touch(replica_row)
        shard = int(self._shard_of_row[replica_row])
        self._shard_of_row[replica_row] = -1
        self.alloc[shard].give(int(self._shard_row[replica_row]))
        self.load[shard] -= 1
        self.pods_on[shard] -= pods
        self._push(shard, ["node-", name])

    def _shard_of(self, node_name: str) -> tuple[int, int]:
        """(replica row, shard) of a known node, every noted node placed first."""
        self.place_pending()
        row = self.table.index[node_name]
        return row, int(self._shard_of_row[row])

    def add_pod(self, node_name: str, pod: Pod) -> None:
        row, shard = self._shard_of(node_name)
        self.table.add_pod(row, pod)
        self._queue_add(row, shard, node_name, pod)

    def add_pods(self, node_names: list[str], pods: list[Pod]) -> None:
        """``add_pod`` for each pair in order, the replica's columns updated in one pass
        (``NodeTable.add_pods``: the same table state; the cache's ``assume_pods``)."""
        self.place_pending()
        index, owner = self.table.index, self._shard_of_row
        rows = [index[name] for name in node_names]
        self.table.add_pods(rows, pods)
        for row, name, pod in zip(rows, node_names, pods, strict=True):
            self._queue_add(row, int(owner[row]), name, pod)

    def _queue_add(self, row: int, shard: int, node_name: str, pod: Pod) -> None:
        """The shard's side of an added pod: the row touched, its "pod+" delta queued."""
        self._touch(row)
        self.pods_on[shard] += 1
        self._push(shard, ["pod+", node_name, pod])
        if not self._stale[shard]:
            self.pending_add[shard][pod.key] = len(self._deltas[shard]) - 1

    def remove_pod(self, node_name: str, pod: Pod) -> None:
        row, shard = self._shard_of(node_name)
        self.table.remove_pod(row, pod)
        self._touch(row)
        self.pods_on[shard] -= 1
        at = self.pending_add[shard].pop(pod.key, None)
        if at is not None:
            self._deltas[shard][at] = []  # never sent: cancel it (dropped by take_deltas)
        else:
            self._push(shard, ["pod-", node_name, pod.key])

    def replace_pod(self, node_name: str, pod: Pod) -> None:
        """Same accounting (the cache's contract for this call): the shard's copy counts
        the same, so only a waiting "pod+" takes the newer object."""
        row, shard = self._shard_of(node_name)
        self.table.row_pods[row][pod.key] = pod
        at = self.pending_add[shard].get(pod.key)
        if at is not None:
            self._deltas[shard][at] = ["pod+", node_name, pod]

    def in_use(self) -> bool:
        """Whether a shard was called in the last IDLE_SYNC_AFTER_USE seconds."""
        return time.monotonic() - self.last_used <= IDLE_SYNC_AFTER_USE

    def take_deltas(self, shard: int, limit: int | None = None, idle: bool = False) -> list[Delta]:
        """The shard's waiting deltas in order (whole deltas carrying at most ``limit``
        changes, at least one), or, for a stale shard, a reset and its full state from
        the replica; ``idle``: pushed by an idle loop, not for a call (``last_used``
        stays)."""
        if not idle:
            self.last_used = time.monotonic()
        self.place_pending()
        if self._stale[shard]:
            self._stale[shard] = False
            return [RESET, *self.full_state_deltas(shard)]
        q = self._deltas[shard]
        if limit is not None and self.waiting[shard] > limit:
            taken = carried = 0
            for d in q:
                w = weight(d)
                if taken and carried + w > limit:
                    break
                taken += 1
                carried += w
            out, self._deltas[shard] = q[:taken], q[taken:]
            self.waiting[shard] -= carried
            self.pending_add[shard] = {
                k: at - taken for k, at in self.pending_add[shard].items() if at >= taken
            }
        else:
            out, self._deltas[shard] = q, []
            self.waiting[shard] = 0
            self.pending_add[shard] = {}
        return [d for d in out if d]

    def full_state_deltas(self, shard: int) -> list[Delta]:
        """Deltas that build ``shard`` from nothing to the replica's current state: every
        node it owns at its shard row (in row order), then every pod accounted on each.
        Pending deltas of the shard are superseded: drop them (``take_deltas``) when
        replaying these into a fresh shard, or pods would be counted twice."""
        self.place_pending()
        t = self.table
        replica = np.flatnonzero(self._shard_of_row[: t.size] == shard)
        replica = replica[np.argsort(self._shard_row[replica], kind="stable")]
        rows = self._shard_row[replica]
        nodes = _objects(t.nodes)[replica]
        out: list[Delta] = [
            ["nodes", nodes[a : a + NODES_PER_DELTA].tolist(), rows[a : a + NODES_PER_DELTA],
             replica[a : a + NODES_PER_DELTA]]
            for a in range(0, len(replica), NODES_PER_DELTA)
        ]  # fmt: skip
        for r in replica[t.pod_count[replica] > 0].tolist():
            name = t.names[r]
            out.extend(["pod+", name, pod] for pod in t.row_pods[r].values())
        return out
