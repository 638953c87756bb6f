"""Node shards seen from the coordinator: placement of nodes, deltas, fan-out.

``ShardRouter`` is the cache's NodeStateSink when shards are used: it keeps the
coordinator's replica table current, chooses each new node's shard (the least loaded)
and its row there, and queues every node/pod change as a delta for the owning shard.
Deltas travel with the shard's next request, so a shard is never behind the cycle that
reads it. ``ShardedSource`` is the NodeSource that fans Filter and Score out to the
shards and merges the answers in the replica's row order.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import FilterOutcome, Framework
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.nodesource import merge_filter_outcomes, merge_scores

Delta = list[Any]


class Pending(Protocol):
    """A submitted shard call; ``result()`` blocks for its answer."""

    def result(self) -> Any: ...


class ShardClient(Protocol):
    """One shard, in this process or remote. ``deltas`` are applied before the call."""

    def submit_filter(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Pending: ...

    def submit_score(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Pending: ...

    def submit_apply(self, deltas: list[Delta]) -> Pending: ...


class _Done:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class InProcessShardClient:
    """A ShardCore in this process: calls are synchronous, objects pass by reference."""

    def __init__(self, core: Any) -> None:
        self.core = core

    def submit_filter(self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray) -> Pending:
        self.core.apply(deltas)
        return _Done(self.core.filter(profile, pod, state, rows))

    def submit_score(self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray) -> Pending:
        self.core.apply(deltas)
        return _Done(self.core.score(profile, pod, state, rows))

    def submit_apply(self, deltas: list[Delta]) -> Pending:
        return _Done(self.core.apply(deltas))


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

    def _track(self, replica_row: int, shard: int, row: int) -> None:
        if replica_row >= len(self.shard_of_row):
            grow = max(replica_row + 1, 2 * len(self.shard_of_row))
            self.shard_of_row = np.concatenate([self.shard_of_row, np.full(grow - len(self.shard_of_row), -1, dtype=np.int32)])
            self.shard_row = np.concatenate([self.shard_row, np.zeros(grow - len(self.shard_row), dtype=np.int64)])
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
        self.deltas[placed[0]].append(["node", node, placed[1]])

    def remove_node(self, name: str) -> None:
        replica_row = self.table.remove_node(name)
        placed = self.node_shard.pop(name, None)
        if placed is None:
            return
        shard, row = placed
        self.alloc[shard].give(row)
        self.load[shard] -= 1
        if replica_row is not None:
            self.shard_of_row[replica_row] = -1
        self.deltas[shard].append(["node-", name])

    def add_pod(self, node_name: str, pod: Pod) -> None:
        self.table.add_pod(self.table.index[node_name], pod)
        self.deltas[self.node_shard[node_name][0]].append(["pod+", node_name, pod])

    def remove_pod(self, node_name: str, pod: Pod) -> None:
        self.table.remove_pod(self.table.index[node_name], pod)
        self.deltas[self.node_shard[node_name][0]].append(["pod-", node_name, pod.key])

    def replace_pod(self, node_name: str, pod: Pod) -> None:
        self.table.row_pods[self.table.index[node_name]][pod.key] = pod
        self.deltas[self.node_shard[node_name][0]].append(["pod=", node_name, pod])

    def take_deltas(self, shard: int) -> list[Delta]:
        out, self.deltas[shard] = self.deltas[shard], []
        return out


class ShardedSource:
    """NodeSource over shard clients; rows are the coordinator replica's rows."""

    def __init__(self, router: ShardRouter, clients: list[ShardClient]) -> None:
        if len(clients) != router.n_shards:
            raise ValueError("one client per shard")
        self.router = router
        self.clients = clients
        self.table = router.table

    def _split(self, rows: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        owner = self.router.shard_of_row[rows]
        out = []
        for shard in range(self.router.n_shards):
            idx = np.flatnonzero(owner == shard)
            if len(idx):
                out.append((shard, idx, self.router.shard_row[rows[idx]]))
        return out

    def filter(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> FilterOutcome:
        calls = [
            (idx, self.clients[s].submit_filter(self.router.take_deltas(s), fwk.profile_name, pod, state, srows))
            for s, idx, srows in self._split(rows)
        ]
        return merge_filter_outcomes(len(rows), [(idx, c.result()) for idx, c in calls])

    def score(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> dict[str, np.ndarray]:
        calls = [
            (idx, self.clients[s].submit_score(self.router.take_deltas(s), fwk.profile_name, pod, state, srows))
            for s, idx, srows in self._split(rows)
        ]
        return merge_scores(len(rows), [(idx, c.result()) for idx, c in calls])

    def sync(self) -> None:
        """Push pending deltas to every shard now (before a fault test, or at idle)."""
        calls = [self.clients[s].submit_apply(self.router.take_deltas(s)) for s in range(self.router.n_shards)]
        for c in calls:
            c.result()
