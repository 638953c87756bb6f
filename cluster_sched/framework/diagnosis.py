"""Diagnosis of a failed attempt and the FitError message, in upstream's grammar.

A search over thousands of nodes may see most of them fail, so failing nodes are
recorded in bulk: ``Diagnosis.add_failed`` keeps a batch of arrays (node names, codes,
reason ids, failing plugin ids) per Filter call, and ``NodeStatusMap`` (the
``node_to_status.statuses`` mapping) builds ``Status`` objects by name only when a reader
asks for them. The FitError histogram, the count of evaluated nodes and PostFilter's
"which nodes were Unschedulable" are answered from the arrays directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from cluster_sched.framework.interfaces import NodeToStatus
from cluster_sched.framework.status import Code, Status

if TYPE_CHECKING:
    from cluster_sched.framework.runtime import FilterOutcome
    from cluster_sched.nodetable.table import NodeTable

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
#: upstream ErrNoNodesAvailable: the cluster has no node at all.
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


@dataclass(slots=True)
class FilterVerdicts:
    """Filter answers for ``k`` evaluated nodes, in the arrays Filter produced them.

    - ``codes``: int8[k], ``Code`` values, 0 where the node passed
    - ``reason_ids``: int32[k], index into ``reasons``
    - ``plugin_idx``: int16[k], index into ``plugin_names`` (the failing plugin)
    """

    codes: np.ndarray
    reason_ids: np.ndarray
    plugin_idx: np.ndarray
    reasons: Sequence[tuple[str, ...]]
    plugin_names: Sequence[str]

    @classmethod
    def of(cls, outcome: FilterOutcome, plugin_names: Sequence[str]) -> FilterVerdicts:
        v = outcome.verdicts
        return cls(v.codes, v.reason_ids, outcome.plugin_idx, v.reasons, plugin_names)

    def with_overrides(self, overrides: Mapping[int, Status]) -> FilterVerdicts:
        """A copy where node ``i`` answers ``overrides[i]`` (any Status)."""
        if not overrides:
            return self
        codes = self.codes.copy()
        reason_ids = self.reason_ids.copy()
        plugin_idx = self.plugin_idx.copy()
        reasons = list(self.reasons)
        names = list(self.plugin_names)
        for i, st in overrides.items():
            codes[i] = int(st.code)
            reason_ids[i] = len(reasons)
            reasons.append(st.reasons)
            plugin_idx[i] = len(names)
            names.append(st.plugin)
        return FilterVerdicts(codes, reason_ids, plugin_idx, reasons, names)

    def overlay(self, pos: np.ndarray, first: FilterVerdicts) -> FilterVerdicts:
        """A copy where node ``pos[j]`` answers ``first``'s ``j``-th verdict wherever
        that one failed (RunFilterPluginsWithNominatedPods: a failing first pass, with
        the nominated pods, is the node's answer; else the second pass, this one)."""
        fail = first.codes != 0
        if not fail.any():
            return self
        at = pos[fail]
        codes = self.codes.copy()
        reason_ids = self.reason_ids.copy()
        plugin_idx = self.plugin_idx.copy()
        codes[at] = first.codes[fail]
        reason_ids[at] = first.reason_ids[fail] + len(self.reasons)
        names = self.plugin_names
        if first.plugin_names is names or list(first.plugin_names) == list(names):
            plugin_idx[at] = first.plugin_idx[fail]
        else:
            plugin_idx[at] = first.plugin_idx[fail] + len(names)
            names = [*names, *first.plugin_names]
        return FilterVerdicts(codes, reason_ids, plugin_idx, [*self.reasons, *first.reasons], names)

    def __call__(self, i: int) -> Status:
        """The Status of node ``i``."""
        code = int(self.codes[i])
        if code == 0:
            return Status()
        return Status(
            Code(code),
            self.reasons[int(self.reason_ids[i])],
            self.plugin_names[int(self.plugin_idx[i])],
        )


@dataclass(slots=True)
class _Batch:
    """Failing nodes of one Filter call: ``names`` object[k]; ``rows`` int64[k] of
    ``table``; per node code, reason id and plugin id (see FilterVerdicts)."""

    names: np.ndarray
    rows: np.ndarray
    table: Any
    codes: np.ndarray
    reason_ids: np.ndarray
    plugin_idx: np.ndarray
    reasons: Sequence[tuple[str, ...]]
    plugin_names: Sequence[str]

    def statuses(self) -> list[Status]:
        """One Status per node (shared between nodes failing the same way)."""
        key = (
            (self.codes.astype(np.int64) << 48)
            | ((self.plugin_idx.astype(np.int64) + 1) << 32)
            | self.reason_ids.astype(np.int64)
        )
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        distinct = np.empty(len(uniq), dtype=object)
        for j, i in enumerate(first.tolist()):
            distinct[j] = Status(
                Code(int(self.codes[i])),
                self.reasons[int(self.reason_ids[i])],
                self.plugin_names[int(self.plugin_idx[i])],
            )
        return distinct[inverse.reshape(-1)].tolist()  # type: ignore[no-any-return]

    def position(self, name: str) -> int:
        """Index of ``name`` in this batch, -1 if absent."""
        row = self.table.index.get(name) if self.table is not None else None
        if row is not None:
            hit = np.flatnonzero(self.rows == row)
            if len(hit) and self.names[int(hit[0])] == name:
                return int(hit[0])
            return -1
        hit = np.flatnonzero(self.names == name)
        return int(hit[0]) if len(hit) else -1

    def status_at(self, i: int) -> Status:
        return Status(
            Code(int(self.codes[i])),
            self.reasons[int(self.reason_ids[i])],
            self.plugin_names[int(self.plugin_idx[i])],
        )


class NodeStatusMap(MutableMapping[str, Status]):
    """node name -> failing Status, in the order nodes were recorded (a later record of
    the same node replaces its value in place, as a dict does).

    Bulk batches stay as arrays until a reader needs Statuses by name; ``len``,
    ``reason_counts`` and ``codes_for`` read the arrays. Batches must not repeat a node
    among themselves (one search evaluates a node once); single entries may.
    """

    __slots__ = ("_dict", "_segments")

    def __init__(self) -> None:
        self._dict: dict[str, Status] = {}
        #: records not yet merged into ``_dict``, in order: batches or (name, Status)
        self._segments: list[_Batch | tuple[str, Status]] = []

    # ------------------------------------------------------------------ recording

    def add_batch(self, batch: _Batch) -> None:
        if len(batch.names):
            self._segments.append(batch)

    def _materialize(self) -> dict[str, Status]:
        if self._segments:
            d = self._dict
            for seg in self._segments:
                if isinstance(seg, _Batch):
                    d.update(zip(seg.names.tolist(), seg.statuses(), strict=True))
                else:
                    d[seg[0]] = seg[1]
            self._segments = []
        return self._dict

    def _batches_only(self) -> bool:
        return not self._dict and all(isinstance(s, _Batch) for s in self._segments)

    # ------------------------------------------------------------------ Mapping

    def __getitem__(self, name: str) -> Status:
        st = self.get(name)
        if st is None:
            raise KeyError(name)
        return st

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        """One node's Status without materialising the others."""
        for seg in reversed(self._segments):
            if isinstance(seg, _Batch):
                i = seg.position(name)
                if i >= 0:
                    return seg.status_at(i)
            elif seg[0] == name:
                return seg[1]
        return self._dict.get(name, default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __setitem__(self, name: str, status: Status) -> None:
        self._segments.append((name, status))

    def __delitem__(self, name: str) -> None:
        del self._materialize()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._materialize())

    def __len__(self) -> int:
        if not self._segments:
            return len(self._dict)
        if self._dict:
            return len(self._materialize())
        batches = [s for s in self._segments if isinstance(s, _Batch)]
        singles = {s[0] for s in self._segments if not isinstance(s, _Batch)}
        # A single entry (the nominated node) may repeat a node of a batch.
        extra = sum(1 for name in singles if all(b.position(name) < 0 for b in batches))
        return sum(len(b.names) for b in batches) + extra

    def keys(self):  # type: ignore[no-untyped-def, override]
        return self._materialize().keys()

    def values(self):  # type: ignore[no-untyped-def, override]
        return self._materialize().values()

    def items(self):  # type: ignore[no-untyped-def, override]
        return self._materialize().items()

    def __repr__(self) -> str:
        return f"NodeStatusMap({self._materialize()!r})"

    # ------------------------------------------------------------------ bulk readers

    def reason_counts(self) -> Counter[str]:
        """How many recorded nodes give each reason (the FitError histogram's input)."""
        reasons: Counter[str] = Counter()
        if not self._batches_only():
            for status in self._materialize().values():
                reasons.update(status.reasons)
            return reasons
        for seg in self._segments:
            assert isinstance(seg, _Batch)
            # bincount, not unique: one pass instead of a sort, per window of a search
            counts = np.bincount(seg.reason_ids)
            for rid in np.flatnonzero(counts).tolist():
                for reason in seg.reasons[rid]:
                    reasons[reason] += int(counts[rid])
        return reasons

    def codes_for(self, table: NodeTable, absent: int) -> np.ndarray:
        """int8[table.size]: each row's recorded Status code, ``absent`` where none."""
        out = np.full(table.size, absent, dtype=np.int8)
        index = table.index
        for name, st in self._dict.items():
            row = index.get(name)
            if row is not None:
                out[row] = int(st.code)
        for seg in self._segments:
            if isinstance(seg, _Batch) and seg.table is table:
                out[seg.rows] = seg.codes
            elif isinstance(seg, _Batch):
                for name, code in zip(seg.names.tolist(), seg.codes.tolist(), strict=True):
                    row = index.get(name)
                    if row is not None:
                        out[row] = code
            else:
                row = index.get(seg[0])
                if row is not None:
                    out[row] = int(seg[1].code)
        return out


def new_node_to_status() -> NodeToStatus:
    return NodeToStatus(cast(dict[str, Status], NodeStatusMap()))


@dataclass(slots=True)
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=new_node_to_status)
    #: plugins that rejected the pod (the queue requeues on their events)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_status(self, node: str, status: Status) -> None:
        self.node_to_status.statuses[node] = status
        self.add_plugin_status(status)

    def add_failed(
        self, table: NodeTable, rows: np.ndarray, verdicts: FilterVerdicts, idx: np.ndarray
    ) -> None:
        """Record failing nodes, as ``add_status`` would one by one: ``rows`` of
        ``table``, whose answers are ``verdicts`` at positions ``idx`` (same length)."""
        if not len(idx):
            return
        sel_rows = np.asarray(rows, dtype=np.int64)
        codes = verdicts.codes[idx]
        plugin_idx = verdicts.plugin_idx[idx]
        batch = _Batch(
            table.name_array()[sel_rows],
            sel_rows,
            table,
            codes,
            verdicts.reason_ids[idx],
            plugin_idx,
            verdicts.reasons,
            verdicts.plugin_names,
        )
        statuses = self.node_to_status.statuses
        if isinstance(statuses, NodeStatusMap):
            statuses.add_batch(batch)
        else:
            statuses.update(zip(batch.names.tolist(), batch.statuses(), strict=True))
        pairs = np.unique((plugin_idx.astype(np.int64) << 8) | codes.astype(np.int64))
        for pair in pairs.tolist():
            plugin = verdicts.plugin_names[pair >> 8]
            if not plugin:
                continue
            code = pair & 0xFF
            if code in _REJECTED:
                self.unschedulable_plugins.add(plugin)
            if code == Code.PENDING:
                self.pending_plugins.add(plugin)

    def add_plugin_status(self, status: Status) -> None:
        """upstream Diagnosis.AddPluginStatus: rejecting plugins (Pending included) are
        unschedulable plugins; Pending ones are pending plugins too."""
        if not status.plugin:
            return
        if status.is_rejected:
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)


