"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score.

Pods without constraints get the default ones (``defaultingType: System``: hostname
maxSkew 3 and zone maxSkew 5, ScheduleAnyway; ``List``: the args' defaultConstraints)
when a Service / ReplicationController / ReplicaSet / StatefulSet in the snapshot
(``cache.controllers``) selects them. PreFilter and PreScore map over the snapshot's
tables and reduce; Filter and Score read only the reduced state and the shard's columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cluster_sched.api.objects import Node, Pod, WorkloadController
from cluster_sched.config.plugin_args import SYSTEM_DEFAULTING, PodTopologySpreadArgs
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
from cluster_sched.framework.status import SUCCESS, Status, error, skip
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import DomainCounts, feasible_rows, tables_of
from cluster_sched.plugins.names import POD_TOPOLOGY_SPREAD
from cluster_sched.plugins.podtopologyspread import filtering, scoring
from cluster_sched.plugins.podtopologyspread.constraints import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    Constraint,
    pod_constraints,
    selector_matches,
)
from cluster_sched.plugins.podtopologyspread.filtering import PreFilterState
from cluster_sched.plugins.podtopologyspread.incremental import SpreadPlans
from cluster_sched.plugins.podtopologyspread.score_plans import ScorePlans
from cluster_sched.plugins.podtopologyspread.scoring import PreScoreState

NAME = POD_TOPOLOGY_SPREAD
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_CONSTRAINTS_NOT_MATCH = filtering.ERR_CONSTRAINTS_NOT_MATCH
ERR_REASON_NODE_LABEL_NOT_MATCH = filtering.ERR_NODE_LABEL_NOT_MATCH
#: Parsed own constraints remembered (cleared when full).
OWN_CACHE_SIZE = 1024


def _controllers(snapshot: Any) -> list[WorkloadController]:
    ctrls = getattr(snapshot, "controllers", None) or {}
    return list(ctrls.values())


