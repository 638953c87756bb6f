"""The reduced protocol's calls: a batch sent at once, its answers read once.

A popped batch is one chunk (``merge.CHUNK`` pods; a bigger batch several), one shared
payload (``ReducedBatch.encode``), put once where every shard can read it
(``client.share``: one ``ray.put`` for Ray actors), and one call per shard carrying that
reference and the shard's pending deltas: each shard costs the coordinator one Ray call
and one reply per batch. The batch's first pods (``DispatchRule.leading``) are not sent:
they take the compiled path on the replica (a whole-batch run, ``whole_batch``) while
the shards evaluate the others, whose answers are read (all shards in one wait) when
the first of them is scheduled. Changes the replica receives meanwhile (those first
pods' assumes among them) are recorded by the router (``touched``) and corrected on
the replica (``merge``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import Framework
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.pre_cycle import PreCycleReuse
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from cluster_sched.scheduler.shards.merge import (
    ReducedBatch,
    ReducedItem,
    chunk_of,
    predict_windows,
)
from cluster_sched.scheduler.shards.replies import ChunkReduction, MergedChunk

__all__ = ["PRELOAD_DELTAS", "ReducedCalls"]

#: deltas per call when the shards are loaded before the first pop (``preload``)
PRELOAD_DELTAS = 20_000


def _no_facts(snapshot: Any, pod: Pod) -> list[Any]:
    return [-1, {}]


def _gather(client: Any, pendings: list[Any]) -> list[Any]:
    """The calls' results in order, a lost shard's error in its place (one wait for all
    when the clients can: ``RayShardClient.gather``)."""
    gather = getattr(client, "gather", None)
    if gather is not None and pendings:
        return list(gather(pendings))
    out: list[Any] = []
    for p in pendings:
        try:
            out.append(p.result())
        except SchedulerError as exc:
            out.append(exc)
    return out


class ReducedCalls:
    """The reduced batch protocol over a ``ShardedSource``'s router and clients."""

    def __init__(self, source: Any, rule: DispatchRule | None = None) -> None:
        self.source = source
        self.rule = rule or DispatchRule()
        self.batch = ReducedBatch()
        #: submitted calls in order: (chunk, [(shard, pending)])
        self._calls: list[tuple[int, list[tuple[int, Any]]]] = []
        self._order_sent = -1
        self._rebuilds_seen = 0

    def available(self) -> bool:
        return all(hasattr(c, "submit_reduce") for c in self.source.clients)

    def preload(self, batch_size: int, percentage: int | None) -> None:
        """Before the first pop: every shard brought up to the replica (its nodes, the
        pods on them) when batches may go to the shards (the dispatch rule for the
        cluster's window), so that the first batch's calls do not carry the cluster and
        the coordinator does not wait mid-run for the shards to take it in (at 1,000,000
        nodes: most of a 10,000-pod run). Calls of PRELOAD_DELTAS deltas, one round per
        shard in flight while the next is encoded."""
        src = self.source
        n = src.table.n_nodes
        if n < 2 or not self.available() or self.rule.mode == "replica":
            return
        width = num_feasible_nodes_to_find(percentage or 0, n)
        if self.rule.mode == "auto" and not self.rule.use_shards(
            width, src.router.n_shards, batch_size
        ):
            return
        router = src.router
        inflight: list[tuple[int, Any]] = []
        while True:
            ready = [
                s
                for s in range(router.n_shards)
                if router.deltas[s] and not router.stale[s] and s not in src.lost
            ]
            sent = [(s, src.clients[s].submit_apply(router.take_deltas(s, PRELOAD_DELTAS))) for s in ready]  # fmt: skip
            for s, pending in inflight:
                try:
                    pending.result()
                except SchedulerError as exc:
                    if getattr(exc, "shard", None) is None:
                        raise
                    src.lost.add(s)  # rebuilt from the replica before its next call
            inflight = sent
            if not sent:
                return

    def send(
        self,
        frameworks: Mapping[str, Framework],
        pods: Sequence[Pod],
        snapshot: Any,
        next_start: int,
        percentage: int | None,
        batch_size: int,
        pre_cycle: PreCycleReuse | None = None,
    ) -> bool:
        """Predict and send the batch's questions; False when the replica takes them.
        ``pre_cycle``: the cycle's shared PreFilter answers (``predictable_state``)."""
        src = self.source
        table: NodeTable = src.table
        self.end()
        items = predict_windows(
            frameworks, pods, table, snapshot, next_start, percentage, pre_cycle
        )
        if not items:
            return False
        if not self.rule.use_shards(items[0].width, src.router.n_shards, batch_size):
            self.batch.to_replica += len(items)  # the dispatch rule's choice, counted
            return False
        lead = self.rule.leading(len(items))
        if not src._attached:
            src._attach(items[0].fwk)
        self.batch.lead += lead  # the replica's, while the shards evaluate the rest
        return self._submit(items[lead:], table, snapshot)

    def _submit(self, items: list[ReducedItem], table: NodeTable, snapshot: Any) -> bool:
        """Encode ``items`` once per chunk and send every chunk to every shard."""
        src = self.source
        clients = src.clients
        if src.rebuilds != self._rebuilds_seen or any(src.router.stale) or src.lost:
            self._order_sent = -1  # a fresh shard has no order
            self._rebuilds_seen = src.rebuilds
        facts = getattr(clients[0], "facts", _no_facts)
        payloads = self.batch.encode(
            items,
            table,
            snapshot,
            facts,
            self._order_sent != table.node_version,
            src.router.shard_of_row,
            src.router.n_shards,
        )
        self._order_sent = table.node_version
        try:
            for s in sorted(src.lost):
                src._rebuild(s)
            for chunk, payload in enumerate(payloads):
                shared = clients[0].share(payload)
                self.batch.payloads += 1
                calls = []
                for s, client in enumerate(clients):
                    deltas = src.router.take_deltas(s) if chunk == 0 else []
                    pending, sent = client.submit_reduce(deltas, shared, len(payload))
                    self.batch.bytes_sent += sent
                    self.batch.calls += 1
                    calls.append((s, pending))
                self._calls.append((chunk, calls))
        except Exception as exc:
            lost = getattr(exc, "shard", None)
            if lost is None:
                raise
            src.lost.add(lost)
            self.end()
            return False
        src.router.touched = set()
        return True

    def read(self, item: ReducedItem) -> None:
        """Collect the answers of the calls up to ``item``'s chunk (each once): every
        shard's reply to a chunk in one wait, merged across shards as columns."""
        while self._calls and self._calls[0][0] <= item.chunk:
            chunk, calls = self._calls.pop(0)
            items = self.batch.chunks.get(chunk, [])
            got: list[ChunkReduction] = []
            began = time.perf_counter()
            replies = _gather(self.source.clients[0], [p for _, p in calls])
            self.batch.waited += time.perf_counter() - began
            for (s, _), reply in zip(calls, replies, strict=True):
                if isinstance(reply, SchedulerError):
                    if getattr(reply, "shard", None) is None:
                        raise reply
                    self.source.lost.add(s)  # ShardLostError: rebuilt before its next call
                    got.append(ChunkReduction.stale(len(items)))
                    continue
                busy, received, columns = reply
                self.batch.busy += busy
                self.batch.bytes_received += received
                got.append(columns)
            merged = MergedChunk(got, len(items))
            if merged.any_stale:
                self._order_sent = -1
            for at, it in enumerate(items):
                it.answer = (merged, at)

    def take(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        start: int,
        width: int,
        pre_score: Any,
        rng: Any,
    ) -> tuple[np.ndarray, int, int] | None:
        if not self.batch.items:
            return None
        item = self.batch.items.get(pod.key)
        if item is not None and item.start != start and len(self.batch.items) > 2:
            # An earlier pod's search moved the window (rows that failed, a FitError):
            # this pod runs on the replica, the rest are asked again from where it ends.
            self.batch.items.pop(pod.key)
            self.batch.misses["question"] += 1
            self.resend((start + width) % max(1, table.n_nodes), table, fwk.handle.snapshot)
            return None
        touched = self.source.router.touched or set()
        return self.batch.take(
            fwk, state, pod, table, start, width, touched, self.read, pre_score, rng
        )

    def resend(self, start: int, table: NodeTable, snapshot: Any) -> None:
        """The batch's remaining questions again, their windows from ``start``."""
        rest = list(self.batch.items.values())
        self._calls = []
        n = table.n_nodes
        for i, it in enumerate(rest):
            it.start, it.chunk, it.answer = start, chunk_of(i), None
            start = (start + it.width) % n
        self.batch.resent += 1
        if self._submit(rest, table, snapshot):
            self.source.router.touched = set()

    def end(self) -> None:
        """Forget the batch's answers (calls still running are left to finish)."""
        self.batch.clear()
        self._calls = []