def node_codes(node_to_status: NodeToStatus, table: NodeTable, absent: int) -> np.ndarray:
    """int8[table.size]: the Status code of each row of ``table`` in ``node_to_status``
    (``absent`` for rows it does not hold: the caller decides what absence means)."""
    statuses = node_to_status.statuses
    if isinstance(statuses, NodeStatusMap):
        return statuses.codes_for(table, absent)
    out = np.full(table.size, absent, dtype=np.int8)
    for name, st in statuses.items():
        row = table.index.get(name)
        if row is not None:
            out[row] = int(st.code)
    return out


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """upstream FitError.Error(): a sorted histogram of reasons, PreFilter's message
    instead when PreFilter rejected, then PostFilter's (preemption) message."""
    if num_all_nodes == 0:
        # upstream schedulePod returns ErrNoNodesAvailable, not a FitError (no PostFilter)
        return ERR_NO_NODES_AVAILABLE
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        msg += f" {diagnosis.pre_filter_msg}."
    else:
        statuses = diagnosis.node_to_status.statuses
        if isinstance(statuses, NodeStatusMap):
            reasons = statuses.reason_counts()
        else:
            reasons = Counter()
            for status in statuses.values():
                reasons.update(status.reasons)
        absent = diagnosis.node_to_status.absent_status
        recorded = len(statuses)
        if recorded < num_all_nodes and absent is not None:
            for reason in absent.reasons:
                reasons[reason] += num_all_nodes - recorded
        histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        # No period of its own: PostFilter messages end with one ("preemption: 0/3 nodes
        # are available: ... ." is itself a FitError message).
        msg += f" {diagnosis.post_filter_msg}"
    return msg


class FitError(Exception):
    """No node fits the pod; ``str()`` is the FailedScheduling event message."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__()

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)
