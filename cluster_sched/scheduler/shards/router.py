"""The coordinator's record of which shard holds which node, and what each must be sent.

``ShardRouter`` is the cache's NodeStateSink when shards are used: it keeps the
coordinator's replica table current, chooses each new node's shard (the least loaded)
and its row there, and queues every node/pod change as a delta for the owning shard
(deltas are described in ``core``).

What a shard is not sent. With cost-based dispatch most attempts (every pod the compiled
path answers) run on the replica, and a shard is only read by the attempts it declines,
so deltas wait until a shard is called (or the loop is idle) and are kept short while
they wait: a pod confirmed by the watch with the same accounting replaces the pending
"pod+" delta or is not sent at all (the shard's copy already counts the same for every
Filter and Score plugin, see ``cache.same_accounting``); a pod removed before its "pod+"
left cancels it. A shard whose waiting deltas outgrow ``STALE_FACTOR`` times its own
state (nodes + pods) stops collecting them: before its next call it is reset and rebuilt
from the replica, which costs one state's worth. So a shard costs the coordinator no
work per pod when it is never called, and at most twice the minimum when it is.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.nodetable.table import NodeTable

Delta = list[Any]
#: deltas pushed per shard per idle loop turn, and the backlog below which a shard is
#: never marked stale
DELTA_BACKLOG = 4096
#: a shard's waiting deltas beyond this many times its state (nodes + pods) make it stale
STALE_FACTOR = 2
#: the delta that empties a shard before a rebuild from the replica's full state
RESET: Delta = ["reset"]
#: seconds after a shard's last call during which an idle loop pushes it its waiting
#: deltas (``ShardedSource.sync_when_idle``). Shards the dispatch rule leaves idle (every
#: attempt on the replica, as at 100,000 nodes on 2 cores) are pushed nothing: their
#: deltas wait, coalesced, for their next call (or, grown past the shard, a rebuild)
IDLE_SYNC_AFTER_USE = 30.0


class _RowAllocator:
    """The shard table's own row choice (last freed first, else the next new row),
    replayed here so the coordinator can address shard rows directly."""

    def __init__(self) -> None:
        self.free: list[int] = []
        self.size = 0

    def take(self) -> int:
        if self.free:
            return self.free.pop()
        self.size += 1
        return self.size - 1

    def give(self, row: int) -> None:
        self.free.append(row)


class ShardRouter:
    """NodeStateSink for sharded execution (see the module docstring)."""

    def __init__(self, n_shards: int, table: NodeTable | None = None) -> None:
        self.table = table or NodeTable()
        self.n_shards = n_shards
        self.deltas: list[list[Delta]] = [[] for _ in range(n_shards)]
        self.load = [0] * n_shards
        self.alloc = [_RowAllocator() for _ in range(n_shards)]
        self.node_shard: dict[str, tuple[int, int]] = {}
        #: per replica row: owning shard (-1 none) and the row inside that shard
        self.shard_of_row = np.full(64, -1, dtype=np.int32)
        self.shard_row = np.zeros(64, dtype=np.int64)
        self.pods_on = [0] * n_shards
        #: per shard: pod key -> position of its waiting "pod+" delta (for coalescing)
        self.pending_add: list[dict[str, int]] = [{} for _ in range(n_shards)]
        #: shards that collect no deltas: rebuilt from the replica before their next call
        self.stale = [False] * n_shards
        #: replica rows changed since a batch was prefetched (None: not recording)
        self.touched: set[int] | None = None
        #: the reduced protocol's batches in flight: each records the rows changed since
        #: it was sent (``pipeline``: the current batch and the next one, sent ahead)
        self.marks: list[set[int]] = []
        #: when deltas were last taken for a call to a shard (``take_deltas``)
        self.last_used = -IDLE_SYNC_AFTER_USE

    def _push(self, shard: int, delta: Delta) -> None:
        if self.stale[shard]:
            return
        q = self.deltas[shard]
        q.append(delta)
        if len(q) > max(DELTA_BACKLOG, STALE_FACTOR * (self.load[shard] + self.pods_on[shard])):
            self.mark_stale(shard)

    def mark_stale(self, shard: int) -> None:
        """Drop the shard's waiting deltas; it is rebuilt before its next call."""
        self.deltas[shard] = []
        self.pending_add[shard] = {}
        self.stale[shard] = True

    def _touch(self, replica_row: int) -> None:
        if self.touched is not None:
            self.touched.add(replica_row)
        for marks in self.marks:
            marks.add(replica_row)

    def _track(self, replica_row: int, shard: int, row: int) -> None:
        if replica_row >= len(self.shard_of_row):
            grow = max(replica_row + 1, 2 * len(self.shard_of_row))
            self.shard_of_row = np.concatenate(
                [self.shard_of_row, np.full(grow - len(self.shard_of_row), -1, dtype=np.int32)]
            )
            self.shard_row = np.concatenate(
                [self.shard_row, np.zeros(grow - len(self.shard_row), dtype=np.int64)]
            )
        self.shard_of_row[replica_row] = shard
        self.shard_row[replica_row] = row

    # -- NodeStateSink

    def upsert_node(self, node: Node) -> None:
        replica_row = self.table.upsert_node(node)
        placed = self.node_shard.get(node.name)
        if placed is None:
            shard = min(range(self.n_shards), key=self.load.__getitem__)
            placed = (shard, self.alloc[shard].take())
            self.node_shard[node.name] = placed
            self.load[shard] += 1
        self._track(replica_row, *placed)
        self._touch(replica_row)
        self._push(placed[0], ["node", node, placed[1], replica_row])

    def remove_node(self, name: str) -> None:
        at = self.table.index.get(name)
        pods = len(self.table.row_pods[at]) if at is not None else 0
        replica_row = self.table.remove_node(name)
        if replica_row is not None:
            self._touch(replica_row)
        placed = self.node_shard.pop(name, None)
        if placed is None:
            return
        shard, row = placed
        self.alloc[shard].give(row)
        self.load[shard] -= 1
        if replica_row is not None:
            self.shard_of_row[replica_row] = -1
        self.pods_on[shard] -= pods
        self._push(shard, ["node-", name])

    def add_pod(self, node_name: str, pod: Pod) -> None:
        row = self.table.index[node_name]
        self.table.add_pod(row, pod)
        self._queue_add(row, node_name, pod)

    def add_pods(self, node_names: list[str], pods: list[Pod]) -> None:
        """``add_pod`` for each pair in order, the replica's columns updated in one pass
        (``NodeTable.add_pods``: the same table state; the cache's ``assume_pods``)."""
        index = self.table.index
        rows = [index[name] for name in node_names]
        self.table.add_pods(rows, pods)
        for row, name, pod in zip(rows, node_names, pods, strict=True):
            self._queue_add(row, name, pod)

    def _queue_add(self, row: int, node_name: str, pod: Pod) -> None:
        """The shard's side of an added pod: the row touched, its "pod+" delta queued."""
        self._touch(row)
        shard = self.node_shard[node_name][0]
        self.pods_on[shard] += 1
        self._push(shard, ["pod+", node_name, pod])
        if not self.stale[shard]:
            self.pending_add[shard][pod.key] = len(self.deltas[shard]) - 1

    def remove_pod(self, node_name: str, pod: Pod) -> None:
        row = self.table.index[node_name]
        self.table.remove_pod(row, pod)
        self._touch(row)
        shard = self.node_shard[node_name][0]
        self.pods_on[shard] -= 1
        at = self.pending_add[shard].pop(pod.key, None)
        if at is not None:
            self.deltas[shard][at] = []  # never sent: cancel it (dropped by take_deltas)
        else:
            self._push(shard, ["pod-", node_name, pod.key])

    def replace_pod(self, node_name: str, pod: Pod) -> None:
        """Same accounting (the cache's contract for this call): the shard's copy counts
        the same, so only a waiting "pod+" takes the newer object."""
        self.table.row_pods[self.table.index[node_name]][pod.key] = pod
        shard = self.node_shard[node_name][0]
        at = self.pending_add[shard].get(pod.key)
        if at is not None:
            self.deltas[shard][at] = ["pod+", node_name, pod]

    def in_use(self) -> bool:
        """Whether a shard was called in the last IDLE_SYNC_AFTER_USE seconds."""
        return time.monotonic() - self.last_used <= IDLE_SYNC_AFTER_USE

    def take_deltas(self, shard: int, limit: int | None = None, idle: bool = False) -> list[Delta]:
        """The shard's waiting deltas in order (at most ``limit``), or, for a stale shard,
        a reset and its full state from the replica; ``idle``: pushed by an idle loop, not
        for a call (``last_used`` stays)."""
        if not idle:
            self.last_used = time.monotonic()
        if self.stale[shard]:
            self.stale[shard] = False
            return [RESET, *self.full_state_deltas(shard)]
        q = self.deltas[shard]
        if limit is not None and len(q) > limit:
            out, self.deltas[shard] = q[:limit], q[limit:]
            self.pending_add[shard] = {
                k: at - limit for k, at in self.pending_add[shard].items() if at >= limit
            }
        else:
            out, self.deltas[shard] = q, []
            self.pending_add[shard] = {}
        return [d for d in out if d]

    def full_state_deltas(self, shard: int) -> list[Delta]:
        """Deltas that build ``shard`` from nothing to the replica's current state: every
        node it owns at its shard row (in row order), then every pod accounted on each.
        Pending deltas of the shard are superseded: drop them (``take_deltas``) when
        replaying these into a fresh shard, or pods would be counted twice."""
        t = self.table
        nodes = sorted((row, name) for name, (s, row) in self.node_shard.items() if s == shard)
        out: list[Delta] = []
        pods: list[Delta] = []
        for row, name in nodes:
            replica_row = t.index[name]
            node = t.nodes[replica_row]
            assert node is not None
            out.append(["node", node, row, replica_row])
            pods.extend(["pod+", name, pod] for pod in t.row_pods[replica_row].values())
        return out + pods
