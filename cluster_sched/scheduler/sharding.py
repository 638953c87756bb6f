"""Node shards seen from the coordinator: placement of nodes, deltas, fan-out.

``ShardRouter`` is the cache's NodeStateSink when shards are used: it keeps the
coordinator's replica table current, chooses each new node's shard (the least loaded)
and its row there, and queues every node/pod change as a delta for the owning shard.
Deltas travel with the shard's next request, so a shard is never behind the cycle that
reads it. ``ShardedSource`` is the NodeSource that fans Filter and Score out to the
shards and merges the answers in the replica's row order.

A shard is disposable: the replica holds everything it holds. When a remote shard is
lost (its process died, or a call failed half-way through applying deltas) its client
raises ``ShardLostError``; ``ShardedSource`` then has the client start a fresh shard,
replays ``ShardRouter.full_state_deltas`` into it (every node at its row, every pod
accounted there), and repeats the call once. If that fails too, the cycle fails with a
SchedulerError naming the shard, and the pod goes back to the queue; the next cycle tries
the rebuild again. Nothing is bound by a shard, so a lost shard can never bind a pod twice
or over-commit a node: it only delays the cycles that needed it.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Protocol

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import FilterOutcome, Framework
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.nodesource import merge_filter_outcomes, merge_scores
from cluster_sched.telemetry.spans import (
    ATTR_PHASE,
    ATTR_PROFILE,
    ATTR_SHARD_ID,
    ATTR_SHARD_NODES,
    SHARD_CALL,
    phase_span,
)

Delta = list[Any]
#: pending deltas per shard that make ``sync_if_behind`` push them
DELTA_BACKLOG = 4096


class ShardLostError(SchedulerError):
    """A shard's state is gone or unknown (its process died, a call failed mid-way):
    the client can only be used again after ``rebuild``."""

    def __init__(self, shard: int, message: str) -> None:
        self.shard = shard
        super().__init__(f"shard {shard} lost: {message}")


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

    def submit_filter(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Pending:
        self.core.apply(deltas)
        return _Done(self.core.filter(profile, pod, state, rows))

    def submit_score(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Pending:
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
            out.append(["node", node, row])
            pods.extend(["pod+", name, pod] for pod in t.row_pods[replica_row].values())
        return out + pods


class ShardedSource:
    """NodeSource over shard clients; rows are the coordinator replica's rows.

    Clients that want the coordinator's cluster-wide facts (``attach_snapshot``: remote
    shards, whose plugins read ``snapshot.num_nodes`` and image spread) get the
    framework's ``snapshot`` service on first use. Clients that can be rebuilt
    (``rebuild(deltas)``) are recovered from the replica when they raise ShardLostError.
    """

    def __init__(self, router: ShardRouter, clients: list[ShardClient]) -> None:
        if len(clients) != router.n_shards:
            raise ValueError("one client per shard")
        self.router = router
        self.clients = clients
        self.table = router.table
        self._attached = False
        #: shards whose last rebuild failed: rebuilt again before their next call
        self.lost: set[int] = set()
        #: how many times a shard was rebuilt (fault tests, metrics)
        self.rebuilds = 0

    def _split(self, rows: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        owner = self.router.shard_of_row[rows]
        out = []
        for shard in range(self.router.n_shards):
            idx = np.flatnonzero(owner == shard)
            if len(idx):
                out.append((shard, idx, self.router.shard_row[rows[idx]]))
        return out

    def _attach(self, fwk: Framework) -> None:
        self._attached = True
        snapshot = fwk.handle.snapshot
        for client in self.clients:
            attach = getattr(client, "attach_snapshot", None)
            if attach is not None and snapshot is not None:
                attach(snapshot)

    def _submit(
        self, kind: str, shard: int, fwk: Framework, state: CycleState, pod: Pod, srows: np.ndarray
    ) -> Pending:
        client = self.clients[shard]
        deltas = self.router.take_deltas(shard)
        if kind == "filter":
            return client.submit_filter(deltas, fwk.profile_name, pod, state, srows)
        return client.submit_score(deltas, fwk.profile_name, pod, state, srows)

    def _rebuild(self, shard: int) -> None:
        """A fresh shard from the replica (ShardLostError if that fails too)."""
        client = self.clients[shard]
        rebuild = getattr(client, "rebuild", None)
        if rebuild is None:
            raise ShardLostError(shard, "this client cannot be rebuilt")
        self.router.take_deltas(shard)  # superseded by the full state
        self.rebuilds += 1
        rebuild(self.router.full_state_deltas(shard))
        self.lost.discard(shard)

    def _fan_out(
        self, kind: str, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray
    ) -> list[tuple[np.ndarray, Any]]:
        if not self._attached:
            self._attach(fwk)
        tracing = fwk.tracing
        calls: list[
            tuple[int, np.ndarray, np.ndarray, Pending | None, ShardLostError | None, Any]
        ] = []
        for s, idx, srows in self._split(rows):
            span = (
                tracing.start_span(
                    SHARD_CALL, {ATTR_SHARD_ID: s, ATTR_SHARD_NODES: len(srows), ATTR_PHASE: kind}
                )
                if tracing.enabled
                else None
            )
            try:
                if s in self.lost:
                    self._rebuild(s)
                with tracing.use_span(span) if span is not None else contextlib.nullcontext():
                    submitted = self._submit(kind, s, fwk, state, pod, srows)
                calls.append((s, idx, srows, submitted, None, span))
            except ShardLostError as exc:
                calls.append((s, idx, srows, None, exc, span))
        parts = []
        for s, idx, srows, pending, failed, span in calls:
            try:
                if failed is not None:
                    raise failed
                assert pending is not None
                parts.append((idx, pending.result()))
            except ShardLostError as exc:
                if span is not None:
                    tracing.set_error(span, str(exc))
                parts.append((idx, self._recover(kind, s, fwk, state, pod, srows, exc)))
            finally:
                if span is not None:
                    tracing.end(span)
        return parts

    def _phase(self, fwk: Framework, extension_point: str, run: Any) -> Any:
        """The extension point's span and duration metric, as the local runtime has them
        (here Filter/Score run in the shards, so the coordinator times the fan-out)."""
        if not fwk.instrumented:
            return run()
        start = time.perf_counter()
        with fwk.tracing.span(
            phase_span(extension_point),
            {ATTR_PROFILE: fwk.profile_name, ATTR_PHASE: extension_point},
        ):
            result = run()
        fwk.metrics.observe_extension_point(
            extension_point, "Success", fwk.profile_name, time.perf_counter() - start
        )
        return result

    def _recover(
        self,
        kind: str,
        shard: int,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        srows: np.ndarray,
        exc: ShardLostError,
    ) -> Any:
        """Rebuild the lost shard and repeat its part of the call, once."""
        try:
            self._rebuild(shard)
            return self._submit(kind, shard, fwk, state, pod, srows).result()
        except ShardLostError as again:
            self.lost.add(shard)
            raise SchedulerError(
                f"shard {shard} lost and could not be rebuilt: {again} (first: {exc})"
            ) from again

    def filter(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> FilterOutcome:
        """``prefix`` (rows are 0..k-1 of the replica) changes nothing here: each shard
        gets its own rows, which are not a prefix of its table in general."""
        return self._phase(
            fwk,
            "Filter",
            lambda: merge_filter_outcomes(
                len(rows), self._fan_out("filter", fwk, state, pod, rows)
            ),
        )

    def score(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> dict[str, np.ndarray]:
        return self._phase(
            fwk,
            "Score",
            lambda: merge_scores(len(rows), self._fan_out("score", fwk, state, pod, rows)),
        )

    def close(self) -> None:
        """Release the clients that hold resources (Ray actors); idempotent."""
        for client in self.clients:
            close = getattr(client, "close", None)
            if close is not None:
                close()

    def sync_if_behind(self) -> None:
        """Push deltas once a shard has DELTA_BACKLOG of them waiting: attempts the
        compiled path answers on the replica send the shards nothing, and a shard must
        not receive a run's worth of deltas with its next request."""
        if max(map(len, self.router.deltas), default=0) >= DELTA_BACKLOG:
            self.sync()

    def sync(self) -> None:
        """Push pending deltas to every shard now (before a fault test, or at idle)."""
        calls = [
            (s, self.clients[s].submit_apply(self.router.take_deltas(s)))
            for s in range(self.router.n_shards)
        ]
        for s, c in calls:
            try:
                c.result()
            except ShardLostError:
                self._rebuild(s)
