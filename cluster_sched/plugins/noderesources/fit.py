"""NodeResourcesFit: the node must have room for the pod's requests and one more pod;
the score follows the configured strategy (LeastAllocated by default)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Node, Pod
from cluster_sched.config.plugin_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from cluster_sched.errors import PluginError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.names import NODE_RESOURCES_FIT
from cluster_sched.plugins.noderesources import scorers
from cluster_sched.plugins.noderesources.resources import (
    allocatable_and_requested,
    is_extended_resource,
    pod_request_list,
)

NAME = NODE_RESOURCES_FIT
STATE_KEY = "PreFilter" + NAME
SCORE_STATE_KEY = "PreScore" + NAME
TOO_MANY_PODS = "Too many pods"


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    #: (resource name, amount) in check order: cpu, memory, ephemeral-storage, then scalars by name
    requests: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: np.ndarray


class Fit:
    name = NAME

    def __init__(self, args: NodeResourcesFitArgs) -> None:
        self.args = args
        self.resources = args.scoring_strategy.resources
        self._scorer = strategy_scorer(args.scoring_strategy)
        self._ignored = frozenset(args.ignored_resources)
        self._ignored_groups = frozenset(args.ignored_resource_groups)

    # -- filter

    def _checked_requests(self, pod: Pod) -> tuple[tuple[str, int], ...]:
        base = [(r, pod.requests.get(r, 0)) for r in (CPU, MEMORY, EPHEMERAL_STORAGE)]
        scalars = []
        for name in sorted(pod.requests):
            if name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) or pod.requests[name] == 0:
                continue
            if is_extended_resource(name) and (
                name in self._ignored or name.split("/", 1)[0] in self._ignored_groups
            ):
                continue
            scalars.append((name, pod.requests[name]))
        return tuple(base + scalars)

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(STATE_KEY, _PreFilterState(self._checked_requests(pod)))
        return None, SUCCESS

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        return fit_verdicts(nodes, self.filter_requests(state, pod))

    def filter_requests(self, state: CycleState, pod: Pod) -> tuple[tuple[str, int], ...]:
        """The (resource, amount) list Filter checks for ``pod`` in this cycle (PreFilter's,
        or computed when PreFilter did not run), for callers that simulate Filter."""
        s: _PreFilterState | None = state.get(STATE_KEY)
        return s.requests if s is not None else self._checked_requests(pod)

    # -- score

    def pre_score(self, state: CycleState, pod: Pod, snapshot: Any, feasible: Any) -> Status:
        state.write(
            SCORE_STATE_KEY, _PreScoreState(pod_request_list(pod, self.resources, nonzero=True))
        )
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        s: _PreScoreState | None = state.get(SCORE_STATE_KEY)
        pod_requests = (
            s.pod_requests if s is not None else pod_request_list(pod, self.resources, nonzero=True)
        )
        return resource_scores(nodes, self.resources, self._scorer, pod_requests)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Pod deletes and scale-downs (InPlacePodVerticalScaling, GA) free resources;
        a node added or given more allocatable may fit the pod (upstream, hints on)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
                ),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                ),
                self.is_schedulable_after_node_change,
            ),
        )

    def is_schedulable_after_pod_event(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """A deleted pod frees resources if it was bound (or nominated); a bound pod's
        scale-down helps if it lowered a resource this pod requests."""
        if new is None:
            if old is not None and not old.node_name and not old.nominated_node_name:
                return QueueingHint.QUEUE_SKIP  # an unscheduled pod held nothing
            return QueueingHint.QUEUE
        if not new.node_name or old is None:
            return QueueingHint.QUEUE_SKIP if not new.node_name else QueueingHint.QUEUE
        for name, amount in self._checked_requests(pod):
            if amount > 0 and old.requests.get(name, 0) > new.requests.get(name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        """Skip a node that could not hold the pod even empty, and an update that raised
        no allocatable the pod requests."""
        if new is None:
            return QueueingHint.QUEUE
        if new.allocatable.get(PODS, 0) < 1 or any(
            amount > new.allocatable.get(name, 0) for name, amount in self._checked_requests(pod)
        ):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        for name, amount in self._checked_requests(pod):
            if amount > 0 and new.allocatable.get(name, 0) > old.allocatable.get(name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def fit_verdicts(nodes: NodeSlice, requests: tuple[tuple[str, int], ...]) -> NodeVerdicts:
    """The Filter verdicts for ``requests`` (PreFilter's check list): room for one more pod
    and, per requested resource, free capacity (allocatable - requested) >= the request.
    A resource the table has never seen has no capacity anywhere.

    A function, not only the method, so the compiled kernels' reference
    (``cluster_sched.kernels.reference``) runs exactly this code.
    """
    table, rows = nodes.table, nodes.rows
    checked = [(name, amount) for name, amount in requests if amount > 0]
    room = nodes.take(table.allowed_pods) - nodes.take(table.pod_count)
    cols = [table.resources.get(name) for name, _ in checked]
    if all(c >= 0 for c in cols):
        # Fast path: one gathered block of free capacity against the request vector.
        ok = room >= 1
        for (_, amount), col in zip(checked, cols, strict=True):
            ok &= nodes.take(table.free[col]) >= amount
        if ok.all():
            return NodeVerdicts.passing(len(rows))
    return _failures(table, rows, room, checked)


def _failures(
    table: NodeTable, rows: np.ndarray, room: np.ndarray, checked: list[tuple[str, int]]
) -> NodeVerdicts:
    """Per-node reasons, in upstream's order: pods, cpu, memory, ephemeral, scalars."""
    k = len(rows)
    allocs: list[np.ndarray] = []
    frees: list[np.ndarray] = []
    for name, _ in checked:
        col = table.resources.get(name)
        alloc = table.allocatable[col][rows] if col >= 0 else np.zeros(k, dtype=np.int64)
        allocs.append(alloc)
        frees.append(table.free[col][rows] if col >= 0 else alloc)
    return fit_failures(room, allocs, frees, checked)


def fit_failures(
    room: np.ndarray,
    allocs: Sequence[np.ndarray],
    frees: Sequence[np.ndarray],
    checked: Sequence[tuple[str, int]],
) -> NodeVerdicts:
    """The Filter verdicts of ``k`` nodes given as arrays: ``room`` int64[k] (allowed
    pods minus pods), and per checked (resource, amount > 0) its allocatable and free
    int64[k]. Preemption's dry run simulates removals on these arrays, not on a table."""
    k = len(room)
    reasons = [TOO_MANY_PODS]
    insufficient = [room < 1]
    unresolvable = [np.zeros(k, dtype=bool)]
    for (name, amount), alloc, free in zip(checked, allocs, frees, strict=True):
        reasons.append(f"Insufficient {name}")
        insufficient.append(amount > free)
        unresolvable.append(amount > alloc)
    bits = np.stack(insufficient, axis=1)
    failing = bits.any(axis=1)
    if not failing.any():
        return NodeVerdicts.passing(k)
    # One reason tuple per distinct combination of insufficient resources.
    weights = 1 << np.arange(bits.shape[1], dtype=np.int64)
    combo = (bits.astype(np.int64) * weights).sum(axis=1)
    uniq, inverse = np.unique(combo[failing], return_inverse=True)
    reason_list = [
        tuple(r for j, r in enumerate(reasons) if (int(c) >> j) & 1) for c in uniq.tolist()
    ]
    unres = np.asarray((np.stack(unresolvable, axis=1) & bits).any(axis=1))
    codes = np.zeros(k, dtype=np.int8)
    codes[failing] = np.where(
        unres[failing], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE
    )
    reason_ids = np.zeros(k, dtype=np.int32)
    reason_ids[failing] = inverse
    return NodeVerdicts(codes, reason_ids, reason_list)


def resource_scores(
    nodes: NodeSlice,
    resources: Sequence[ResourceSpec],
    scorer: scorers.Scorer,
    pod_requests: np.ndarray,
) -> np.ndarray:
    """int64[k]: Score of ``nodes`` for PreScore's ``pod_requests`` (int64[m], non-zero
    cpu/memory defaults applied), cpu/memory counted with the non-zero accounting."""
    alloc, req = allocatable_and_requested(nodes, resources, pod_requests, use_requested=False)
    return scorer(alloc, req)


def strategy_scorer(strategy: ScoringStrategy) -> scorers.Scorer:
    """The scorer of a scoring strategy (one place, shared with the compiled kernels)."""
    if strategy.type == LEAST_ALLOCATED:
        return scorers.least_allocated(strategy.resources)
    if strategy.type == MOST_ALLOCATED:
        return scorers.most_allocated(strategy.resources)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        assert strategy.requested_to_capacity_ratio is not None
        return scorers.requested_to_capacity_ratio(
            strategy.resources, strategy.requested_to_capacity_ratio.shape
        )
    # the config layer validates this; a plugin built by hand may not
    raise PluginError(f"{NAME}: scoring strategy {strategy.type!r} is not supported")


def new(args: NodeResourcesFitArgs | None, handle: Handle) -> Fit:
    return Fit(args or NodeResourcesFitArgs())
