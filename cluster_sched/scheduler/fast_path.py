"""The compiled path of one attempt: the same decisions as ``algorithm``'s numpy path,
taken by the fused kernels (``cluster_sched.kernels``) when the pod and the profile allow.

What it does, in upstream's order:

1. PreFilter has run (by the caller). Filter: the other active Filter plugins give one
   verdict column over every node (their own code, vectorised, mostly memoised per
   node-table version); the kernel applies NodeResourcesFit and those verdicts over the
   window from ``next_start_node_index``, stopping at numFeasibleNodesToFind.
2. PreScore runs over the feasible nodes, as upstream. Score: if every active Score
   plugin is one the kernel computes (NodeResourcesFit, BalancedAllocation) or takes as
   a column (TaintToleration and NodeAffinity raw scores, normalised by the kernel;
   ImageLocality as is), the kernel scores the feasible nodes; otherwise the numpy
   Score/NormalizeScore run on the same feasible nodes.
3. Host selection is ``algorithm.select_host``: the same RNG draws.

It declines (the caller runs the numpy path, nothing having changed) whenever exactness
would need more than it models: a PreFilterResult narrowing the nodes, a nominated node
to try first, nominated pods anywhere (two-pass Filter), an active Filter plugin it does
not know, no feasible node (the FitError needs every plugin's reasons), or a score the
kernel finds out of range (the numpy path raises the framework's error).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.kernels import (
    STATUS_OK,
    VALUE_LIMIT,
    Evaluation,
    KernelProfile,
    NormalizedScore,
    PodQuery,
    PodRequests,
    evaluate_pod,
)
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names

__all__ = ["FastPath"]

#: Filter plugins whose verdicts the fast path can take as a column (in-tree, no
#: per-node errors, each node's verdict independent of which other nodes are evaluated:
#: the cross-node plugins read only the counts their PreFilter reduced cluster-wide).
COLUMN_FILTERS = frozenset(
    {
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
        names.NODE_PORTS,
        names.POD_TOPOLOGY_SPREAD,
        names.INTER_POD_AFFINITY,
    }
)
#: Rows whose other-plugin verdicts are computed before the kernel runs, at least (twice
#: numFeasibleNodesToFind otherwise): most windows end inside them.
MIN_MASKED_HEAD = 256
#: Distinct request shapes remembered (cleared when full: a cache, never a leak).
REQUESTS_CACHE_SIZE = 4096
#: Score plugins the kernel fuses, and those it takes as columns.
FUSED_SCORES = frozenset({names.NODE_RESOURCES_FIT, names.NODE_RESOURCES_BALANCED_ALLOCATION})
NORMALIZED_SCORES = {names.TAINT_TOLERATION: True, names.NODE_AFFINITY: False}
AS_IS_SCORES = frozenset({names.IMAGE_LOCALITY})


class FastPath:
    """Per-profile kernel inputs, built once; each step answers or declines."""

    def __init__(self) -> None:
        self._profiles: dict[int, KernelProfile | None] = {}
        #: (table id, node_version) -> whether every allocatable is below VALUE_LIMIT
        self._small_nodes: tuple[int, int, bool] = (0, -1, False)
        self._by_requests: dict[tuple[object, ...], PodRequests] = {}

    def _profile(self, fwk: Framework) -> KernelProfile | None:
        key = id(fwk)
        if key not in self._profiles:
            self._profiles[key] = KernelProfile.from_framework(fwk)
        return self._profiles[key]

    def find_feasible(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        nominated: Mapping[str, object] | None,
        to_find: int,
        start: int,
    ) -> tuple[np.ndarray, int, PodRequests] | None:
        """Filter over the window: (feasible rows in evaluation order, nodes evaluated,
        the pod's requests), or None to run the numpy path (nothing was changed)."""
        profile = self._profile(fwk)
        if (
            profile is None
            or pod.nominated_node_name
            or nominated
            or not fwk.score
            or fwk.handle.extenders
        ):
            return None
        active = [pl for pl in fwk.filter if pl.name not in state.skip_filter_plugins]
        others = [pl.name for pl in active if pl.name != names.NODE_RESOURCES_FIT]
        if any(name not in COLUMN_FILTERS for name in others):
            return None
        if not self._in_domain(table, pod):
            return None
        rows = table.order()
        n = len(rows)
        rotated = np.concatenate((rows[start:], rows[:start])) if start else rows
        requests = self._requests(pod, profile)
        if not others:
            ev = evaluate_pod(table, profile, PodQuery(requests), to_find, rotated)
        else:
            # The other plugins' verdicts for the head of the rotation (usually enough to
            # find to_find nodes), then for the rest only if the window runs past it.
            only = frozenset(others)
            mask = np.zeros(table.allocatable.shape[1], dtype=np.bool_)
            head = rotated[: min(n, max(2 * to_find, MIN_MASKED_HEAD))]
            mask[head] = fwk.run_filter(state, pod, NodeSlice(table, head), only=only).passed
            query = PodQuery(requests, masks=(mask,))
            ev = evaluate_pod(table, profile, query, to_find, head)
            if len(ev.feasible_rows) < to_find and len(head) < n:
                rest = rotated[len(head) :]
                mask[rest] = fwk.run_filter(state, pod, NodeSlice(table, rest), only=only).passed
                ev = evaluate_pod(table, profile, query, to_find, rotated)
        if len(ev.feasible_rows) == 0 or ev.status != STATUS_OK:
            return None
        return ev.feasible_rows, ev.evaluated, requests

    def score(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        requests: PodRequests,
        feasible: np.ndarray,
    ) -> Evaluation | None:
        """Weighted totals and best-score ties over ``feasible`` (PreScore done), or None
        for the numpy path."""
        profile = self._profile(fwk)
        assert profile is not None
        return self._kernel_scores(fwk, state, pod, table, profile, requests, feasible)

    def _requests(self, pod: Pod, profile: KernelProfile) -> PodRequests:
        """The resource plugins' PreFilter/PreScore state of ``pod``, shared by pods with
        the same requests (a Deployment's pods): it depends on nothing else, and sharing
        it lets the kernel reuse the packed vectors."""
        key = (
            id(profile),
            tuple(sorted(pod.requests.items())),
            pod.nonzero_cpu,
            pod.nonzero_memory,
        )
        hit = self._by_requests.get(key)
        if hit is None:
            if len(self._by_requests) >= REQUESTS_CACHE_SIZE:
                self._by_requests.clear()
            hit = self._by_requests[key] = PodRequests.of_pod(pod, profile)
        return hit

    def _in_domain(self, table: NodeTable, pod: Pod) -> bool:
        """Every value the kernel would read is below VALUE_LIMIT: allocatable (checked
        once per node-table version), the rows' requests (bounded by ``amount_bound``,
        the sum of each row's largest pod amounts) and the pod's own requests."""
        key, version, small = self._small_nodes
        if key != id(table) or version != table.node_version:
            small = bool(table.allocatable.max(initial=0) < VALUE_LIMIT)
            self._small_nodes = (id(table), table.node_version, small)
        biggest = max(pod.nonzero_cpu, pod.nonzero_memory, max(pod.requests.values(), default=0))
        return (
            small
            and biggest < VALUE_LIMIT
            and float(table.amount_bound.max(initial=0.0)) + biggest < VALUE_LIMIT
        )

    @staticmethod
    def _kernel_scores(
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        profile: KernelProfile,
        requests: PodRequests,
        feasible: np.ndarray,
    ) -> Evaluation | None:
        """The kernel's scoring of ``feasible``, or None when an active Score plugin is
        one it does not take (or a score came out of range)."""
        active = fwk.active_score_plugins(state)
        names_active = {pl.name for pl in active}
        if any(
            nm not in FUSED_SCORES and nm not in NORMALIZED_SCORES and nm not in AS_IS_SCORES
            for nm in names_active
        ):
            return None
        if requests.balanced is not None and (
            names.NODE_RESOURCES_BALANCED_ALLOCATION in state.skip_score_plugins
        ):
            return None
        cap = table.allocatable.shape[1]
        nodes = NodeSlice(table, feasible)
        normalized: list[NormalizedScore] = []
        extra: np.ndarray | None = None
        for pl in active:
            if pl.name in FUSED_SCORES:
                continue
            col = np.zeros(cap, dtype=np.int64)
            col[feasible] = np.asarray(pl.score(state, pod, nodes), dtype=np.int64)
            weight = fwk.score_weights.get(pl.name, 1)
            if pl.name in NORMALIZED_SCORES:
                normalized.append(NormalizedScore(col, NORMALIZED_SCORES[pl.name], weight))
            else:
                extra = col * weight if extra is None else extra + col * weight
        query = PodQuery(requests, start=0, normalized=tuple(normalized), extra=extra)
        ev = evaluate_pod(table, profile, query, len(feasible), feasible)
        if ev.status != STATUS_OK or len(ev.feasible_rows) != len(feasible):
            return None
        return ev
