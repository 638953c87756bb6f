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
from dataclasses import dataclass, field

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.kernels import (
    STATUS_OK,
    VALUE_LIMIT,
    Evaluation,
    KernelProfile,
    KernelProfiles,
    NormalizedScore,
    PodQuery,
    PodRequests,
    evaluate_pod,
    fits_row,
)
from cluster_sched.kernels.affinity import AffinityRun, affinity_run
from cluster_sched.kernels.spread import SpreadRun, spread_run
from cluster_sched.nodetable.overflow import BOUND_LIMIT, pod_amount
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names
from cluster_sched.plugins.interpodaffinity import filtering as ipa_filtering
from cluster_sched.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY as IPA_KEY
from cluster_sched.plugins.podtopologyspread import filtering as spread_filtering
from cluster_sched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY as SPREAD_KEY
from cluster_sched.scheduler.carried_masks import CARRIED_FILTERS, affinity_mask, spread_mask
from cluster_sched.scheduler.compiled_scores import (
    AS_IS_SCORES,
    FUSED_SCORES,
    NORMALIZED_SCORES,
    score_columns,
)
from cluster_sched.scheduler.pre_cycle import PreCycleReuse

__all__ = ["FastPath", "Found"]

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
#: Filter plugins whose verdicts depend on the pods placed (they read PreFilter's
#: cluster-wide counts or the node's pods): no shape columns while one is active.
CROSS_NODE_FILTERS = frozenset(
    {names.NODE_PORTS, names.POD_TOPOLOGY_SPREAD, names.INTER_POD_AFFINITY}
)
#: Pod shapes remembered (cleared when full).
SHAPES_CACHE_SIZE = 1024
#: Score plugins scored per pod over the feasible rows (their NormalizeScore has its own
#: min/max rules, their raw scores move with the counts), added to the kernel's totals.
PER_POD_SCORES = frozenset({names.POD_TOPOLOGY_SPREAD})


@dataclass(slots=True)
class _Shape:
    """The other plugins' columns for pods of one shape (what the column plugins read:
    containers, tolerations, affinity, node selector, node name, all shared objects of
    the parsed spec) on one node-table state. Every column plugin's verdict and raw
    score depends on the node and on those pod fields alone, so the columns are
    computed once over every row and reused by the shape's later pods: one kernel call
    per pod instead of per-plugin calls plus two kernel calls."""

    refs: tuple[object, ...]
    table_id: int
    node_version: int
    #: Filter plugins PreFilter skipped for the first pod; a later pod with another set
    #: (a cross-node plugin became active) takes the general path.
    skip_filter: frozenset[str]
    #: combined verdict of the other Filter plugins by row (None: Fit alone filters)
    mask: np.ndarray | None
    #: active Score plugins and their columns, once the first pod has scored
    score_plugins: frozenset[str] | None = None
    normalized: tuple[NormalizedScore, ...] = ()
    extra: np.ndarray | None = None
    #: PodTopologySpread is active: ``mask`` leaves it out, ``spread_masks`` holds
    #: ``mask`` AND its verdict by pattern of passing domains
    spread: bool = False
    spread_masks: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict)
    #: InterPodAffinity is active: ``mask`` leaves it out (``carried_masks``), its
    #: verdicts kept by pattern in ``affinity_masks``
    affinity: bool = False
    affinity_masks: dict[tuple[object, ...], tuple[object, np.ndarray]] = field(
        default_factory=dict
    )


@dataclass(slots=True)
class Found:
    """find_feasible's answer: feasible rows in evaluation order, nodes evaluated, the
    pod's requests, and (shape path) the kernel's scoring of those rows."""

    rows: np.ndarray
    evaluated: int
    requests: PodRequests
    shape: _Shape | None = None
    scored: Evaluation | None = None


def _refs(pod: Pod) -> tuple[object, ...]:
    return (pod.containers, pod.tolerations, pod.affinity, pod.node_selector, pod.node_name)


