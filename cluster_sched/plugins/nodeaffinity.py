"""NodeAffinity: nodeSelector and required node affinity filter; preferred terms score.

``addedAffinity`` (plugin args) is ANDed with every pod's own affinity, as upstream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import Node, NodeSelector, NodeSelectorTerm, Pod
from cluster_sched.api.selectors import node_selector_matches
from cluster_sched.config.plugin_args import NodeAffinityArgs
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
from cluster_sched.framework.status import SUCCESS, Code, Status, skip, unresolvable
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.selectors import (
    NAME_FIELD,
    label_map_mask,
    node_selector_mask,
    preferred_terms_score,
)
from cluster_sched.plugins._helpers import default_normalize_score
from cluster_sched.plugins.names import NODE_AFFINITY

NAME = NODE_AFFINITY
STATE_KEY = "PreFilter" + NAME
SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    node_selector: tuple[tuple[str, str], ...]
    required: NodeSelector | None


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    terms: tuple[tuple[int, NodeSelectorTerm], ...]


def required_selector(pod: Pod) -> NodeSelector | None:
    aff = pod.affinity
    if aff is None or aff.node_affinity is None:
        return None
    return aff.node_affinity.required


class NodeAffinity:
    name = NAME

    def __init__(self, args: NodeAffinityArgs) -> None:
        added = args.added_affinity
        self._added_required = added.required if added is not None else None
        self._added_preferred = (
            tuple((t.weight, t.preference) for t in added.preferred) if added is not None else ()
        )

    # -- filter

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        required = required_selector(pod)
        if required is None and self._added_required is None and not pod.node_selector:
            return None, skip()
        state.write(STATE_KEY, _PreFilterState(tuple(sorted(pod.node_selector.items())), required))
        if required is None or not required.terms:
            return None, SUCCESS
        names: set[str] | None = None
        for term in required.terms:
            term_names: set[str] | None = None
            for req in term.match_fields:
                if req.key == NAME_FIELD and req.operator == "In":
                    vals = set(req.values)
                    term_names = vals if term_names is None else term_names & vals
            if term_names is None:
                # This term does not pin node names, and terms are ORed: every node may fit.
                return None, SUCCESS
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(names) if names is not None else None), SUCCESS

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        table, rows = nodes.table, nodes.rows
        verdicts = NodeVerdicts.passing(len(rows))
        if self._added_required is not None:
            enforced = nodes.take(node_selector_mask(table, self._added_required))
            verdicts.merge_first_failure(
                NodeVerdicts.from_mask(
                    ~enforced, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED
                )
            )
        s: _PreFilterState | None = state.get(STATE_KEY)
        if s is None:
            s = _PreFilterState(tuple(sorted(pod.node_selector.items())), required_selector(pod))
        match = np.ones(len(rows), dtype=bool)
        if s.node_selector:
            match &= nodes.take(label_map_mask(table, dict(s.node_selector)))
        if s.required is not None:
            match &= nodes.take(node_selector_mask(table, s.required))
        verdicts.merge_first_failure(
            NodeVerdicts.from_mask(~match, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        )
        return verdicts

    # -- score

    def pre_score(self, state: CycleState, pod: Pod, snapshot: Any, feasible: Any) -> Status:
        aff = pod.affinity
        own: tuple[tuple[int, NodeSelectorTerm], ...] = ()
        if aff is not None and aff.node_affinity is not None:
            own = tuple((t.weight, t.preference) for t in aff.node_affinity.preferred)
        if not own and not self._added_preferred:
            return skip()
        state.write(SCORE_STATE_KEY, _PreScoreState(self._added_preferred + own))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        s: _PreScoreState | None = state.get(SCORE_STATE_KEY)
        if s is None:
            self.pre_score(state, pod, None, None)
            s = state.get(SCORE_STATE_KEY)
            if s is None:
                return np.zeros(len(nodes), dtype=np.int64)
        return nodes.take(preferred_terms_score(nodes.table, s.terms))

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A node added or relabelled may match the pod's node selection (hints on:
        no taint updates, preCheck is gone upstream)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        )

    def _matches(self, pod: Pod, node: Node) -> bool:
        if self._added_required is not None and not node_selector_matches(
            self._added_required, node.name, node.labels
        ):
            return False
        if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
            return False
        required = required_selector(pod)
        return required is None or node_selector_matches(required, node.name, node.labels)

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        """Queue when the node now matches and did not before (or is new)."""
        if new is None or not self._matches(pod, new):
            return QueueingHint.QUEUE_SKIP
        if old is None or not self._matches(pod, old):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def new(args: NodeAffinityArgs | None, handle: Handle) -> NodeAffinity:
    return NodeAffinity(args or NodeAffinityArgs())