class PodTopologySpread:
    name = NAME

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        self.args = args
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = args.constraints
        self._handle = handle
        #: (id(spec constraints), action) -> (them, the pod's labels, parsed constraints)
        self._own: dict[tuple[int, str], tuple[object, dict[str, str], tuple[Constraint, ...]]]
        self._own = {}
        #: PreFilter's node-derived part per table state and pod inputs (``incremental``)
        self._plans = SpreadPlans()
        #: PreScore's node-derived part likewise (``score_plans``)
        self._score_plans = ScorePlans()
        #: action -> (snapshot, objects_version, namespace, labels, owner references,
        #: the default constraints they gave)
        self._last_default: dict[str, tuple[Any, ...]] = {}
        self._last_match: tuple[tuple[Constraint, ...], dict[str, str], tuple[bool, ...]] | None
        self._last_match = None

    def constraints(self, pod: Pod, action: str, snapshot: Any) -> tuple[Constraint, ...]:
        """The pod's constraints for ``action`` (its own, else the defaults that apply).
        Controllers are only consulted when defaults with that action exist. A pod's own
        constraints depend on its spec's constraints and labels alone: pods of one spec
        get the same tuple (later caches key on its identity)."""
        own = pod.topology_spread_constraints
        if not own:
            if not any(c.when_unsatisfiable == action for c in self.default_constraints):
                return ()
            return self._default_constraints(pod, action, snapshot)
        hit = self._own.get((id(own), action))
        if hit is not None and hit[0] is own and hit[1] == pod.meta.labels:
            return hit[2]
        cs = pod_constraints(pod, action, self.default_constraints, ())
        if len(self._own) >= OWN_CACHE_SIZE:
            self._own.clear()
        self._own[(id(own), action)] = (own, dict(pod.meta.labels), cs)
        return cs

    def _default_constraints(self, pod: Pod, action: str, snapshot: Any) -> tuple[Constraint, ...]:
        """The defaults for a pod without constraints: they read its namespace, labels and
        controller reference and the snapshot's controllers (``objects_version``), so the
        last answer is kept for the next pod with the same ones."""
        version = getattr(snapshot, "objects_version", None)
        meta = pod.meta
        hit = self._last_default.get(action)
        if (
            hit is not None
            and version is not None
            and hit[0] is snapshot
            and hit[1] == version
            and hit[2] == meta.namespace
            and hit[4] == meta.owner_references
            and hit[3] == meta.labels
        ):
            return hit[5]
        cs = pod_constraints(pod, action, self.default_constraints, _controllers(snapshot))
        if version is not None:
            entry = (snapshot, version, meta.namespace, dict(meta.labels), meta.owner_references)
            self._last_default[action] = (*entry, cs)
        return cs

    # ------------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        cs = self.constraints(pod, DO_NOT_SCHEDULE, snapshot)
        if not cs:
            return None, skip()
        parts = [self._plans.partial(pod, cs, t) for t in tables_of(snapshot)]
        return self.pre_filter_reduce(state, pod, cs, parts)

    def pre_filter_partial(
        self, pod: Pod, constraints: tuple[Constraint, ...], table: NodeTable
    ) -> list[DomainCounts]:
        """MAP step of PreFilter over one shard table, for ``constraints`` (the
        DoNotSchedule ones, see ``constraints()``)."""
        return filtering.pre_filter_partial(pod, constraints, table)

    def pre_filter_reduce(
        self,
        state: CycleState,
        pod: Pod,
        constraints: tuple[Constraint, ...],
        parts: Sequence[Sequence[DomainCounts]],
    ) -> tuple[PreFilterResult | None, Status]:
        """REDUCE step: sum the shards' domain counts and write the state."""
        if not constraints:
            return None, skip()
        domains = filtering.reduce_partials(parts, len(constraints))
        matches = self._self_match(pod, constraints)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState.build(pod, constraints, domains, matches))
        return None, SUCCESS

    def _self_match(self, pod: Pod, constraints: tuple[Constraint, ...]) -> tuple[bool, ...]:
        """``filtering.self_matches``, kept for the last constraints and labels seen."""
        hit = self._last_match
        if hit is not None and hit[0] is constraints and hit[1] == pod.meta.labels:
            return hit[2]
        matches = filtering.self_matches(pod, constraints)
        self._last_match = (constraints, dict(pod.meta.labels), matches)
        return matches

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def _update(
        self, state: CycleState, pod: Pod, other: Pod, node_name: str, delta: int
    ) -> Status:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        snapshot = self._handle.snapshot
        node = snapshot.node(node_name) if snapshot is not None else None
        if node is None:
            return SUCCESS
        state.write(PRE_FILTER_STATE_KEY, s.update_with_pod(pod, other, node, delta))
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_name: str) -> Status:
        return self._update(state, pod, pod_to_add, node_name, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_name: str) -> Status:
        return self._update(state, pod, pod_to_remove, node_name, -1)

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return NodeVerdicts.missing_state(len(nodes), PRE_FILTER_STATE_KEY)
        return filtering.filter_rows(s, nodes.table, nodes.rows)

    # ------------------------------------------------------------------ score

    def pre_score(
        self, state: CycleState, pod: Pod, snapshot: Any, feasible: NodeSlice | Sequence[str]
    ) -> Status:
        tables = tables_of(snapshot)
        if not any(t.n_nodes for t in tables):
            return skip()
        cs = self.constraints(pod, SCHEDULE_ANYWAY, snapshot)
        if not cs:
            return skip()
        if len(tables) == 1 and getattr(feasible, "table", None) is tables[0]:
            # one table: the same state without strings, node-derived parts kept
            rows = np.asarray(feasible.rows, dtype=np.int64)  # type: ignore[union-attr]
            require_all = self.require_all_topologies(pod)
            state.write(
                PRE_SCORE_STATE_KEY,
                self._score_plans.state(pod, cs, require_all, tables[0], rows),
            )
            return SUCCESS
        parts = [self.pre_score_partial(pod, cs, t, feasible_rows(feasible, t)) for t in tables]
        return self.pre_score_reduce(state, pod, cs, parts)

    def require_all_topologies(self, pod: Pod) -> bool:
        """System defaults do not require every key, so zone-less nodes still spread by
        hostname; the pod's own or List-defaulted constraints do."""
        return bool(pod.topology_spread_constraints) or not self.system_defaulted

    def pre_score_partial(
        self, pod: Pod, constraints: tuple[Constraint, ...], table: NodeTable, feasible: np.ndarray
    ) -> scoring.ScorePartial:
        """MAP step of PreScore over one shard table; ``feasible`` are its feasible rows
        in the order Score will see them."""
        return scoring.pre_score_partial(
            pod, constraints, self.require_all_topologies(pod), table, feasible
        )

    def pre_score_reduce(
        self,
        state: CycleState,
        pod: Pod,
        constraints: tuple[Constraint, ...],
        parts: Sequence[scoring.ScorePartial],
    ) -> Status:
        """REDUCE step: domains, counts and topology weights; writes the state."""
        if not constraints:
            return skip()
        reduced = scoring.reduce_partials(constraints, self.require_all_topologies(pod), parts)
        state.write(PRE_SCORE_STATE_KEY, reduced)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return np.zeros(len(nodes), dtype=np.int64)
        return scoring.score_rows(s, pod, nodes.table, nodes.rows)

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return scores
        return scoring.normalize(s, scores)

    # ------------------------------------------------------------------ queueing

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Pods added/relabelled/deleted (counts change), the pod gaining a toleration
        (nodeTaintsPolicy: Honor), and nodes added/deleted/relabelled/retainted."""
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD,
                    ActionType.ADD
                    | ActionType.UPDATE_POD_LABEL
                    | ActionType.UPDATE_POD_TOLERATION
                    | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        )

    def _hint_constraints(self, pod: Pod) -> tuple[Constraint, ...]:
        return self.constraints(pod, DO_NOT_SCHEDULE, self._handle.snapshot)

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Only bound pods of the pod's namespace (or the pod itself) count. Queue when
        an added / deleted pod matches a constraint's selector, a relabel flips a match,
        or the pod got a toleration while a constraint honours taints."""
        for other in (old, new):
            if (
                other is not None
                and other.key != pod.key
                and (not other.node_name or other.meta.namespace != pod.meta.namespace)
            ):
                return QueueingHint.QUEUE_SKIP
        constraints = self._hint_constraints(pod)
        if old is not None and new is not None:
            if (
                new.key == pod.key
                and old.tolerations != new.tolerations
                and any(c.honor_taints for c in constraints)
            ):
                return QueueingHint.QUEUE
            if old.labels == new.labels:
                return QueueingHint.QUEUE_SKIP
            for c in constraints:
                if selector_matches(c.selector, old.labels) != selector_matches(
                    c.selector, new.labels
                ):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        changed = new if new is not None else old
        if changed is None:
            return QueueingHint.QUEUE
        if any(selector_matches(c.selector, changed.labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        """Nodes carrying every constraint's topology key matter: one added or deleted,
        one gaining / losing the keys, or a matching one whose key values or taints
        changed."""
        constraints = self._hint_constraints(pod)

        def matching(node: Node | None) -> bool:
            return node is not None and all(c.topology_key in node.labels for c in constraints)

        if old is not None and new is not None:
            if matching(old) != matching(new):
                return QueueingHint.QUEUE
            if matching(new) and (
                any(
                    old.labels.get(c.topology_key) != new.labels.get(c.topology_key)
                    for c in constraints
                )
                or old.taints != new.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        return (
            QueueingHint.QUEUE
            if matching(new if new is not None else old)
            else QueueingHint.QUEUE_SKIP
        )


def new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args or PodTopologySpreadArgs(), handle)
