"""A shard's window evaluated by the coordinator's compiled kernels (``kernels``).

The same fused kernel the compiled path runs on the replica (NodeResourcesFit Filter and
Score, BalancedAllocation, the best-score tie set), over the shard's rows of a window in
window order, with the other plugins as columns over every row of the shard, made once
per pod shape and node-table state (``fast_path`` does the same on the replica):

- Filter: the other active Filter plugins' verdicts, one bool column (only plugins whose
  verdict is the node's and the pod's own: no cross-node plugin active);
- Score: TaintToleration and NodeAffinity raw scores, normalised by the kernel over the
  rows it finds feasible (the shard's rows of the window: ``reduce`` checks that
  every shard's maximum is the same), ImageLocality pre-weighted.

A pod shape here is what those columns read of the pod (containers, tolerations,
affinity, node selector, node name), the skips of its PreFilter and PreScore, and the
cluster-wide facts ImageLocality reads. ``evaluate`` returns None where the kernel does
not model the pod (the caller runs the plugins' numpy path, which gives the same
answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.state_codec import encode_value
from cluster_sched.kernels import (
    VALUE_LIMIT,
    Evaluation,
    KernelProfile,
    KernelProfiles,
    NormalizedScore,
    PodQuery,
    PodRequests,
    evaluate_pod,
)
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names
from cluster_sched.scheduler.compiled_scores import (
    AS_IS_SCORES,
    FUSED_SCORES,
    NORMALIZED_SCORES,
    score_columns,
)

__all__ = ["PreparedShape", "ShardKernels"]

#: Filter plugins taken as a verdict column (their verdicts are the node's and pod's own)
COLUMN_FILTERS = frozenset(
    {names.NODE_UNSCHEDULABLE, names.NODE_NAME, names.TAINT_TOLERATION, names.NODE_AFFINITY}
)
#: shapes remembered (cleared when full: a cache, never a leak)
SHAPES = 256
_SPEC_FIELDS = ("containers", "initContainers", "tolerations", "affinity", "nodeSelector")


@dataclass(slots=True)
class _Shape:
    mask: np.ndarray | None
    normalized: tuple[NormalizedScore, ...]
    extra: np.ndarray | None
    requests: PodRequests


@dataclass(frozen=True, slots=True)
class PreparedShape:
    """A pod shape's kernel inputs over one node-table state (``ShardKernels.prepare``)."""

    profile: KernelProfile
    shape: _Shape
    #: the normalised plugins' names, in ``shape.normalized``'s order
    names: tuple[str, ...]
    #: (id(table), node_version) the columns were made for
    version: tuple[int, int]


