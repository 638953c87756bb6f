"""The reduced protocol's calls: a batch sent at once, its answers read once, the next
batch sent before this one is committed.

A popped batch is one chunk (``merge.CHUNK`` pods; a bigger batch several), one shared
payload (``ReducedBatch.encode``), encoded once (``client.share``: for Ray actors the
bytes themselves in each call when small, else one ``ray.put`` and its reference), and
one call per shard carrying it and the shard's pending deltas: each shard costs the
coordinator one Ray call and one reply per batch. The batch's answers are read (all shards in one wait) when the
first of its pods is scheduled.

Pipelining. Right after a batch is sent (or taken from the batch sent ahead), the pods
at the head of activeQ, which the next pop would return if nothing changes, are asked
too (``send_ahead``: the coordinator peeks at the queue, pops nothing), their windows
following the popped batch's predicted windows. So the shards evaluate batch k+1 while
the coordinator commits batch k. When batch k+1 is popped, the batch sent ahead is
used for the longest prefix of its pods that are the very objects asked about, provided
its first window starts where the scheduler's rotation now is and the node set is the
one it was asked against (``_promote``); else it is dropped and the popped batch is
sent as without pipelining (and without a lead on the replica). Every answer is then checked per pod exactly as for a batch
sent at its pop (``merge``: the same question, node order, objects version, PreScore
skips, maxima), and every row changed after its batch was sent (the commits of batch k
among them: each flight records its own, ``Flight.touched``) is evaluated again on the
replica. Without a batch sent ahead, the batch's first pods (``DispatchRule.leading``)
are not sent: they take the compiled path on the replica (a whole-batch run,
``whole_batch``) while the shards evaluate the others.
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
from cluster_sched.scheduler.shards.batch_trace import BatchTrace
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from cluster_sched.scheduler.shards.merge import (
    Flight,
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
    if gather is not None and pendings and not getattr(pendings[0], "relayed", False):
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
        #: the popped batch's questions, and the next batch's, sent ahead
        self.current: Flight | None = None
        self.ahead: Flight | None = None
        #: where the batch after the popped one starts if each pod takes its window
        self._next_start = 0
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
        shard in flight while the next is encoded.

        First, shards whose start was not waited for (Ray actors started beside the
        store's load) are waited for, so one that could not start fails the start-up
        with its cause, whether or not batches go to the shards."""
        src = self.source
        for client in src.clients:
            wait_started = getattr(client, "wait_started", None)
            if wait_started is not None:
                wait_started()
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
        """The popped batch's questions: those sent ahead when they still hold, else
        predicted and sent now; False when the replica takes them. ``pre_cycle``: the
        cycle's shared PreFilter answers (``predictable_state``)."""
        src = self.source
        table: NodeTable = src.table
        self.end()
        if self._promote(frameworks, pods, table, next_start, percentage):
            return True
        if self._kept_on_replica(frameworks, pods, table.n_nodes, percentage, batch_size):
            self.batch.to_replica += len(pods)  # the dispatch rule's choice, counted
            return False
        items = predict_windows(
            frameworks, pods, table, snapshot, next_start, percentage, pre_cycle
        )
        if not items:
            return False
        if not self.rule.use_shards(items[0].width, src.router.n_shards, batch_size):
            self.batch.to_replica += len(items)  # the dispatch rule's choice, counted
            return False
        # pipelined, a batch is sent fresh only when the one sent ahead did not hold (the
        # queue ran dry, the pop differed): its answers are waited for, not led on the
        # replica, where a whole-batch run of a few pods costs a run's fixed part (a copy
        # of the table's columns: ~11 ms at 1,000,000 nodes, as the README says) for a handful of pods
        lead = 0 if self.rule.pipeline else self.rule.leading(len(items))
        if not src._attached:
            src._attach(items[0].fwk)
        self.batch.lead += lead  # the replica's, while the shards evaluate the rest
        self.current = self._submit(items[lead:], table, snapshot)
        if self.current is None:
            return False
        self._next_start = _end_of(frameworks, pods, next_start, percentage, table.n_nodes)
        return True

    def _kept_on_replica(
        self,
        frameworks: Mapping[str, Framework],
        pods: Sequence[Pod],
        n: int,
        percentage: int | None,
        batch_size: int,
    ) -> bool:
        """The rule keeps the batch on the replica whatever its prediction (its first
        pod's window, as ``predict_windows`` would size it): the prediction's PreFilters
        (~6 % of the loop) are not run for nothing."""
        fwk = frameworks.get(pods[0].scheduler_name) if pods else None
        if self.rule.mode == "shards" or fwk is None:
            return False
        pct = fwk.percentage_of_nodes_to_score
        width = num_feasible_nodes_to_find(pct if pct is not None else percentage, n)
        return not self.rule.use_shards(width, self.source.router.n_shards, batch_size)

    def send_ahead(
        self,
        frameworks: Mapping[str, Framework],
        pods: Sequence[Pod],
        snapshot: Any,
        percentage: int | None,
        batch_size: int,
        pre_cycle: PreCycleReuse | None = None,
    ) -> bool:
        """Ask the shards about ``pods``, the next batch as a pop now would give it,
        while the popped batch is committed (module docstring); whether they were sent."""
        src = self.source
        if not self.rule.pipeline or self.current is None or not pods:
            return False
        self._drop_ahead()
        table: NodeTable = src.table
        items = predict_windows(
            frameworks, pods, table, snapshot, self._next_start, percentage, pre_cycle
        )
        if not items or not self.rule.use_shards(items[0].width, src.router.n_shards, batch_size):
            return False
        self.ahead = self._submit(items, table, snapshot)
        if self.ahead is None:
            return False
        self.ahead.ahead = True
        return True

    def _promote(
        self,
        frameworks: Mapping[str, Framework],
        pods: Sequence[Pod],
        table: NodeTable,
        next_start: int,
        percentage: int | None,
    ) -> bool:
        """The batch sent ahead becomes the popped batch's, for the longest prefix of
        ``pods`` it asked about (the same objects, in order), when its first window
        starts at ``next_start`` over the same node set; else it is dropped."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return False
        asked = [it for c in sorted(ahead.chunks) for it in ahead.chunks[c]]
        m = 0
        for pod, it in zip(pods, asked, strict=False):
            if it.pod is not pod or it.fwk is not frameworks.get(pod.scheduler_name):
                break
            m += 1
        n = table.n_nodes
        if (
            m == 0
            or ahead.node_version != table.node_version
            or ahead.n != n
            or asked[0].start != next_start % max(1, n)
        ):
            self._retire(ahead)
            self.batch.ahead_dropped += 1
            return False
        for it in asked[m:]:
            ahead.items.pop(it.pod.key, None)
        self.current = ahead
        self.batch.pipelined += 1
        last = asked[m - 1]
        self._next_start = _end_of(frameworks, pods[m:], last.start + last.width, percentage, n)
        return True

    def _submit(self, items: list[ReducedItem], table: NodeTable, snapshot: Any) -> Flight | None:
        """Encode ``items`` once per chunk and send every chunk to every shard: the
        flight, recording from now on the rows changed after it (None: a shard lost)."""
        src = self.source
        clients = src.clients
        if src.rebuilds != self._rebuilds_seen or any(src.router.stale) or src.lost:
            self._order_sent = -1  # a fresh shard has no order
            self._rebuilds_seen = src.rebuilds
        facts = getattr(clients[0], "facts", _no_facts)
        payloads, flight = self.batch.encode(
            items,
            table,
            snapshot,
            facts,
            self._order_sent != table.node_version,
            src.router.shard_of_row,
            src.router.n_shards,
        )
        self._order_sent = table.node_version
        trace = flight.trace = BatchTrace.start(
            items[0].fwk.tracing, "reduce", len(items), len(payloads), len(clients)
        )
        relay = getattr(clients[0], "submit_reduce_all", None)
        if not self.rule.relay_pays(items[0].width, len(clients)):
            relay = None
        try:
            # shards lost, or left unknown by a lost relay (``workers.ray_relay``): a
            # rebuild's wait for the relayed calls may learn of one, making all unknown
            unknown: set[int] = getattr(getattr(clients[0], "relay", None), "unknown", set())
            while src.lost or unknown:
                src._rebuild(min(src.lost | unknown))
            for chunk, payload in enumerate(payloads):
                self.batch.payloads += 1

                def deltas(s: int, first: bool = chunk == 0) -> list[Any]:
                    return src.router.take_deltas(s) if first else []

                # one call for every shard through the relay (``workers.ray_relay``), or
                # one per shard carrying the payload shared once (each shard's deltas
                # taken as its call leaves: a shard lost sending keeps the next ones')
                sent = relay(clients, deltas, payload) if relay is not None else None
                if sent is not None:
                    self.batch.relayed += 1
                else:
                    shared = clients[0].share(payload)
                    sent = (c.submit_reduce(deltas(s), shared, len(payload)) for s, c in enumerate(clients))  # fmt: skip
                calls = []
                for s, (pending, size) in enumerate(sent):
                    self.batch.bytes_sent += size
                    self.batch.calls += 1
                    calls.append((s, pending))
                    if trace is not None:
                        trace.call(chunk, s, size)
                flight.calls.append((chunk, calls))
        except Exception as exc:
            lost = getattr(exc, "shard", None)
            if trace is not None:
                trace.close()
            if lost is None:
                raise
            src.lost.add(lost)
            self._order_sent = -1
            self._drop_ahead()
            return None
        src.router.marks.append(flight.touched)
        return flight

    def read(self, flight: Flight, item: ReducedItem) -> None:
        """Collect the answers of ``flight``'s calls up to ``item``'s chunk (each once):
        every shard's reply to a chunk in one wait, merged across shards as columns."""
        while flight.calls and flight.calls[0][0] <= item.chunk:
            chunk, calls = flight.calls.pop(0)
            items = flight.chunks.get(chunk, [])
            got: list[ChunkReduction] = []
            began = time.perf_counter()
            replies = _gather(self.source.clients[0], [p for _, p in calls])
            self.batch.waited += time.perf_counter() - began
            for (s, _), reply in zip(calls, replies, strict=True):
                if flight.trace is not None:
                    failed = isinstance(reply, SchedulerError)
                    flight.trace.answered(
                        chunk, s, None if failed else reply[1], str(reply) if failed else None
                    )
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
        if not flight.calls and flight.trace is not None:
            flight.trace.close()  # every reply read

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
        flight = self.current
        if flight is None or not flight.items:
            return None
        item = flight.items.get(pod.key)
        if item is not None and item.start != start and len(flight.items) > 2:
            # An earlier pod's search moved the window (rows that failed, a FitError):
            # this pod runs on the replica, the rest are asked again from where it ends.
            flight.items.pop(pod.key)
            self.batch.misses["question"] += 1
            self.resend((start + width) % max(1, table.n_nodes), table, fwk.handle.snapshot)
            return None
        got = self.batch.take(
            flight,
            fwk,
            state,
            pod,
            table,
            start,
            width,
            lambda it: self.read(flight, it),
            pre_score,
            rng,
        )
        if got is not None and flight.trace is not None:
            flight.trace.link()  # this pod's cycle read the batch's answer
        return got

    def resend(self, start: int, table: NodeTable, snapshot: Any) -> None:
        """The batch's remaining questions again, their windows from ``start`` (the batch
        sent ahead followed the old windows: dropped)."""
        flight = self.current
        if flight is None:
            return
        rest = list(flight.items.values())
        self.end()
        self._drop_ahead()
        n = table.n_nodes
        for i, it in enumerate(rest):
            it.start, it.chunk, it.answer = start, chunk_of(i), None
            start = (start + it.width) % n
        self._next_start = start
        self.batch.resent += 1
        if rest:
            self.current = self._submit(rest, table, snapshot)

    def asked(self, pod_key: str) -> bool:
        """Whether the popped batch's questions hold one for ``pod_key``."""
        return self.current is not None and pod_key in self.current.items

    def _retire(self, flight: Flight | None) -> None:
        """Stop recording ``flight``'s changed rows (its calls still running finish on
        their own; their answers are never read)."""
        if flight is None:
            return
        if flight.trace is not None:
            flight.trace.close()
        marks = self.source.router.marks
        for i, m in enumerate(marks):
            if m is flight.touched:
                del marks[i]
                break

    def _drop_ahead(self) -> None:
        if self.ahead is not None:
            self._retire(self.ahead)
            self.batch.ahead_dropped += 1
            self.ahead = None

    def end(self) -> None:
        """Forget the popped batch's answers (the batch sent ahead stays)."""
        self._retire(self.current)
        self.current = None
        self.batch.changed.forget()


def _end_of(
    frameworks: Mapping[str, Framework],
    pods: Sequence[Pod],
    start: int,
    percentage: int | None,
    n: int,
) -> int:
    """Where the scheduler's rotation stands after ``pods`` from ``start`` if each takes
    exactly its window (numFeasibleNodesToFind rows, all feasible)."""
    for pod in pods:
        fwk = frameworks.get(pod.scheduler_name)
        if fwk is not None and n:
            pct = fwk.percentage_of_nodes_to_score
            start += num_feasible_nodes_to_find(pct if pct is not None else percentage, n)
    return start % max(1, n)
