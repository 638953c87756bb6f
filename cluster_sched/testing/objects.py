"""Builders for the cluster objects around pods and nodes: namespaces, disruption
budgets, priority classes and workload controllers (what selectors and preemption read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_sched.api.manifest import (
    parse_namespace,
    parse_pdb,
    parse_priority_class,
    parse_workload_controller,
)
from cluster_sched.api.objects import (
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
    WorkloadController,
)
from cluster_sched.testing.manifests import rfc3339


def make_namespace(name: str, labels: Mapping[str, str] | None = None) -> Namespace:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return parse_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, source="<builder>"
    )


def make_pdb(
    name: str,
    match_labels: Mapping[str, str],
    *,
    namespace: str = "default",
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    disruptions_allowed: int = 0,
    disrupted_pods: Mapping[str, float] | None = None,
) -> PodDisruptionBudget:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    status: dict[str, Any] = {"disruptionsAllowed": disruptions_allowed}
    if disrupted_pods:
        status["disruptedPods"] = {pod: rfc3339(when) for pod, when in disrupted_pods.items()}
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": status,
    }
    return parse_pdb(doc, source="<builder>")


def make_priority_class(
    name: str,
    value: int,
    *,
    global_default: bool = False,
    preemption_policy: str = "PreemptLowerPriority",
) -> PriorityClass:
    doc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
        "preemptionPolicy": preemption_policy,
    }
    return parse_priority_class(doc, source="<builder>")


_CONTROLLER_VERSIONS = {
    "Service": "v1",
    "ReplicationController": "v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
}


def make_controller(
    kind: str, name: str, match_labels: Mapping[str, str], *, namespace: str = "default"
) -> WorkloadController:
    """A Service / ReplicationController (map selector) or ReplicaSet / StatefulSet."""
    if kind in ("Service", "ReplicationController"):
        selector: dict[str, Any] = dict(match_labels)
    else:
        selector = {"matchLabels": dict(match_labels)}
    doc = {
        "apiVersion": _CONTROLLER_VERSIONS.get(kind, "v1"),
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector},
    }
    return parse_workload_controller(doc, source="<builder>")
