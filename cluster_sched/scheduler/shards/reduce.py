"""The shard's side of the reduced batch protocol: a window of the cluster's node order
evaluated over the shard's own rows, answered by reductions, not rows.

The coordinator sends one payload per chunk of a popped batch, the same bytes to every
shard (one object in Ray's object store, its reference sent to each shard): per pod
shape (``merge._shape_key``) its first pod's profile, manifest, CycleState after
PreFilter and the cluster-wide facts, and per pod its predicted window as ``(start,
width)`` in the replica's node order (``NodeTable.order()``, nodeTree
order). The order itself travels only when it changed (``order_version``, the replica's
``node_version``): replica rows in order. Each shard knows which replica row each of its
rows mirrors (the ``node`` delta names it), so it finds its rows of a window and their
positions in it with two binary searches, without a per-shard list from the coordinator.

Per pod a shard answers (``PodReduction``):

- ``status``: OK, FAILED (a row of the window failed Filter: the serial search would
  look past the window, the coordinator evaluates the pod itself), UNSUPPORTED (a Score
  plugin normalises with rules other than DefaultNormalizeScore's max, or PreScore
  failed), INVALID (a score left [0, 100]: the coordinator's path raises the error),
  STALE (the shard's order is not the payload's);
- ``best``: the best weighted total among its rows of the window, under its own maxima;
- ``ties``: which of its rows of the window (in window order) hold ``best``, a bool
  per row (sent as bits: the coordinator knows where each shard's rows sit in the
  window, ``merge``);
- ``maxima``: per DefaultNormalizeScore plugin (TaintToleration reversed, NodeAffinity),
  the highest raw score over its rows: the normalisation is exact only when every
  shard's maximum is the global one, which the coordinator checks (NodeResourcesFit,
  BalancedAllocation and ImageLocality do not normalise; PodTopologySpread and
  InterPodAffinity normalise with min and max over every feasible node, so their
  PreScore must Skip, as ``speculation`` requires for the same reason);
- ``skipped``: the plugins PreScore skipped (the coordinator's must be the same).

A compact ask (a pod of a shape an earlier ask of the chunk carried: its window and that
ask's index only) is answered with the kernel inputs and PreScore skips its shape's full
ask left here (``ShardKernels.prepare``): nothing decoded, no plugin run for it. Its
answer is the full ask's for the same window: the columns, requests and skips of the
plugins scored here read the shape alone, and the coordinator checks the pod's own
PreScore skips against the reported ones as for any pod.

Everything a pod that fails needs (each node's Status for the FitError and PostFilter) is
never sent: such a pod is FAILED here and evaluated on the coordinator's replica.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.errors import SchedulerError
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.state_codec import decode_state, decode_value
from cluster_sched.plugins import names
from cluster_sched.scheduler.shards.compiled import PreparedShape
from cluster_sched.scheduler.shards.ordered import OrderedColumns
from cluster_sched.scheduler.shards.window import (
    WINDOW_FAILED,
    WINDOW_INVALID,
    WindowCall,
    window_call,
)

__all__ = [
    "DEFAULT_NORMALIZED",
    "FAILED",
    "INVALID",
    "OK",
    "STALE",
    "UNSUPPORTED",
    "PodReduction",
    "ShardWindows",
    "reduce_payload",
]

OK, FAILED, UNSUPPORTED, INVALID, STALE = range(5)
#: Score plugins whose NormalizeScore is DefaultNormalizeScore (name -> reversed)
DEFAULT_NORMALIZED: Mapping[str, bool] = {names.TAINT_TOLERATION: True, names.NODE_AFFINITY: False}


@dataclass(slots=True)
class PodReduction:
    """One shard's answer for one pod (module docstring). The ties come as a bool per
    row (``ties``) or already packed (``bits``, ``rows`` of them: the compiled path,
    ``window``)."""

    status: int
    best: int = 0
    ties: np.ndarray | None = None
    maxima: dict[str, int] | None = None
    skipped: frozenset[str] = frozenset()
    bits: np.ndarray | None = None
    rows: int = 0

    def mask(self) -> np.ndarray | None:
        """The ties as a bool per row of the window, however they came."""
        if self.bits is None:
            return self.ties
        return np.unpackbits(self.bits, count=self.rows).view(np.bool_)


class ShardWindows:
    """Which of the shard's rows sit where in the replica's node order."""

    def __init__(self) -> None:
        #: replica row -> this shard's row (-1: another shard's)
        self.local_of_replica = np.full(0, -1, dtype=np.int64)
        self.replica_of_local: dict[int, int] = {}
        self.version = -1
        self.n = 0
        #: positions in the order of this shard's rows, ascending, and those rows
        self.positions = np.zeros(0, dtype=np.int64)
        self.rows = np.zeros(0, dtype=np.int64)
        #: 0, 1, ... len(positions) - 1 (``span``'s runs are views of it)
        self._every = np.zeros(0, dtype=np.int64)

    def place(self, row: int, replica_row: int) -> None:
        """The shard's ``row`` mirrors the replica's ``replica_row`` (a node delta)."""
        if replica_row >= len(self.local_of_replica):
            grow = max(replica_row + 1, 2 * len(self.local_of_replica), 64)
            extra = np.full(grow - len(self.local_of_replica), -1, dtype=np.int64)
            self.local_of_replica = np.concatenate((self.local_of_replica, extra))
        old = self.replica_of_local.get(row)
        if old == replica_row and self.local_of_replica[replica_row] == row:
            return  # an update of a node in place: the order is unchanged
        if old is not None and old != replica_row and old < len(self.local_of_replica):
            self.local_of_replica[old] = -1
        self.local_of_replica[replica_row] = row
        self.replica_of_local[row] = replica_row
        self.version = -1  # membership changed: the next order must be sent

    def forget(self, row: int) -> None:
        replica_row = self.replica_of_local.pop(row, None)
        if replica_row is not None and replica_row < len(self.local_of_replica):
            self.local_of_replica[replica_row] = -1
        self.version = -1

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def set_order(self, order: np.ndarray, version: int) -> None:
        """The replica's order (replica rows in nodeTree order) at ``version``."""
        known = order < len(self.local_of_replica)
        local = np.full(len(order), -1, dtype=np.int64)
        local[known] = self.local_of_replica[order[known]]
        self.positions = np.flatnonzero(local >= 0).astype(np.int64)
        self.rows = local[self.positions]
        self.n = len(order)
        self.version = version

    def span(self, start: int, width: int) -> np.ndarray:
        """The indices into ``rows`` of ``window``'s rows, in window order (a run unless
        the window wraps): positions in ``ordered.OrderedColumns``. A run is a view of
        one ``arange`` kept with the order (not written to)."""
        p, n = self.positions, self.n
        end = start + width
        if len(self._every) != len(p):
            self._every = np.arange(len(p), dtype=np.int64)
        i0 = int(p.searchsorted(start))
        if end <= n:
            return self._every[i0 : int(p.searchsorted(end))]
        i1 = int(p.searchsorted(end - n))
        return np.concatenate((self._every[i0:], self._every[:i1]))

    def window(self, start: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """This shard's rows among order positions ``start .. start+width-1`` (mod n), in
        window order, and their positions in the window."""
        p, n = self.positions, self.n
        end = start + width
        i0 = int(np.searchsorted(p, start))
        if end <= n:
            i1 = int(np.searchsorted(p, end))
            return self.rows[i0:i1], p[i0:i1] - start
        i1 = int(np.searchsorted(p, end - n))
        rows = np.concatenate((self.rows[i0:], self.rows[:i1]))
        pos = np.concatenate((p[i0:] - start, p[:i1] + (n - start)))
        return rows, pos


@dataclass(slots=True)
class _Known:
    """What a chunk's full ask of a shape left for the compact asks of that shape: the
    kernel's inputs and the PreScore skips, or None (every pod of the shape UNSUPPORTED
    here: the coordinator evaluates it); the compiled call made of them, once."""

    prepared: PreparedShape | None
    skipped: frozenset[str] = frozenset()
    call: WindowCall | None = None

    def window_call(self, view: OrderedColumns) -> WindowCall:
        assert self.prepared is not None
        if self.call is None:
            self.call = window_call(view, self.prepared)
        return self.call


def _empty() -> PodReduction:
    """The answer of a shard that holds no row of the window."""
    return PodReduction(OK, -1, np.zeros(0, dtype=np.bool_), {}, frozenset())


def _run_kernel(core: Any, known: _Known, positions: np.ndarray) -> PodReduction:
    """The window's rows by the compiled call over the order's layout (``ordered``,
    ``window``): one run of positions rather than the shard's shuffled rows."""
    call = known.window_call(core.ordered)
    outcome, best, bits = call(positions)
    if outcome == WINDOW_FAILED:
        return PodReduction(FAILED)
    if outcome == WINDOW_INVALID:
        return PodReduction(INVALID)
    maxima = call.maxima(positions)
    return PodReduction(OK, best, None, maxima, known.skipped, bits, len(positions))


def _reduce_pod(
    core: Any, ask: Mapping[str, Any], windows: ShardWindows, known: dict[int, _Known]
) -> PodReduction:
    positions = windows.span(int(ask["start"]), int(ask["width"]))
    shape = ask.get("shape")
    if "pod" not in ask:  # a compact ask: a pod of a shape this chunk already carried
        if not len(positions):
            return _empty()
        got = known.get(int(shape)) if shape is not None else None
        if got is None or got.prepared is None:
            return PodReduction(UNSUPPORTED)
        return _run_kernel(core, got, positions)
    rows = windows.rows[positions]
    fwk = core.frameworks[ask["profile"]]
    pod = core.pod_of(ask["pod"])
    state = decode_state(ask["state"])
    num_nodes, images = ask["facts"]
    core.set_snapshot(
        num_nodes if num_nodes >= 0 else core.table.n_nodes,
        {k: (int(v[0]), int(v[1])) for k, v in images.items()},
    )
    # PreScore even when the shard holds no row of this pod's window: the shape's
    # compact asks may hold rows (the skips of the plugins scored here read the pod alone)
    nodes = NodeSlice(core.table, rows)
    pre_score = fwk.run_pre_score(state, pod, fwk.handle.snapshot, nodes).is_success
    skipped = frozenset(state.skip_score_plugins)
    supported = pre_score and not any(
        getattr(pl, "normalize_score", None) is not None and pl.name not in DEFAULT_NORMALIZED
        for pl in fwk.active_score_plugins(state)
    )
    prepared = (
        core.kernels.prepare(fwk, state, pod, ask["pod"], ask["facts"], core.table)
        if supported
        else None
    )
    entry = _Known(prepared, skipped) if supported else _Known(None)
    if shape is not None:
        known[int(shape)] = entry
    if not len(rows):
        return _empty()
    if not supported:
        return PodReduction(UNSUPPORTED)
    if prepared is not None and len(rows) > 1:
        return _run_kernel(core, entry, positions)
    # the plugins' numpy path: the same answer where the kernel does not model the pod
    if not fwk.run_filter(state, pod, nodes).passed.all():
        return PodReduction(FAILED)
    raw = fwk.run_score(state, pod, nodes)
    try:
        normalized = fwk.normalize_scores(state, pod, raw)
    except SchedulerError:
        return PodReduction(INVALID)
    totals = fwk.weighted_total(normalized, len(rows))
    best = int(totals.max())
    return PodReduction(
        OK,
        best,
        totals == best,
        {name: int(raw[name].max()) for name in raw if name in DEFAULT_NORMALIZED},
        skipped,
    )


def reduce_payload(
    core: Any, windows: ShardWindows, payload: bytes
) -> tuple[float, list[PodReduction]]:
    """Answer one shared payload (module docstring): the seconds it took and one
    ``PodReduction`` per pod, in the payload's order (``replies`` packs them)."""
    began = time.perf_counter()
    doc = decode_value(payload)
    order = doc.get("order")
    if order is not None:
        windows.set_order(np.frombuffer(order, dtype=np.int64), int(doc["order_version"]))
    fresh = windows.version == int(doc["order_version"]) and windows.n == int(doc["n"])
    if fresh:
        core.ordered.sync(core.table, windows.rows, windows.version)
    known: dict[int, _Known] = {}
    out = [
        _reduce_pod(core, ask, windows, known) if fresh else PodReduction(STALE)
        for ask in doc["asks"]
    ]
    return time.perf_counter() - began, out
