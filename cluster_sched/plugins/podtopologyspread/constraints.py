"""Which spread constraints apply to a pod, and which nodes count for each.

- A pod's own constraints of the requested ``whenUnsatisfiable``, with ``matchLabelKeys``
  merged into the selector (upstream ``filterTopologySpreadConstraints``), or, when the
  pod has none, the default constraints with a selector deduced from the Services,
  ReplicationControllers, ReplicaSets and StatefulSets selecting the pod (upstream
  ``buildDefaultConstraints`` / ``helper.DefaultSelector``).
- ``nodeAffinityPolicy: Honor`` counts only nodes matching the pod's nodeSelector and
  required node affinity; ``nodeTaintsPolicy: Honor`` only nodes whose NoSchedule /
  NoExecute taints the pod tolerates. Masks are memoised per table on the pod-side input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import (
    NO_EXECUTE,
    NO_SCHEDULE,
    LabelSelector,
    Node,
    Pod,
    Toleration,
    TopologySpreadConstraint,
    WorkloadController,
)
from cluster_sched.api.selectors import label_selector_matches, node_selector_matches
from cluster_sched.api.taints import find_matching_untolerated_taint
from cluster_sched.nodetable.podindex import PodGroup, Weight
from cluster_sched.nodetable.selectors import label_map_mask, node_selector_mask
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.tainttoleration import untolerated_taint_columns

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HOSTNAME_LABEL = "kubernetes.io/hostname"
_DO_NOT_SCHEDULE_TAINTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed constraint (upstream topologySpreadConstraint)."""

    max_skew: int
    topology_key: str
    #: None matches nothing (a null labelSelector)
    selector: LabelSelector | None
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def selector_is_empty(sel: LabelSelector | None) -> bool:
    return sel is not None and not sel.match_labels and not sel.match_expressions


def selector_matches(sel: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    return label_selector_matches(sel, labels)


def _merge_match_label_keys(
    c: TopologySpreadConstraint, labels: Mapping[str, str]
) -> LabelSelector | None:
    """upstream mergeLabelSetWithSelector: the pod's values for matchLabelKeys ANDed in;
    a null selector stays null (it has no requirements to merge into)."""
    sel = c.label_selector
    if sel is None or not c.match_label_keys:
        return sel
    extra = tuple((k, labels[k]) for k in c.match_label_keys if k in labels)
    if not extra:
        return sel
    return LabelSelector(sel.match_labels + extra, sel.match_expressions)


def parse_constraints(
    constraints: Iterable[TopologySpreadConstraint], labels: Mapping[str, str], action: str
) -> tuple[Constraint, ...]:
    """upstream filterTopologySpreadConstraints."""
    return tuple(
        Constraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            selector=_merge_match_label_keys(c, labels),
            min_domains=c.min_domains if c.min_domains is not None else 1,
            honor_affinity=c.node_affinity_policy == "Honor",
            honor_taints=c.node_taints_policy == "Honor",
        )
        for c in constraints
        if c.when_unsatisfiable == action
    )


def default_selector(pod: Pod, controllers: Iterable[WorkloadController]) -> LabelSelector:
    """upstream helper.DefaultSelector: the selectors of the Services selecting the pod,
    plus its controlling ReplicationController / ReplicaSet / StatefulSet's."""
    ns = pod.meta.namespace
    ctrls = [c for c in controllers if c.meta.namespace == ns]
    label_set: dict[str, str] = {}
    for svc in ctrls:
        if (
            svc.kind == "Service"
            and svc.selector is not None
            and label_selector_matches(svc.selector, pod.meta.labels)
        ):
            label_set.update(svc.selector.match_labels)
    extra_labels: tuple[tuple[str, str], ...] = ()
    extra_exprs: tuple = ()  # type: ignore[type-arg]
    owner = next((o for o in pod.meta.owner_references if o.controller), None)
    if owner is not None:
        kind = {
            ("v1", "ReplicationController"): "ReplicationController",
            ("apps/v1", "ReplicaSet"): "ReplicaSet",
            ("apps/v1", "StatefulSet"): "StatefulSet",
        }.get((owner.api_version, owner.kind))
        ctrl = next((c for c in ctrls if c.kind == kind and c.meta.name == owner.name), None)
        if ctrl is not None and ctrl.selector is not None:
            if kind == "ReplicationController":
                label_set.update(ctrl.selector.match_labels)
            else:
                extra_labels = ctrl.selector.match_labels
                extra_exprs = ctrl.selector.match_expressions
    return LabelSelector(tuple(sorted(label_set.items())) + extra_labels, extra_exprs)


