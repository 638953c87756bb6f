"""The coordinator's side of the reduced batch protocol: one shared payload per chunk of
a popped batch, and each pod's answer merged from the shards' reductions.

What is sent (``reduce`` has the shard's side). When the compiled path would
answer the batch's attempts and the dispatch rule (``dispatch``) gives them to the
shards, the coordinator predicts each pod's window as ``prefetch`` does (it starts
where the previous pod's ended and holds numFeasibleNodesToFind rows of the node order),
runs its PreFilter (through the cycle's ``pre_cycle`` cache when given), and encodes
the chunk once, a pod shape's manifest and state with its first pod only (``_shape_key``;
the others are compact asks, ``reduce``): every shard receives the same bytes
(``client.share``: inline when small, else one ``ray.put``) and only its own pending
deltas beside it. So the coordinator's cost
per pod does not grow with the shard count, and what it sends does not grow with the
window (a window is two integers; the order travels once per node-set change).

How a pod's answer is used (``ReducedBatch.take``), each condition checked, else the pod
is evaluated on the replica by the compiled path as without shards:

- the cycle asks exactly the predicted question: the same pod object and profile, the
  same window (start and width), node order (the replica's ``node_version``) and cluster
  objects version, the same PreFilter skips, no nominated pods anywhere, at least two
  nodes to score;
- every shard answered OK (each row of the window passed Filter: the serial search stops
  at the window's end, evaluated = width, every row of the window is feasible);
- PreScore skipped the same plugins on the coordinator and on every shard, including
  PodTopologySpread and InterPodAffinity (their normalisation is a min/max over every
  feasible node; not reduced here);
- each DefaultNormalizeScore plugin has the same maximum on every shard that holds rows
  of the window: then each shard's normalised scores are the global ones;
- rows changed since the payload was sent (earlier pods of the batch assumed, bindings,
  deletions, recorded by the router) are filtered and scored again on the replica: they
  must still pass, their raw normalised-plugin scores may not exceed the maxima, and they
  replace the shards' answers for those rows; if the best score came only from such rows
  the pod is evaluated on the replica.

The host is then chosen as ``select_host`` does: ``rng.randrange`` over the number of
best-score ties, and the tie at that rank in window order (a shard's ties are one bit
per row of the window it holds; where those rows sit in the window is known here from
the node order and each replica row's shard, two binary searches per shard, and a shard
whose row count differs from that is not trusted: ``replies``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.features import OPPORTUNISTIC_BATCHING
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.signature import sign_pod
from cluster_sched.framework.state_codec import encode_state, encode_value
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.host_selection import num_feasible_nodes_to_find
from cluster_sched.scheduler.pre_cycle import CROSS_NODE, PreCycleReuse, plugin_names, shape_refs
from cluster_sched.scheduler.shards.prefetch import predictable_state
from cluster_sched.scheduler.shards.reduce import ShardWindows
from cluster_sched.scheduler.shards.replies import ANSWERED, STALE_VERDICT, MergedChunk
from cluster_sched.scheduler.shards.rescore import ChangedRows, TouchedRows

__all__ = ["Flight", "ReducedBatch", "ReducedItem", "predict_windows"]


@dataclass(slots=True)
class ReducedItem:
    """One pod's predicted question and, once read, every shard's reduction."""

    pod: Pod
    fwk: Framework
    state: CycleState
    start: int
    width: int
    skip_filter: frozenset[str]
    chunk: int
    #: once read: every shard's answers for the item's chunk, and its index there
    answer: tuple[MergedChunk, int] | None = None


@dataclass(slots=True)
class Flight:
    """One sent batch of questions (``ReducedBatch.encode``): its items by pod key and by
    chunk, the replica's state they were asked against, the rows changed since they were
    sent (``touched``, registered with the router), the calls still to read and where the
    next batch's first window starts if every item takes its window (``end``).
    ``ahead``: sent before its pods were popped (``pipeline``)."""

    items: dict[str, ReducedItem]
    chunks: dict[int, list[ReducedItem]]
    node_version: int
    objects_version: int
    n: int
    end: int
    ahead: bool = False
    touched: TouchedRows = field(default_factory=TouchedRows)
    #: submitted calls in order: (chunk, [(shard, pending)])
    calls: list[tuple[int, list[tuple[int, Any]]]] = field(default_factory=list)
    #: its spans while tracing is on (``batch_trace.BatchTrace``), else None
    trace: Any = None


def predict_windows(
    frameworks: Mapping[str, Framework],
    pods: Sequence[Pod],
    table: NodeTable,
    snapshot: Any,
    next_start: int,
    percentage: int | None,
    pre_cycle: PreCycleReuse | None = None,
) -> list[ReducedItem]:
    """The batch's questions in queue order, as long as each can be predicted (the first
    that cannot ends the list: later windows depend on it); ``pre_cycle`` as for
    ``predictable_state``."""
    n = table.n_nodes
    items: list[ReducedItem] = []
    for pod in pods:
        fwk = frameworks.get(pod.scheduler_name)
        if fwk is None or n < 2 or _signed(fwk, pod):
            break
        state = predictable_state(fwk, pod, snapshot, pre_cycle)
        if state is None:
            break
        pct = fwk.percentage_of_nodes_to_score
        width = num_feasible_nodes_to_find(pct if pct is not None else percentage, n)
        start = next_start % n
        items.append(
            ReducedItem(
                pod,
                fwk,
                state,
                start,
                width,
                frozenset(state.skip_filter_plugins),
                chunk_of(len(items)),
            )
        )
        next_start = (next_start + width) % n
    return items


#: pods per chunk of the reduced protocol: a popped batch (64 pods by default) is one
#: chunk, so each shard gets one Ray call per batch (each call costs the coordinator's Ray
#: client ~0.35 ms of CPU whatever its size); the batch's first pods overlap the shards'
#: evaluation on the replica instead (``DispatchRule.lead``)
CHUNK = 64


#: windows whose shards' positions ``ReducedBatch`` keeps (one node order's worth)
WINDOWS_KEPT = 1024


def chunk_of(position: int) -> int:
    """The chunk of a batch's ``position``-th pod (CHUNK pods per chunk)."""
    return position // CHUNK


