"""Workload controllers, as far as the scheduler sees them: the pods they create next.

A cluster snapshot (``kubectl get -A -o yaml``) holds controllers beside the pods they
already made. ``expand_controllers`` plays each controller's next step:

- Deployment → its new ReplicaSet ``<deploy>-<pod-template-hash>`` (unless an owned
  ReplicaSet already has the current template), scaled as the rollout would;
- ReplicaSet / ReplicationController → ``replicas`` pods ``<rs>-<5 random characters>``;
- StatefulSet → pod ``<sts>-<ordinal>`` per missing ordinal, and the claims
  ``<template>-<sts>-<ordinal>`` of its volumeClaimTemplates;
- Job → ``parallelism`` pods, capped by the completions left;
- DaemonSet → one pod per node it should run on, pinned there by node affinity.

Only pods a controller owns (``ownerReferences``) and that are active (not Succeeded,
Failed or terminating) count toward its target; only the missing ones are created.
Names are deterministic for a given seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cluster_sched.api._claim_templates import instantiate_claims
from cluster_sched.api._controller_common import (
    ALPHANUMS,
    Expansion,
    Ownership,
    compute_hash,
    fnv32a,
    generated_name,
    is_active,
    name_of,
    namespace_of,
    pod_from_template,
    replicas,
    safe_encode_string,
    template_of,
)
from cluster_sched.api._replicas import expand_deployment, expand_job, expand_replica_set
from cluster_sched.api._stateful import (
    add_daemon_tolerations,
    expand_daemon_set,
    expand_stateful_set,
    node_name_affinity,
    node_should_run_daemon_pod,
)
from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Node
from cluster_sched.errors import InvalidObjectError

__all__ = [
    "ALPHANUMS",
    "CONTROLLER_KINDS",
    "EXPANDED_ONLY_KINDS",
    "Expansion",
    "add_daemon_tolerations",
    "check_template",
    "compute_hash",
    "expand_controllers",
    "fnv32a",
    "generated_name",
    "instantiate_claims",
    "node_name_affinity",
    "node_should_run_daemon_pod",
    "safe_encode_string",
]

#: Kinds whose pods are created here → the apiVersions that serve them.
CONTROLLER_KINDS: Mapping[str, frozenset[str]] = {
    "Deployment": frozenset({"apps/v1"}),
    "ReplicaSet": frozenset({"apps/v1"}),
    "StatefulSet": frozenset({"apps/v1"}),
    "DaemonSet": frozenset({"apps/v1"}),
    "Job": frozenset({"batch/v1"}),
    "ReplicationController": frozenset({"v1"}),
}
#: Controllers the scheduler's store does not hold: read for their pods, then dropped.
EXPANDED_ONLY_KINDS = frozenset({"Deployment", "DaemonSet", "Job"})


def _label(doc: Mapping[str, Any]) -> str:
    return f"{doc.get('kind')} {namespace_of(doc)}/{name_of(doc) or '(unnamed)'}"


def check_template(doc: Mapping[str, Any]) -> None:
    """The controller's pod template must make a valid pod: its errors name the
    controller and ``spec.template...``."""
    if not isinstance(doc.get("spec"), dict) or doc["spec"].get("template") is None:
        return  # no template: the controller creates nothing (expand_controllers says so)
    try:
        template = template_of(doc)
        probe = pod_from_template(
            template, namespace_of(doc), "template", {"kind": "x", "name": "x"}
        )
        parse_pod(probe)
    except InvalidObjectError as err:
        field = err.field
        if err.obj.startswith("Pod "):  # the probe pod's error: a field of the template
            field = f"spec.template.{field}" if field else "spec.template"
        raise InvalidObjectError(err.reason, obj=_label(doc), field=field) from None


def _without_template(doc: Mapping[str, Any], own: Ownership, exp: Expansion) -> bool:
    """A controller without ``spec.template`` (a manifest kept for its selector) creates
    nothing; a warning says so when it is short of pods."""
    if isinstance(doc.get("spec"), dict) and doc["spec"].get("template") is not None:
        return False
    kind = str(doc.get("kind"))
    short = kind in EXPANDED_ONLY_KINDS
    if not short:
        active = [p for p in own.of(kind, doc, "Pod") if is_active(p)]
        try:
            short = replicas(doc) > len(active)
        except InvalidObjectError as err:
            raise err.located(obj=_label(doc)) from None
    if short:
        exp.warnings.append(f"{_label(doc)}: has no spec.template, so it creates no pods")
    return True


def expand_controllers(
    docs: Iterable[Mapping[str, Any]], nodes: Sequence[Node], *, seed: int = 0
) -> Expansion:
    """What the controllers among ``docs`` create next (see the module docstring).

    ``docs`` is the whole snapshot, pods included (Succeeded and Failed ones too: a
    Job counts its completions); ``nodes`` are the DaemonSets' candidates, in order.
    Errors name the controller (``Deployment ns/name``) and the field.
    """
    docs = list(docs)
    own = Ownership.index(docs)
    exp = Expansion()
    new_rs: dict[tuple[str, str], dict[str, Any]] = {}
    targets: dict[tuple[str, str], int] = {}
    for doc in docs:
        if doc.get("kind") == "Deployment" and (doc.get("spec") or {}).get("template"):
            try:
                rs, scaled = expand_deployment(doc, own, seed)
            except InvalidObjectError as err:
                raise err.located(obj=_label(doc)) from None
            ns = namespace_of(doc)
            if rs is not None:
                new_rs[(ns, name_of(doc))] = rs
            targets.update({(ns, rs_name): n for rs_name, n in scaled.items()})
    for doc in docs:
        kind = doc.get("kind")
        if kind in CONTROLLER_KINDS and _without_template(doc, own, exp):
            continue
        try:
            if kind == "Deployment":
                rs = new_rs.get((namespace_of(doc), name_of(doc)))
                if rs is not None:
                    exp.objects.append(rs)
                    expand_replica_set(rs, own, exp, seed)
            elif kind == "ReplicaSet":
                target = targets.get((namespace_of(doc), name_of(doc)))
                expand_replica_set(doc, own, exp, seed, target=target)
            elif kind == "ReplicationController":
                expand_replica_set(doc, own, exp, seed, api_version="v1")
            elif kind == "StatefulSet":
                expand_stateful_set(doc, own, exp)
            elif kind == "Job":
                expand_job(doc, own, exp, seed)
            elif kind == "DaemonSet":
                expand_daemon_set(doc, nodes, own, exp, seed)
        except InvalidObjectError as err:
            raise err.located(obj=_label(doc)) from None
    return exp