def pod_constraints(
    pod: Pod,
    action: str,
    defaults: tuple[TopologySpreadConstraint, ...],
    controllers: Iterable[WorkloadController],
) -> tuple[Constraint, ...]:
    """upstream getConstraints / initPreScoreState's choice of constraints."""
    if pod.topology_spread_constraints:
        return parse_constraints(pod.topology_spread_constraints, pod.meta.labels, action)
    cs = parse_constraints(defaults, pod.meta.labels, action)
    if not cs:
        return ()
    sel = default_selector(pod, controllers)
    if selector_is_empty(sel):
        return ()
    return tuple(
        Constraint(c.max_skew, c.topology_key, sel, c.min_domains, c.honor_affinity, c.honor_taints)
        for c in cs
    )


# ---------------------------------------------------------------------------- counting


def count_spec(
    selector: LabelSelector | None, namespace: str
) -> tuple[tuple[object, ...], Weight] | None:
    """PodIndex query (key, weight) for the pods upstream's countPodsMatchSelector counts:
    same namespace, not terminating, matched by a non-empty selector. None: counts none."""
    if selector is None or selector_is_empty(selector):
        return None

    def weight(g: PodGroup) -> int:
        return int(
            g.namespace == namespace
            and not g.terminating
            and label_selector_matches(selector, g.labels)
        )

    return ("pts.count", selector, namespace), weight


def count_query(table: NodeTable, selector: LabelSelector | None, namespace: str) -> np.ndarray:
    """int64[cap]: per row, the pods ``count_spec`` describes."""
    spec = count_spec(selector, namespace)
    if spec is None:
        return np.zeros(table._cap, dtype=np.int64)
    return table.pod_index.query(*spec)


# ---------------------------------------------------------------------------- node inclusion


def keys_present(table: NodeTable, constraints: tuple[Constraint, ...]) -> np.ndarray:
    """bool[cap]: rows holding every constraint's topology key."""
    keys = tuple(sorted({c.topology_key for c in constraints}))

    def compute() -> np.ndarray:
        mask = np.ones(table._cap, dtype=bool)
        for k in keys:
            col = table.labels.get(k)
            if col is None:
                return np.zeros(table._cap, dtype=bool)
            mask &= col >= 0
        return mask

    return table.memo(("pts.keys", keys), compute)


def affinity_mask(table: NodeTable, pod: Pod) -> np.ndarray:
    """bool[cap]: upstream GetRequiredNodeAffinity(pod).Match (nodeSelector AND required
    node affinity)."""
    mask = np.ones(table._cap, dtype=bool)
    if pod.node_selector:
        mask = mask & label_map_mask(table, pod.node_selector)
    aff = pod.affinity
    required = (
        aff.node_affinity.required if aff is not None and aff.node_affinity is not None else None
    )
    if required is not None:
        mask = mask & node_selector_mask(table, required)
    return mask


def tolerated_mask(table: NodeTable, tolerations: tuple[Toleration, ...]) -> np.ndarray:
    """bool[cap]: no NoSchedule/NoExecute taint left untolerated."""

    def compute() -> np.ndarray:
        cols = untolerated_taint_columns(table, tolerations, _DO_NOT_SCHEDULE_TAINTS)
        if not len(cols):
            return np.ones(table._cap, dtype=bool)
        return ~(table.taint_pos[cols] > 0).any(axis=0)  # taint_pos is int16[T, cap]

    return table.memo(("pts.tolerated", tolerations), compute)


def inclusion_key(pod: Pod, c: Constraint) -> tuple[object, ...]:
    """The pod-side inputs of ``inclusion_mask`` (a memo key)."""
    aff = pod.affinity
    required = (
        aff.node_affinity.required if aff is not None and aff.node_affinity is not None else None
    )
    return (
        (tuple(sorted(pod.node_selector.items())), required) if c.honor_affinity else None,
        pod.tolerations if c.honor_taints else None,
    )


def inclusion_mask(table: NodeTable, pod: Pod, c: Constraint) -> np.ndarray:
    """bool[cap]: nodes the constraint's inclusion policies let count."""

    def compute() -> np.ndarray:
        mask = np.ones(table._cap, dtype=bool)
        if c.honor_affinity:
            mask &= affinity_mask(table, pod)
        if c.honor_taints:
            mask &= tolerated_mask(table, pod.tolerations)
        return mask

    return table.memo(("pts.inclusion", inclusion_key(pod, c)), compute)


def node_included(node: Node, pod: Pod, c: Constraint) -> bool:
    """Scalar ``inclusion_mask`` for one Node object (AddPod/RemovePod)."""
    if c.honor_affinity:
        for key, value in pod.node_selector.items():
            if node.labels.get(key) != value:
                return False
        aff = pod.affinity
        required = (
            aff.node_affinity.required
            if aff is not None and aff.node_affinity is not None
            else None
        )
        if required is not None and not node_selector_matches(required, node.name, node.labels):
            return False
    return not (
        c.honor_taints
        and find_matching_untolerated_taint(node.taints, pod.tolerations, _DO_NOT_SCHEDULE_TAINTS)
    )