class FastPath:
    """Per-profile kernel inputs, built once; each step answers or declines."""

    def __init__(self, *, share_pre_cycle: bool = False) -> None:
        #: PreFilter/PreScore shared by pods of one shape (off when cycles are traced)
        self.pre_cycle = PreCycleReuse() if share_pre_cycle else None
        self._profiles = KernelProfiles()
        #: (table id, node_version) -> whether every allocatable is below VALUE_LIMIT
        self._small_nodes: tuple[int, int, bool] = (0, -1, False)
        self._by_requests: dict[tuple[object, ...], PodRequests] = {}
        self._shapes: dict[tuple[int, ...], _Shape] = {}
        #: pods served by a shape's columns (one kernel call) / by the general path
        self.shape_hits = 0
        self.shape_misses = 0
        #: general-path windows that ran past the masked head (tables over
        #: MIN_MASKED_HEAD nodes): a path counter the exactness tests assert on
        self.head_overruns = 0
        #: kernel calls that decided a run of pods (``whole_batch``) and their pods
        self.whole_batch_runs = 0
        self.whole_batch_pods = 0

    def counters(self) -> dict[str, int]:
        """How often a pod's attempt reused its shape's columns (one kernel call)."""
        out = {
            "shape_hits": self.shape_hits,
            "shape_misses": self.shape_misses,
            "head_overruns": self.head_overruns,
            "whole_batch_runs": self.whole_batch_runs,
            "whole_batch_pods": self.whole_batch_pods,
        }
        if self.pre_cycle is not None:
            out.update(self.pre_cycle.counters())
        return out

    def find_feasible(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        nominated: Mapping[str, object] | None,
        to_find: int,
        start: int,
    ) -> Found | None:
        """Filter over the window, or None to run the numpy path (nothing was changed)."""
        if pod.nominated_node_name or nominated:
            return None
        profile, others = self._admits(fwk, state, pod, table)
        if profile is None:
            return None
        rows = table.order()
        requests = self._requests(pod, profile)
        shape = self._shape(fwk, state, pod, table, others)
        mask = None if shape is None else shape.mask
        if shape is not None and (shape.spread or shape.affinity):
            mask = self._carried_mask(fwk, state, pod, table, shape)
            if mask is None:
                return None
        if shape is not None and shape.score_plugins is not None:
            query = PodQuery(
                requests,
                start=start,
                masks=() if mask is None else (mask,),
                normalized=shape.normalized,
                extra=shape.extra,
                stable=True,
            )
            ev = evaluate_pod(table, profile, query, to_find, rows)
            if len(ev.feasible_rows) == 0 or ev.status != STATUS_OK:
                return None
            return Found(ev.feasible_rows, ev.evaluated, requests, shape, ev)
        n = len(rows)
        if shape is not None:
            masks = () if mask is None else (mask,)
            ev = evaluate_pod(table, profile, PodQuery(requests, start, masks), to_find, rows)
        elif not others:
            ev = evaluate_pod(table, profile, PodQuery(requests, start), to_find, rows)
        else:
            # The other plugins' verdicts for the head of the rotation (usually enough to
            # find to_find nodes), then for the rest only if the window runs past it.
            rotated = np.concatenate((rows[start:], rows[:start])) if start else rows
            only = frozenset(others)
            mask = np.zeros(table.allocatable.shape[1], dtype=np.bool_)
            head = rotated[: min(n, max(2 * to_find, MIN_MASKED_HEAD))]
            mask[head] = fwk.run_filter(state, pod, NodeSlice(table, head), only=only).passed
            query = PodQuery(requests, masks=(mask,))
            ev = evaluate_pod(table, profile, query, to_find, head)
            if len(ev.feasible_rows) < to_find and len(head) < n:
                self.head_overruns += 1
                rest = rotated[len(head) :]
                mask[rest] = fwk.run_filter(state, pod, NodeSlice(table, rest), only=only).passed
                ev = evaluate_pod(table, profile, query, to_find, rotated)
        if len(ev.feasible_rows) == 0 or ev.status != STATUS_OK:
            return None
        return Found(ev.feasible_rows, ev.evaluated, requests, shape)

    def _admits(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable
    ) -> tuple[KernelProfile | None, list[str]]:
        """The kernel profile and the other active Filter plugins when the compiled path
        may answer for ``pod`` (every Filter a column plugin, values in the kernel's
        domain); (None, []) to run the numpy path."""
        profile = self._profiles.of(fwk)
        if profile is None or not fwk.score or fwk.handle.extenders:
            return None, []
        active = [pl for pl in fwk.filter if pl.name not in state.skip_filter_plugins]
        others = [pl.name for pl in active if pl.name != names.NODE_RESOURCES_FIT]
        if any(name not in COLUMN_FILTERS for name in others):
            return None, []
        if not self._in_domain(table, pod):
            return None, []
        return profile, others

    def run_query(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        skip_score: frozenset[str],
        count: int,
    ) -> tuple[KernelProfile, PodQuery, SpreadRun | None, AffinityRun | None] | None:
        """The kernel profile, query (start 0), PodTopologySpread and InterPodAffinity
        Filter (None: not active) of ``count`` pods of ``pod``'s shape, when
        ``kernels.run`` may decide them in one call: the shape path holds with its
        scored columns, no plugin scores per pod (PodTopologySpread's Score:
        ScheduleAnyway constraints; InterPodAffinity's: ``skip_score`` must hold it),
        the carried Filters are the kernel's (``kernels.spread``, ``kernels.affinity``,
        from ``state``: the first pod's counts), and the values stay in the kernel's
        domain after ``count`` assumes. None otherwise."""
        profile, others = self._admits(fwk, state, pod, table)
        if profile is None:
            return None
        amount = pod_amount(pod)
        ceiling = table.amount_bound_ceiling + count * amount + amount
        if ceiling >= VALUE_LIMIT or ceiling >= BOUND_LIMIT:
            return None
        shape = self._shape(fwk, state, pod, table, others)
        if shape is None or shape.score_plugins is None:
            return None
        active = frozenset(pl.name for pl in fwk.score if pl.name not in skip_score)
        if active & PER_POD_SCORES or active != shape.score_plugins:
            return None
        spread = None
        if shape.spread:
            s = state.get(SPREAD_KEY)
            if not isinstance(s, spread_filtering.PreFilterState):
                return None
            spread = spread_run(s, pod, table)
            if spread is None:
                return None
        affinity = None
        if shape.affinity:
            a = state.get(IPA_KEY)
            if not isinstance(a, ipa_filtering.PreFilterState):
                return None
            affinity = affinity_run(a, pod, table)
        query = PodQuery(
            self._requests(pod, profile),
            masks=() if shape.mask is None else (shape.mask,),
            normalized=shape.normalized,
            extra=shape.extra,
            stable=True,
        )
        return profile, query, spread, affinity

    def row_passes(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, row: int
    ) -> bool | None:
        """Whether every active Filter plugin passes ``pod`` on ``row`` (no nominated
        pods: the caller's to check), from the shape's verdict column and the kernel's
        NodeResourcesFit; None to run the plugins instead. OpportunisticBatching's two
        one-node checks (the last chosen node, the hint) ask this: through the plugins
        they cost more than the compiled attempt they save (issue 26, finding 4)."""
        profile, others = self._admits(fwk, state, pod, table)
        if profile is None:
            return None
        shape = self._shape(fwk, state, pod, table, others)
        if shape is None:
            return None
        mask = self._carried_mask(fwk, state, pod, table, shape)
        if mask is None and (shape.spread or shape.affinity):
            return None
        if mask is not None and not mask[row]:
            return False
        return fits_row(table, profile, self._requests(pod, profile), row)

    def _shape(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, others: list[str]
    ) -> _Shape | None:
        """The shape entry of ``pod`` on this table state, made on first sight (its
        verdict column over every row); None when the other filters include a cross-node
        plugin (its verdicts move with every assumed pod) other than PodTopologySpread
        and InterPodAffinity, whose verdicts ``_carried_mask`` applies per pod."""
        spread = names.POD_TOPOLOGY_SPREAD in others
        affinity = names.INTER_POD_AFFINITY in others
        others = [name for name in others if name not in CARRIED_FILTERS]
        if any(name in CROSS_NODE_FILTERS for name in others):
            self.shape_misses += 1
            return None
        refs = _refs(pod)
        key = (id(fwk), id(table), *map(id, refs))
        skip = frozenset(state.skip_filter_plugins)
        hit = self._shapes.get(key)
        if (
            hit is not None
            and hit.node_version == table.node_version
            and hit.skip_filter == skip
            and all(a is b for a, b in zip(hit.refs, refs, strict=True))
        ):
            self.shape_hits += 1
            return hit
        self.shape_misses += 1
        mask: np.ndarray | None = None
        if others:
            rows = table.order()
            mask = np.zeros(table.allocatable.shape[1], dtype=np.bool_)
            verdicts = fwk.run_filter(state, pod, NodeSlice(table, rows), only=frozenset(others))
            mask[rows] = verdicts.passed
        if len(self._shapes) >= SHAPES_CACHE_SIZE:
            self._shapes.clear()
        shape = _Shape(
            refs, id(table), table.node_version, skip, mask, spread=spread, affinity=affinity
        )
        self._shapes[key] = shape
        return shape

    def _carried_mask(
        self, fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, shape: _Shape
    ) -> np.ndarray | None:
        """The shape's column AND the carried cross-node Filters' verdicts for this pod
        (``carried_masks``); None to decline."""
        mask = shape.mask
        if shape.spread:
            mask = spread_mask(state, table, mask, shape.spread_masks)
            if mask is None:
                return None
        if shape.affinity:
            mask = affinity_mask(fwk, state, pod, table, mask, shape.affinity_masks)
        return mask

    def score(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        found: Found,
    ) -> Evaluation | None:
        """Weighted totals and best-score ties over ``found.rows`` (PreScore done), or None
        for the numpy path."""
        profile = self._profiles.of(fwk)
        assert profile is not None
        active = fwk.active_score_plugins(state)
        per_pod = [pl for pl in active if pl.name in PER_POD_SCORES]
        active = [pl for pl in active if pl.name not in PER_POD_SCORES]
        active_names = frozenset(pl.name for pl in active)
        shape = found.shape
        if found.scored is not None and shape is not None and shape.score_plugins == active_names:
            return self._add_per_pod(fwk, state, pod, table, found.scored, per_pod)
        if not self._kernel_can_score(state, found.requests, active_names):
            return None
        nodes = NodeSlice(table, found.rows)
        cover = found.rows
        if shape is not None and shape.score_plugins is None:
            # first pod of the shape: its columns over every row, kept for the next ones
            cover = table.order()
            nodes = NodeSlice(table, cover)
        normalized, extra = score_columns(fwk, state, pod, table, active, nodes, cover)
        if shape is not None and shape.score_plugins is None:
            shape.score_plugins, shape.normalized, shape.extra = active_names, normalized, extra
        query = PodQuery(found.requests, start=0, normalized=normalized, extra=extra)
        ev = evaluate_pod(table, profile, query, len(found.rows), found.rows)
        if ev.status != STATUS_OK or len(ev.feasible_rows) != len(found.rows):
            return None
        return self._add_per_pod(fwk, state, pod, table, ev, per_pod)

    @staticmethod
    def _add_per_pod(
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        ev: Evaluation,
        plugins: list,  # type: ignore[type-arg]
    ) -> Evaluation | None:
        """``ev`` plus the weighted normalised scores of the plugins normalising with their
        own rules (PodTopologySpread), computed by the plugin over the feasible rows in
        ``ev``'s order (the order its PreScore saw); None (the numpy path, which raises
        the framework's error) when one leaves [0, 100]."""
        if not plugins or len(ev.feasible_rows) < 2:
            return ev
        nodes = NodeSlice(table, ev.feasible_rows)
        add = np.zeros(len(ev.feasible_rows), dtype=np.int64)
        for pl in plugins:
            raw = np.asarray(pl.score(state, pod, nodes), dtype=np.int64)
            norm = np.asarray(pl.normalize_score(state, pod, raw), dtype=np.int64)
            if norm.max() > MAX_NODE_SCORE or norm.min() < MIN_NODE_SCORE:
                return None
            add += norm * fwk.score_weights.get(pl.name, 1)
        return ev.add_scores(add)

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
        the sum of each row's largest pod amounts, through its running ceiling: a max
        over every row per pod cost 0.2 ms at 1M nodes) and the pod's own requests."""
        key, version, small = self._small_nodes
        if key != id(table) or version != table.node_version:
            small = bool(table.allocatable.max(initial=0) < VALUE_LIMIT)
            self._small_nodes = (id(table), table.node_version, small)
        biggest = max(pod.nonzero_cpu, pod.nonzero_memory, max(pod.requests.values(), default=0))
        return (
            small and biggest < VALUE_LIMIT and table.amount_bound_ceiling + biggest < VALUE_LIMIT
        )

    @staticmethod
    def _kernel_can_score(
        state: CycleState, requests: PodRequests, active_names: frozenset[str]
    ) -> bool:
        """Every active Score plugin is one the kernel fuses or takes as a column."""
        if any(
            nm not in FUSED_SCORES and nm not in NORMALIZED_SCORES and nm not in AS_IS_SCORES
            for nm in active_names
        ):
            return False
        return not (
            requests.balanced is not None
            and names.NODE_RESOURCES_BALANCED_ALLOCATION in state.skip_score_plugins
        )
