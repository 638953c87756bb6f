"""Node shards seen from the coordinator: placement of nodes, deltas, fan-out.

``ShardRouter`` is the cache's NodeStateSink when shards are used: it keeps the
coordinator's replica table current, chooses each new node's shard (the least loaded)
and its row there, and queues every node/pod change as a delta for the owning shard.
Deltas travel with the shard's next request, so a shard is never behind the cycle that
reads it (``router``: what is sent, coalesced, or replaced by a rebuild).
``ShardedSource`` is the NodeSource that fans Filter and Score out to the shards and
merges the answers in the replica's row order. Clients that can (``submit_filter_score``)
score the rows that pass with their Filter answer; those scores answer the Score phase
without a second fan-out when ``speculation`` shows they are exact.

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

from cluster_sched.api.objects import Pod
from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import FilterOutcome, Framework
from cluster_sched.scheduler.nodesource import LocalSource, merge_filter_outcomes, merge_scores
from cluster_sched.scheduler.pre_cycle import PreCycleReuse
from cluster_sched.scheduler.shards.dispatch import DispatchRule
from cluster_sched.scheduler.shards.pipeline import ReducedCalls
from cluster_sched.scheduler.shards.prefetch import BatchPrefetch, PrefetchItem, predict
from cluster_sched.scheduler.shards.router import DELTA_BACKLOG, Delta, ShardRouter
from cluster_sched.scheduler.shards.speculation import SpeculativeScores, speculation_wanted
from cluster_sched.telemetry.spans import (
    ATTR_PHASE,
    ATTR_PROFILE,
    ATTR_SHARD_ID,
    ATTR_SHARD_NODES,
    SHARD_CALL,
    phase_span,
)

__all__ = [
    "Delta",
    "InProcessShardClient",
    "ShardClient",
    "ShardLostError",
    "ShardRouter",
    "ShardedSource",
]


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

    def submit_filter_score(
        self, deltas: list[Delta], profile: str, pod: Pod, state: CycleState, rows: np.ndarray
    ) -> Pending:
        self.core.apply(deltas)
        return _Done(self.core.filter_score(profile, pod, state.clone(), rows))

    def submit_filter_score_many(
        self, deltas: list[Delta], asks: list[tuple[str, Pod, CycleState, np.ndarray]]
    ) -> Pending:
        self.core.apply(deltas)
        return _Done(
            [self.core.filter_score(p, pod, st.clone(), rows) for p, pod, st, rows in asks]
        )

    def submit_apply(self, deltas: list[Delta]) -> Pending:
        return _Done(self.core.apply(deltas))

    @staticmethod
    def share(payload: bytes) -> bytes:
        """In one process every shard reads the same bytes."""
        return payload

    def submit_reduce(self, deltas: list[Delta], shared: bytes, size: int) -> tuple[Pending, int]:
        """The reduced protocol (``reduce``): (busy seconds, bytes received, the chunk's
        reductions as columns), and the bytes this call sent."""
        self.core.apply(deltas)
        busy, chunk = self.core.reduce(shared)
        return _Done((busy, 0, chunk)), size


class ShardedSource:
    """NodeSource over shard clients; rows are the coordinator replica's rows.

    Clients that want the coordinator's cluster-wide facts (``attach_snapshot``: remote
    shards, whose plugins read ``snapshot.num_nodes`` and image spread) get the
    framework's ``snapshot`` service on first use. Clients that can be rebuilt
    (``rebuild(deltas)``) are recovered from the replica when they raise ShardLostError.
    ``prefetch=False`` asks the shards per attempt only: the per-pod protocol, kept
    selectable so benchmarks can measure both.
    """

    def __init__(
        self,
        router: ShardRouter,
        clients: list[ShardClient],
        prefetch: bool = True,
        dispatch: DispatchRule | None = None,
    ) -> None:
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
        #: scores shards computed with their Filter answer, for this attempt's Score
        self.speculative = SpeculativeScores()
        self._fused = all(hasattr(c, "submit_filter_score") for c in clients)
        #: the popped batch's questions, answered by one call per shard (shard_prefetch)
        self.prefetch = BatchPrefetch()
        self._batched = prefetch and all(hasattr(c, "submit_filter_score_many") for c in clients)
        #: the batch's calls in order: (chunk, reply, the items and positions it answers)
        self._batch_calls: list[tuple[int, int, Pending, list[tuple[PrefetchItem, Any]]]] = []
        #: the reduced protocol (``merge``), for batches the compiled path would take
        self.reduced = ReducedCalls(self, dispatch)

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
        if kind == "filter_score":
            return client.submit_filter_score(  # type: ignore[attr-defined]
                deltas, fwk.profile_name, pod, state, srows
            )
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
        gets its own rows, which are not a prefix of its table in general. A pod with
        resource claims is filtered on the replica: DynamicResources' Filter needs its
        PreFilter's cycle (the allocator), which only the coordinator has (``prefetch``
        and ``speculation`` leave such pods out for the same reason)."""
        if pod.resource_claims:
            return LocalSource(self.table).filter(fwk, state, pod, rows, prefix)
        if self.prefetch.items:
            try:
                out = self.prefetch.take(
                    fwk,
                    state,
                    pod,
                    rows,
                    self.table,
                    self.router.touched or set(),
                    self.speculative,
                    self._read_batch,
                )
            except ShardLostError as exc:
                self.lost.add(exc.shard)  # rebuilt by the call below
                self.end_batch()
                out = None
            if out is not None:
                return out
        if self._fused and speculation_wanted(fwk, pod):
            return self._phase(fwk, "Filter", lambda: self._filter_score(fwk, state, pod, rows))
        return self._phase(
            fwk,
            "Filter",
            lambda: merge_filter_outcomes(
                len(rows), self._fan_out("filter", fwk, state, pod, rows)
            ),
        )

    def _filter_score(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray
    ) -> FilterOutcome:
        """Filter, each shard also scoring the rows of its part that passed."""
        parts = self._fan_out("filter_score", fwk, state, pod, rows)
        for idx, (_, passing, scores, skipped) in parts:
            if scores is not None:
                self.speculative.keep(state, pod, rows[idx[passing]], scores, skipped)
        return merge_filter_outcomes(len(rows), [(idx, reply[0]) for idx, reply in parts])

    def prefetch_batch(
        self,
        frameworks: dict[str, Framework],
        pods: list[Pod],
        snapshot: object,
        next_start: int,
        percentage: int | None,
        nominated: bool,
    ) -> None:
        """Send the batch's predicted first Filter questions, one call per shard
        (``prefetch``); changes to the replica are recorded from now on."""
        self.end_batch()
        if not self._batched or not pods:
            return
        items = predict(frameworks, pods, self.table, snapshot, next_start, percentage, nominated)
        if not items:
            return
        if not self._attached:
            self._attach(items[0].fwk)
        calls: dict[tuple[int, int], list[tuple[PrefetchItem, np.ndarray, np.ndarray]]] = {}
        for item in items:
            for s, idx, srows in self._split(item.rows):
                calls.setdefault((item.chunk, s), []).append((item, idx, srows))
        self.prefetch.traced(items, self.router.n_shards)
        try:
            for (chunk, s), asks in calls.items():
                if s in self.lost:
                    self._rebuild(s)
                client = self.clients[s]
                pending = client.submit_filter_score_many(  # type: ignore[attr-defined]
                    self.router.take_deltas(s),
                    [(it.fwk.profile_name, it.pod, it.state, srows) for it, _, srows in asks],
                )
                self._batch_calls.append((chunk, s, pending, [(it, idx) for it, idx, _ in asks]))
                self.prefetch.sent(chunk, s)
        except ShardLostError as exc:
            self.lost.add(exc.shard)
            self.end_batch()
            return
        self.prefetch.items = {it.pod.key: it for it in items}
        self.router.touched = set()

    def reduce_batch(
        self,
        frameworks: dict[str, Framework],
        pods: list[Pod],
        snapshot: object,
        next_start: int,
        percentage: int | None,
        batch_size: int,
        pre_cycle: PreCycleReuse | None = None,
    ) -> bool:
        """Send the batch's questions by the reduced protocol when the dispatch rule gives
        it to the shards (``pipeline``); False: the replica answers them. ``pre_cycle``:
        the cycle's shared PreFilter answers, so the prediction does not run PreFilter
        again for a pod of a known shape."""
        self.end_batch()
        if not pods or not self.reduced.available():
            return False
        return self.reduced.send(
            frameworks, pods, snapshot, next_start, percentage, batch_size, pre_cycle
        )

    def asked(self, pod_key: str) -> bool:
        """Whether the shards hold a question of the current batch for ``pod_key`` (the
        reduced protocol's): its attempt reads their answer, so the loop does not decide
        it on the replica in a whole-batch run (``whole_batch``) meanwhile."""
        return self.reduced.asked(pod_key)

    def _read_batch(self, item: PrefetchItem) -> None:
        """Collect the replies of the calls up to ``item``'s chunk (each once): every
        item they answer gets its parts."""
        while self._batch_calls and self._batch_calls[0][0] <= item.chunk:
            chunk, s, pending, asks = self._batch_calls.pop(0)
            for (it, idx), reply in zip(asks, pending.result(), strict=True):
                it.parts.append((idx, reply))
            self.prefetch.answered(chunk, s)

    def speculation_counters(self) -> dict[str, float]:
        """How often the shards' speculative answers served: prefetched batches
        (``prefetch``) and scores sent with Filter answers (``speculation``)."""
        return {
            **self.prefetch.counters(),
            **self.speculative.counters(),
            **self.reduced.batch.counters(self.router.n_shards),
        }

    def end_batch(self) -> None:
        """The batch is over: forget its prefetched answers and stop recording."""
        self.prefetch.clear()
        self._batch_calls = []
        self.reduced.end()
        self.router.touched = None

    def score(
        self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray, prefix: bool = False
    ) -> dict[str, np.ndarray]:
        if pod.resource_claims:  # on the replica, as ``filter``
            return LocalSource(self.table).score(fwk, state, pod, rows, prefix)

        def run() -> dict[str, np.ndarray]:
            kept = self.speculative.take(fwk, state, pod, rows, self.table)
            if kept is not None:
                return kept
            return merge_scores(len(rows), self._fan_out("score", fwk, state, pod, rows))

        return self._phase(fwk, "Score", run)

    def close(self) -> None:
        """Release the clients that hold resources (Ray actors); idempotent."""
        for client in self.clients:
            close = getattr(client, "close", None)
            if close is not None:
                close()

    def preload(self, batch_size: int, percentage: int | None) -> None:
        """Before the first pop: the shards loaded when batches may go to them."""
        self.reduced.preload(batch_size, percentage)

    def sync_when_idle(self) -> None:
        """The loop found nothing to schedule: push up to DELTA_BACKLOG waiting deltas to
        each shard that is not stale, so a later call carries less (a stale shard waits for
        its next call: rebuilding it now could be for nothing). Only to shards in use
        (``router.IDLE_SYNC_AFTER_USE``): idle ones are sent nothing."""
        if not self.router.in_use():
            return
        calls = [
            (s, self.clients[s].submit_apply(self.router.take_deltas(s, DELTA_BACKLOG, True)))
            for s in range(self.router.n_shards)
            if self.router.deltas[s] and not self.router.stale[s]
        ]
        for s, c in calls:
            try:
                c.result()
            except ShardLostError:
                self._rebuild(s)

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