class ShardKernels:
    """Per-profile kernel inputs and per-shape columns of one shard's table."""

    def __init__(self) -> None:
        self._profiles = KernelProfiles()
        self._shapes: dict[tuple[Any, ...], _Shape] = {}
        self._version: tuple[int, int] = (-1, -1)
        self._small = False

    def evaluate(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        doc: Any,
        facts: Any,
        table: NodeTable,
        rows: np.ndarray,
        normalize: bool = True,
    ) -> tuple[Evaluation, dict[str, np.ndarray]] | None:
        """The kernel's evaluation of ``rows`` (every one, in order; PreScore done) and
        the raw normalised-plugin columns, or None for the numpy path. ``normalize``
        False: the totals leave the normalised plugins out (the caller adds them under
        maxima of its own)."""
        prepared = self.prepare(fwk, state, pod, doc, facts, table)
        return None if prepared is None else self.run(prepared, table, rows, normalize)

    def prepare(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        doc: Any,
        facts: Any,
        table: NodeTable,
    ) -> PreparedShape | None:
        """The kernel's inputs for ``pod``'s shape over ``table`` (PreScore done), or None
        where the kernel does not model the pod: every pod of the shape may then be
        evaluated by ``run`` alone (``reduce``'s compact asks)."""
        profile = self._profiles.of(fwk)
        if profile is None or not isinstance(doc, dict):
            return None
        version = (id(table), table.node_version)
        if version != self._version:
            self._shapes.clear()
            self._version = version
            self._small = bool(table.allocatable.max(initial=0) < VALUE_LIMIT)
        spec = doc.get("spec") or {}
        key = (
            id(fwk),
            encode_value([spec.get(f) for f in _SPEC_FIELDS]),
            # the amounts the resource plugins read: containers plus spec.overhead and
            # pod-level resources, which the spec fields above do not all carry
            tuple(sorted(pod.requests.items())),
            pod.nonzero_cpu,
            pod.nonzero_memory,
            spec.get("nodeName"),
            frozenset(state.skip_filter_plugins),
            frozenset(state.skip_score_plugins),
            encode_value(facts),
        )
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shape(fwk, state, pod, table, profile)
            if shape is None:
                return None
            if len(self._shapes) >= SHAPES:
                self._shapes.clear()
            self._shapes[key] = shape
        if not self._small or not self._in_domain(table, pod):
            return None
        return PreparedShape(profile, shape, tuple(self._names(fwk, state)), version)

    @staticmethod
    def run(
        prepared: PreparedShape, table: NodeTable, rows: np.ndarray, normalize: bool = True
    ) -> tuple[Evaluation, dict[str, np.ndarray]]:
        """``evaluate`` of ``rows`` for a pod of ``prepared``'s shape (the same node-table
        state: ``prepared.version``)."""
        if prepared.version != (id(table), table.node_version):
            raise ValueError("a prepared shape of another node-table state")
        shape = prepared.shape
        query = PodQuery(
            shape.requests,
            start=0,
            masks=() if shape.mask is None else (shape.mask,),
            normalized=shape.normalized if normalize else (),
            extra=shape.extra,
            stable=True,
        )
        ev = evaluate_pod(table, prepared.profile, query, len(rows), rows)
        return ev, {name: n.raw for name, n in zip(prepared.names, shape.normalized, strict=True)}

    @staticmethod
    def _names(fwk: Framework, state: CycleState) -> list[str]:
        return [pl.name for pl in fwk.active_score_plugins(state) if pl.name in NORMALIZED_SCORES]

    def _shape(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        profile: KernelProfile,
    ) -> _Shape | None:
        active = [pl.name for pl in fwk.filter if pl.name not in state.skip_filter_plugins]
        others = [n for n in active if n != names.NODE_RESOURCES_FIT]
        if any(n not in COLUMN_FILTERS for n in others):
            return None
        scoring = fwk.active_score_plugins(state)
        if any(
            pl.name not in FUSED_SCORES
            and pl.name not in NORMALIZED_SCORES
            and pl.name not in AS_IS_SCORES
            for pl in scoring
        ):
            return None
        requests = PodRequests.of_pod(pod, profile)
        if (
            requests.balanced is not None
            and names.NODE_RESOURCES_BALANCED_ALLOCATION in state.skip_score_plugins
        ):
            return None
        cap = table.allocatable.shape[1]
        every = table.order()
        nodes = NodeSlice(table, every)
        mask = None
        if others:
            mask = np.zeros(cap, dtype=np.bool_)
            mask[every] = fwk.run_filter(state, pod, nodes, only=frozenset(others)).passed
        normalized, extra = score_columns(fwk, state, pod, table, scoring, nodes, every)
        return _Shape(mask, normalized, extra, requests)

    @staticmethod
    def _in_domain(table: NodeTable, pod: Pod) -> bool:
        """The pod's and the rows' amounts are below VALUE_LIMIT (allocatable is checked
        once per node-table state; ``fast_path._in_domain`` has the reasoning)."""
        biggest = max(pod.nonzero_cpu, pod.nonzero_memory, max(pod.requests.values(), default=0))
        return biggest < VALUE_LIMIT and table.amount_bound_ceiling + biggest < VALUE_LIMIT