def _shape_key(it: ReducedItem) -> tuple[Any, ...]:
    """What a shard's answer for ``it`` depends on besides its window, by identity: the
    profile, the parsed spec objects its plugins read (``pre_cycle.shape_refs``: pods of
    one spec share them, and the items of a batch hold them alive, so equal identities
    are equal values), its namespace and its PreFilter skips. Pods with equal keys have
    the same state after PreFilter (``predictable_state``: no cross-node or volume state)
    and the same PreScore skips of the plugins the shards score; the cluster-wide facts
    ImageLocality reads are the snapshot's for the same images. The coordinator still
    checks each pod's PreScore skips against the shards' (``take``)."""
    return (
        id(it.fwk),
        *map(id, shape_refs(it.pod)),
        it.pod.meta.namespace,
        it.skip_filter,
    )


def _signed(fwk: Framework, pod: Pod) -> bool:
    """OpportunisticBatching keeps this pod's other feasible nodes sorted by score for
    the next pod of its signature: the totals the reductions do not carry."""
    return fwk.handle.features.enabled(OPPORTUNISTIC_BATCHING) and sign_pod(fwk, pod) is not None


class ReducedBatch:
    """The current batch's reduced questions and answers (module docstring)."""

    def __init__(self) -> None:
        self.n = 0
        #: the replica's order at ``node_version`` and its inverse (row -> position)
        self._order = np.zeros(0, dtype=np.int64)
        self._position = np.zeros(0, dtype=np.int64)
        #: per shard, where its rows sit in that order (tie bits -> window positions)
        self._shards: list[ShardWindows] = []
        #: (start, width) -> per shard, where its rows of that window sit in it: windows
        #: follow each other by numFeasibleNodesToFind rows, so the same few recur
        self._windows: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self.hits = 0
        self.misses: Counter[str] = Counter()
        self.batches = 0
        #: batches sent before they were popped and used when they were (``pipeline``),
        #: and those dropped because the pop differed from the prediction
        self.pipelined = 0
        self.ahead_dropped = 0
        #: window rows of answered pods evaluated again on the replica (changed since sent)
        self.corrected = 0
        #: pods the dispatch rule left to the replica (their batch's first window was
        #: cheaper there)
        self.to_replica = 0
        #: pods of batches given to the shards that the replica took first (``lead``)
        self.lead = 0
        #: Ray calls (or in-process ones) made to all shards, and the payloads they carried
        self.calls = 0
        self.payloads = 0
        #: payloads sent through the shard relay (``workers.ray_relay``): one call each
        self.relayed = 0
        #: batches whose remaining questions were asked again from a moved window
        self.resent = 0
        self.pods_sent = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self.busy = 0.0
        #: seconds the coordinator waited for the shards' replies
        self.waited = 0.0
        self.first_sent: float | None = None
        #: rows changed since the payload, evaluated on the replica
        self.changed = ChangedRows(self._miss)

    # ------------------------------------------------------------------ sending

    def encode(
        self,
        items: list[ReducedItem],
        table: NodeTable,
        snapshot: Any,
        facts: Any,
        with_order: bool,
        owner: np.ndarray,
        n_shards: int,
    ) -> tuple[list[bytes], Flight]:
        """One payload per chunk of ``items`` (the order in the first, if asked) and the
        flight they make; ``owner``: each replica row's shard (``router.shard_of_row``)."""
        order = table.order()
        self.n = len(order)
        if len(self._order) != len(order) or self._order is not order:
            self._order = order
            self._position = np.full(table.allocatable.shape[1], -1, dtype=np.int64)
            self._position[order] = np.arange(len(order), dtype=np.int64)
            of_order = owner[order] if len(order) else np.zeros(0, dtype=owner.dtype)
            self._shards = []
            self._windows = {}
            for shard in range(n_shards):
                w = ShardWindows()  # where the shard's rows sit in the order
                w.positions = np.flatnonzero(of_order == shard).astype(np.int64)
                w.rows, w.n = w.positions, len(order)
                self._shards.append(w)
        chunks: dict[int, list[dict[str, Any]]] = {}
        #: per chunk, the shapes it carries in full: (chunk, shape key) -> ask index
        shapes: dict[tuple[Any, ...], int] = {}
        for it in items:
            asks = chunks.setdefault(it.chunk, [])
            key = (it.chunk, *_shape_key(it))
            shape = shapes.get(key)
            if shape is not None:  # compact: the shard reuses the shape's full ask
                asks.append({"shape": shape, "start": it.start, "width": it.width})
                continue
            shapes[key] = len(asks)
            asks.append(
                {
                    "profile": it.fwk.profile_name,
                    "pod": it.pod.raw if it.pod.raw is not None else it.pod,
                    "state": encode_state(it.state),
                    "facts": facts(snapshot, it.pod),
                    "start": it.start,
                    "width": it.width,
                    "shape": len(asks),
                }
            )
        out = []
        for i, (_, asks) in enumerate(sorted(chunks.items())):
            doc: dict[str, Any] = {"order_version": table.node_version, "n": self.n, "asks": asks}
            if with_order and i == 0:
                doc["order"] = np.ascontiguousarray(order, dtype=np.int64).tobytes()
            out.append(encode_value(doc))
        self.changed.forget()
        by_chunk: dict[int, list[ReducedItem]] = {}
        for it in items:
            by_chunk.setdefault(it.chunk, []).append(it)
        last = items[-1]
        flight = Flight(
            {it.pod.key: it for it in items},
            by_chunk,
            table.node_version,
            int(getattr(snapshot, "objects_version", 0)),
            self.n,
            (last.start + last.width) % max(1, self.n),
        )
        self.batches += 1
        self.pods_sent += len(items)
        if self.first_sent is None:
            self.first_sent = time.perf_counter()
        return out, flight

    # ------------------------------------------------------------------ one pod

    def _miss(self, why: str) -> None:
        self.misses[why] += 1

    def take(
        self,
        flight: Flight,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        start: int,
        width: int,
        read: Any,
        pre_score: Any,
        rng: Any,
    ) -> tuple[np.ndarray, int, int] | None:
        """The pod's window rows (all feasible), chosen row and best score from the shards'
        reductions in ``flight``, or None (module docstring). ``read(item)`` fills
        ``item.answer``; ``pre_score(nodes)`` runs the cycle's PreScore; ``rng`` draws as
        select_host."""
        item = flight.items.pop(pod.key, None)
        if item is None:
            return None
        if pod.resource_claims:  # devices are allocated on the coordinator's replica
            self._miss("claims")
            return None
        snapshot = fwk.handle.snapshot
        if (
            item.pod is not pod
            or item.fwk is not fwk
            or item.start != start
            or item.width != width
            or table.node_version != flight.node_version
            or table.n_nodes != flight.n
            or int(getattr(snapshot, "objects_version", 0)) != flight.objects_version
            or frozenset(state.skip_filter_plugins) != item.skip_filter
        ):
            self._miss("question")
            return None
        read(item)
        if item.answer is None:
            self._miss("stale")
            return None
        merged, at = item.answer
        verdict = int(merged.verdict[at])
        if verdict != ANSWERED:
            self._miss("stale" if verdict == STALE_VERDICT else "filter")
            return None
        end = start + width
        order = self._order
        rows = (
            order[start:end]
            if end <= self.n
            else np.concatenate((order[start:], order[: end - self.n]))
        )
        nodes = NodeSlice(table, rows)
        if not pre_score(nodes).is_success:
            self._miss("prescore")
            return None
        skip = frozenset(state.skip_score_plugins)
        present = plugin_names(fwk.pre_score)
        if not (present & CROSS_NODE) <= skip or not merged.skips_agree(at, skip):
            self._miss("prescore")
            return None
        if merged.conflict[at]:
            self._miss("maxima")
            return None
        best = int(merged.best[at])
        where = self._windows.get((start, width))
        if where is None:
            if len(self._windows) >= WINDOWS_KEPT:
                self._windows.clear()
            parts = [w.window(start, width)[1] for w in self._shards]
            bounds = np.zeros(len(parts) + 1, dtype=np.int64)
            np.cumsum([len(p) for p in parts], out=bounds[1:])
            where = (np.concatenate(parts).astype(np.int64), bounds)
            self._windows[(start, width)] = where
        ties = merged.tie_bits(at, where[0], where[1], width)
        if ties is None:
            self._miss("rows")
            return None
        changed = self._changed(flight.touched, start, width)
        added = changed[:0]
        drop = False
        if len(changed):
            self.corrected += len(changed)
            shape = (
                *_shape_key(item),
                frozenset(state.skip_score_plugins),
                tuple(sorted(pod.requests.items())),
                pod.nonzero_cpu,
                pod.nonzero_memory,
            )
            maxima = merged.maxima_of(at)  # only rows scored again read them
            fixed = self.changed.rescore(fwk, state, pod, table, rows[changed], maxima, shape)
            if fixed is None:
                return None
            top = max(fixed.tolist())  # a few rows: no numpy reduction's overhead
            if top > best:  # the shards' ties no longer hold the best total
                best, drop = top, True
            if top == best:
                added = changed[fixed == top]
        # changed rows leave the shards' tie set, those holding the best come back
        t = ties.settle(changed, added, drop)
        if not t:
            self._miss("best-changed")
            return None
        # the tie at a uniform rank in window order, drawn as ``select_host`` draws
        chosen = ties.select(rng.randrange(t) if t > 1 else 0)
        self.hits += 1
        return rows, int(rows[chosen]), best

    def _changed(self, touched: TouchedRows, start: int, width: int) -> np.ndarray:
        """Window positions of the rows changed since the payload was sent, ascending."""
        return touched.in_window(self._position, self.n, start, width)

    def counters(self, n_shards: int) -> dict[str, float]:
        """How many attempts the shards' reductions answered, why the others were not,
        bytes per pod per shard each way, and shard utilisation."""
        out: dict[str, float] = {
            "reduced_attempts": self.hits,
            "reduced_misses": sum(self.misses.values()),
            "reduced_batches": self.batches,
            "reduced_pipelined": self.pipelined,
            "reduced_ahead_dropped": self.ahead_dropped,
            "reduced_rows_corrected": self.corrected,
            "reduced_resent": self.resent,
            "dispatched_to_replica": self.to_replica,
            "lead_on_replica": self.lead,
            "reduced_payloads": self.payloads,
            "reduced_calls_per_shard": round(self.calls / max(1, n_shards), 2),
            "reduced_relayed_payloads": self.relayed,
        }
        out.update({f"reduced_miss_{k}": v for k, v in sorted(self.misses.items())})
        if self.pods_sent:
            out["bytes_sent_per_pod_per_shard"] = round(
                self.bytes_sent / self.pods_sent / n_shards, 1
            )
            out["bytes_received_per_pod_per_shard"] = round(
                self.bytes_received / self.pods_sent / n_shards, 1
            )
        if self.first_sent is not None:
            elapsed = max(time.perf_counter() - self.first_sent, 1e-9)
            out["shard_utilisation"] = round(self.busy / n_shards / elapsed, 3)
        if self.pods_sent:
            out["shard_wait_us_per_pod"] = round(self.waited / self.pods_sent * 1e6, 1)
        return out
