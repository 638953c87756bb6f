"""InterPodAffinity: required pod (anti-)affinity filter, preferred terms score.

PreFilter and PreScore are a map over the node tables the snapshot exposes
(``crossnode.tables_of``) and a reduce; Filter and Score read only the reduced state
and the shard table's label columns, so they run unchanged on Ray shards. The
AddPod/RemovePod extensions update the reduced state for nominated pods and preemption
dry runs (looking the node up in the snapshot, as upstream reads ``nodeInfo.Node()``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.config.plugin_args import InterPodAffinityArgs
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
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.framework.status import SUCCESS, Status, error, skip
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import DomainCounts, namespace_labels, tables_of
from cluster_sched.plugins.interpodaffinity import filtering, scoring
from cluster_sched.plugins.interpodaffinity.filtering import IncomingPod, PreFilterState
from cluster_sched.plugins.interpodaffinity.scoring import PreScoreState, ScoringPod
from cluster_sched.plugins.interpodaffinity.terms import (
    PodTerms,
    incoming_terms,
    matches_all,
    needs_namespace_list,
    pod_terms,
)
from cluster_sched.plugins.names import INTER_POD_AFFINITY

NAME = INTER_POD_AFFINITY
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_AFFINITY_RULES_NOT_MATCH = filtering.ERR_AFFINITY
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = filtering.ERR_ANTI_AFFINITY
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = filtering.ERR_EXISTING_ANTI_AFFINITY
_TERMS_CACHE_SIZE = 1024

#: One shard's PreFilter partial: map name -> topology key -> counts.
Partial = dict[str, dict[str, DomainCounts]]
#: One shard's PreScore partial: topology key -> summed weights.
ScorePartial = dict[str, DomainCounts]


class InterPodAffinity:
    name = NAME

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        if not 0 <= args.hard_pod_affinity_weight <= 100:
            raise PluginError(
                f"hardPodAffinityWeight: invalid value {args.hard_pod_affinity_weight}: "
                "not in valid range [0, 100]"
            )
        self.args = args
        self._handle = handle
        self._terms: OrderedDict[tuple[object, ...], PodTerms] = OrderedDict()
        #: (pod, namespace labels, answer) of the last ``incoming`` call: one attempt asks
        #: for the same (immutable) pod at PreFilter, its reduce and PreScore
        self._last: tuple[Pod, tuple[tuple[str, str], ...], IncomingPod] | None = None

    # ------------------------------------------------------------------ shared

    def incoming(self, pod: Pod, snapshot: Any) -> IncomingPod:
        """The pod as partials see it. Terms are cached per (namespace, labels, affinity)
        unless a namespaceSelector must be unrolled against the current namespaces."""
        ns_labels = tuple(sorted(namespace_labels(snapshot, pod.meta.namespace).items()))
        last = self._last
        if last is not None and last[0] is pod and last[1] == ns_labels:
            return last[2]
        labels = tuple(sorted(pod.meta.labels.items()))
        if needs_namespace_list(pod):
            namespaces = getattr(snapshot, "namespaces", None) or {}
            terms = incoming_terms(pod, namespaces.values())
            return IncomingPod(pod.meta.namespace, labels, ns_labels, terms)
        aff = pod.affinity
        key = (
            pod.meta.namespace,
            labels,
            None if aff is None else aff.pod_affinity,
            None if aff is None else aff.pod_anti_affinity,
        )
        hit = self._terms.get(key)
        if hit is None:
            hit = incoming_terms(pod, ())
            self._terms[key] = hit
            if len(self._terms) > _TERMS_CACHE_SIZE:
                self._terms.popitem(last=False)
        terms = hit
        out = IncomingPod(pod.meta.namespace, labels, ns_labels, terms)
        self._last = (pod, ns_labels, out)
        return out

    def _snapshot(self) -> Snapshot | None:
        return self._handle.snapshot

    # ------------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        parts = [self.pre_filter_partial(pod, t, snapshot) for t in tables_of(snapshot)]
        return self.pre_filter_reduce(state, pod, parts, snapshot)

    def pre_filter_partial(self, pod: Pod, table: NodeTable, snapshot: Any) -> Partial:
        """MAP step of PreFilter over one shard table (see ``filtering``)."""
        return filtering.pre_filter_partial(self.incoming(pod, snapshot), table)

    def pre_filter_reduce(
        self, state: CycleState, pod: Pod, parts: Sequence[Partial], snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        """REDUCE step: sum the shards' partials and write the state (or Skip)."""
        incoming = self.incoming(pod, snapshot)
        reduced = filtering.reduce_partials(parts)
        terms = incoming.terms
        if (
            not reduced["existing_anti"]
            and not terms.required_affinity
            and not terms.required_anti_affinity
        ):
            return None, skip()
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState(
                incoming,
                reduced["affinity"],
                reduced["anti"],
                reduced["existing_anti"],
                matches_all(terms.required_affinity, pod.meta.namespace, pod.meta.labels),
            ),
        )
        return None, SUCCESS

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def _update(self, state: CycleState, other: Pod, node_name: str, delta: int) -> Status:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        snapshot = self._snapshot()
        node = snapshot.node(node_name) if snapshot is not None else None
        if node is None:
            return SUCCESS
        state.write(PRE_FILTER_STATE_KEY, s.update_with_pod(other, node, delta))
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_name: str) -> Status:
        return self._update(state, pod_to_add, node_name, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_name: str) -> Status:
        return self._update(state, pod_to_remove, node_name, -1)

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return NodeVerdicts.missing_state(len(nodes), PRE_FILTER_STATE_KEY)
        return filtering.filter_rows(s, nodes.table, nodes.rows)

    # ------------------------------------------------------------------ score

    def pre_score(
        self, state: CycleState, pod: Pod, snapshot: Any, feasible: NodeSlice | Sequence[str]
    ) -> Status:
        if self._skip_scoring(pod):
            return skip()
        parts = [self.pre_score_partial(pod, t, snapshot) for t in tables_of(snapshot)]
        return self.pre_score_reduce(state, pod, parts)

    def _skip_scoring(self, pod: Pod) -> bool:
        """ignorePreferredTermsOfExistingPods only matters for pods with no preferred terms."""
        aff = pod.affinity
        has_preferred = aff is not None and bool(
            (aff.pod_affinity is not None and aff.pod_affinity.preferred)
            or (aff.pod_anti_affinity is not None and aff.pod_anti_affinity.preferred)
        )
        return self.args.ignore_preferred_terms_of_existing_pods and not has_preferred

    def run_score_skips(self, pod: Pod, snapshot: Any) -> bool:
        """Whether PreScore Skips for ``pod`` now and still would after any number of
        pods of its namespace, labels and terms were added (a whole-batch run's pods):
        such a pod touches no score map entry (no preferred term matching it, no
        required affinity term matching it when hardPodAffinityWeight counts: checked
        first, from the pod alone) and it Skips now. Conservative: a term touches only
        on nodes holding its key."""
        if self._skip_scoring(pod):
            return True
        inc = self.incoming(pod, snapshot)
        labels, ns_labels = dict(inc.labels), dict(inc.ns_labels)
        terms = inc.terms
        if any(
            w.term.matches(inc.namespace, labels, {})
            for w in (*terms.preferred_affinity, *terms.preferred_anti_affinity)
        ):
            return False
        own = pod_terms(pod)
        hard = own.required_affinity if self.args.hard_pod_affinity_weight > 0 else ()
        if any(
            t.matches(inc.namespace, labels, ns_labels)
            for t in (
                *hard,
                *(w.term for w in (*own.preferred_affinity, *own.preferred_anti_affinity)),
            )
        ):
            return False
        return self.pre_score(CycleState(), pod, snapshot, ()).is_skip

    def pre_score_partial(self, pod: Pod, table: NodeTable, snapshot: Any) -> ScorePartial:
        """MAP step of PreScore over one shard table (see ``scoring``)."""
        sp = ScoringPod(self.incoming(pod, snapshot), self.args.hard_pod_affinity_weight)
        return scoring.pre_score_partial(sp, table)

    def pre_score_reduce(
        self, state: CycleState, pod: Pod, parts: Sequence[ScorePartial]
    ) -> Status:
        """REDUCE step: sum the shards' topology score maps; Skip when nothing scored."""
        if self._skip_scoring(pod):
            return skip()
        reduced = scoring.reduce_partials(parts)
        if not reduced:
            return skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(reduced))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return np.zeros(len(nodes), dtype=np.int64)
        return scoring.score_rows(s, nodes.table, nodes.rows)

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return scores
        return scoring.normalize(s, scores)

    # ------------------------------------------------------------------ queueing

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Pod add/label-update/delete (a matching pod appears or an anti-affine one
        leaves) and node add/label changes (a topology domain appears; hints on: no
        taint updates)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        )

    def _hint_terms(self, pod: Pod) -> PodTerms:
        return self.incoming(pod, self._snapshot()).terms

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Bound pods only: one added (or relabelled into) matching all the pod's
        affinity terms, or one deleted (or relabelled out of) matching its anti-affinity
        terms; also a deleted pod whose own anti-affinity rejected this pod."""
        if (new is not None and not new.node_name) or (old is not None and not old.node_name):
            return QueueingHint.QUEUE_SKIP
        terms = self._hint_terms(pod)
        affinity, anti = terms.required_affinity, terms.required_anti_affinity
        if old is not None and new is not None:
            ns = new.meta.namespace
            if not matches_all(affinity, ns, old.labels) and matches_all(affinity, ns, new.labels):
                return QueueingHint.QUEUE
            if matches_all(anti, ns, old.labels) and not matches_all(anti, ns, new.labels):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            added = matches_all(affinity, new.meta.namespace, new.labels)
            return QueueingHint.QUEUE if added else QueueingHint.QUEUE_SKIP
        if old is None or matches_all(anti, old.meta.namespace, old.labels):
            return QueueingHint.QUEUE
        ns_labels = namespace_labels(self._snapshot(), pod.meta.namespace)
        for term in pod_terms(old).required_anti_affinity:
            if term.matches(pod.meta.namespace, pod.labels, ns_labels):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        """A node that brings an affinity term's topology key (new, gained, or a new
        value), or a new node / one losing or changing an anti-affinity topology key."""
        if new is None:
            return QueueingHint.QUEUE_SKIP
        terms = self._hint_terms(pod)
        for term in terms.required_affinity:
            key = term.topology_key
            if key in new.labels and (old is None or old.labels.get(key) != new.labels[key]):
                return QueueingHint.QUEUE
        for term in terms.required_anti_affinity:
            key = term.topology_key
            if old is None or (key in old.labels and old.labels.get(key) != new.labels.get(key)):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(args or InterPodAffinityArgs(), handle)
