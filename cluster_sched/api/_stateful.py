"""StatefulSets and DaemonSets: pods with an identity (an ordinal, a node) rather than
a count (upstream pkg/controller/statefulset, pkg/controller/daemon)."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cluster_sched.api import _decode as d
from cluster_sched.api._controller_common import (
    CONTROLLER_REVISION_HASH_LABEL,
    Expansion,
    Ownership,
    compute_hash,
    controller_rng,
    generated_name,
    is_active,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    pod_from_template,
    replicas,
    spec,
    template_of,
)
from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import NO_EXECUTE, NO_SCHEDULE, Node, Pod
from cluster_sched.api.selectors import node_selector_matches
from cluster_sched.api.taints import find_matching_untolerated_taint

STATEFULSET_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
DAEMONSET_TEMPLATE_GENERATION_LABEL = "pod-template-generation"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")

#: upstream util.AddOrUpdateDaemonPodTolerations: (key, effect); all ``Exists``.
DAEMON_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", NO_EXECUTE),
    ("node.kubernetes.io/unreachable", NO_EXECUTE),
    ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/unschedulable", NO_SCHEDULE),
)
#: Added only to hostNetwork daemon pods.
NETWORK_UNAVAILABLE_TOLERATION = ("node.kubernetes.io/network-unavailable", NO_SCHEDULE)
_FILTERING = frozenset({NO_SCHEDULE, NO_EXECUTE})


# --- StatefulSet ---------------------------------------------------------------------------


def _ordinal(pod_name: str, set_name: str) -> int | None:
    match = _ORDINAL.match(pod_name)
    if match is None or match.group(1) != set_name:
        return None
    return int(match.group(2))


def _claim_volumes(
    sts: Mapping[str, Any], ordinal: int
) -> tuple[list[tuple[str, str]], list[Mapping[str, Any]]]:
    """(template name, claim name) per volumeClaimTemplate, and the templates."""
    templates = d.seq(spec(sts).get("volumeClaimTemplates"), "spec.volumeClaimTemplates")
    names = []
    for i, tmpl in enumerate(templates):
        tmpl = d.mapping(tmpl, f"spec.volumeClaimTemplates[{i}]")
        claim = d.required_string(
            meta(tmpl).get("name"), f"spec.volumeClaimTemplates[{i}].metadata.name"
        )
        names.append((claim, f"{claim}-{name_of(sts)}-{ordinal}"))
    return names, templates


def expand_stateful_set(doc: Mapping[str, Any], own: Ownership, exp: Expansion) -> None:
    """Every missing ordinal of ``[start, start + replicas)`` gets its pod ``<sts>-<n>``
    (with the pod-name and pod-index labels, hostname and subdomain) and, per
    volumeClaimTemplate, the claim ``<template>-<sts>-<n>`` unless it exists.

    Upstream creates OrderedReady pods one at a time as each turns Ready; a snapshot
    has no kubelet to make them Ready, so every missing pod is created at once (what
    ``podManagementPolicy: Parallel`` does, and where OrderedReady ends)."""
    ns, name = namespace_of(doc), name_of(doc)
    sts_spec = spec(doc)
    ordinals = d.mapping(sts_spec.get("ordinals"), "spec.ordinals")
    start = d.integer(ordinals.get("start"), "spec.ordinals.start", 0, bits=32) or 0
    have = {
        o
        for p in own.of("StatefulSet", doc, "Pod")
        if is_active(p) and (o := _ordinal(name_of(p), name)) is not None
    }
    template = template_of(doc)
    status = d.mapping(doc.get("status"), "status")
    revision = d.string(status.get("updateRevision"), "status.updateRevision") or (
        f"{name}-{compute_hash(template)}"
    )
    selector = d.mapping(sts_spec.get("selector"), "spec.selector")
    match_labels = d.string_map(selector.get("matchLabels"), "spec.selector.matchLabels")
    owner = owner_reference(doc, "apps/v1", "StatefulSet")
    claims_taken = own.taken[("PersistentVolumeClaim", ns)]
    pods = []
    for ordinal in range(start, start + replicas(doc)):
        if ordinal in have:
            continue
        pod_name = f"{name}-{ordinal}"
        own.taken[("Pod", ns)].add(pod_name)
        pod = pod_from_template(
            template,
            ns,
            pod_name,
            owner,
            extra_labels={
                CONTROLLER_REVISION_HASH_LABEL: revision,
                STATEFULSET_POD_NAME_LABEL: pod_name,
                POD_INDEX_LABEL: str(ordinal),
            },
        )
        pod_spec = pod["spec"]
        pod_spec["hostname"] = pod_name
        service = sts_spec.get("serviceName")
        if service:
            pod_spec["subdomain"] = service
        claims, templates = _claim_volumes(doc, ordinal)
        by_template = dict(claims)
        volumes = [
            {"name": tmpl_name, "persistentVolumeClaim": {"claimName": claim_name}}
            for tmpl_name, claim_name in claims
        ]
        volumes += [v for v in pod_spec.get("volumes") or () if v.get("name") not in by_template]
        if volumes:
            pod_spec["volumes"] = volumes
        for (_, claim_name), tmpl in zip(claims, templates, strict=True):
            if claim_name not in claims_taken:
                claims_taken.add(claim_name)
                exp.objects.append(_claim(tmpl, claim_name, ns, match_labels))
        pods.append(pod)
    exp.add_pods(f"StatefulSet {ns}/{name}", pods)


def _claim(
    template: Mapping[str, Any], name: str, namespace: str, match_labels: Mapping[str, str]
) -> dict[str, Any]:
    """upstream getPersistentVolumeClaims: the template, named for the pod, labelled
    with the set's selector matchLabels."""
    tmeta = meta(template)
    claim_meta: dict[str, Any] = {"name": name, "namespace": namespace}
    labels = {**(tmeta.get("labels") or {}), **match_labels}
    if labels:
        claim_meta["labels"] = labels
    if tmeta.get("annotations"):
        claim_meta["annotations"] = dict(tmeta["annotations"])
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": claim_meta,
        "spec": copy.deepcopy(dict(template.get("spec") or {})),
    }


# --- DaemonSet -----------------------------------------------------------------------------


def add_daemon_tolerations(pod_spec: dict[str, Any]) -> None:
    """upstream AddOrUpdateDaemonPodTolerations: each toleration replaces one with the
    same key, operator, value and effect, or is appended."""
    wanted = list(DAEMON_TOLERATIONS)
    if pod_spec.get("hostNetwork") is True:
        wanted.append(NETWORK_UNAVAILABLE_TOLERATION)
    tolerations = list(pod_spec.get("tolerations") or ())
    for key, effect in wanted:
        tol = {"key": key, "operator": "Exists", "effect": effect}
        same = [
            i
            for i, t in enumerate(tolerations)
            if isinstance(t, dict)
            and t.get("key") == key
            and t.get("operator") == "Exists"
            and t.get("effect") == effect
            and not t.get("value")
        ]
        if same:
            tolerations[same[0]] = tol
        else:
            tolerations.append(tol)
    pod_spec["tolerations"] = tolerations


def node_name_affinity(affinity: Mapping[str, Any] | None, node_name: str) -> dict[str, Any]:
    """upstream ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity
    becomes one term, ``matchFields metadata.name In [node]``; the rest is kept."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    out = copy.deepcopy(dict(affinity or {}))
    node_affinity = dict(out.get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    out["nodeAffinity"] = node_affinity
    return out


def node_should_run_daemon_pod(template_pod: Pod, node: Node) -> bool:
    """upstream NodeShouldRunDaemonPod's shouldRun: the template's nodeName (if any),
    nodeSelector and required node affinity match, and every NoSchedule/NoExecute
    taint is tolerated (the daemon tolerations included)."""
    if template_pod.node_name and template_pod.node_name != node.name:
        return False
    if any(node.labels.get(k) != v for k, v in template_pod.node_selector.items()):
        return False
    affinity = template_pod.affinity.node_affinity if template_pod.affinity else None
    if (
        affinity is not None
        and affinity.required is not None
        and not node_selector_matches(affinity.required, node.name, node.labels)
    ):
        return False
    return (
        find_matching_untolerated_taint(node.taints, template_pod.tolerations, _FILTERING) is None
    )


def _target_node(pod: Mapping[str, Any]) -> str | None:
    """upstream GetTargetNodeName: spec.nodeName, else the matchFields metadata.name."""
    pod_spec = pod.get("spec") or {}
    if pod_spec.get("nodeName"):
        return str(pod_spec["nodeName"])
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for req in (term or {}).get("matchFields") or ():
            values = req.get("values") or []
            if (
                req.get("key") == "metadata.name"
                and req.get("operator") == "In"
                and len(values) == 1
            ):
                return str(values[0])
    return None


def expand_daemon_set(
    doc: Mapping[str, Any], nodes: Sequence[Node], own: Ownership, exp: Expansion, seed: int
) -> None:
    """One pod ``<ds>-<suffix>`` per node the DaemonSet should run on and that has no
    active daemon pod yet, pinned to it by node affinity, with the daemon tolerations."""
    ns, name = namespace_of(doc), name_of(doc)
    template = copy.deepcopy(dict(template_of(doc)))
    template_spec = dict(template.get("spec") or {})
    add_daemon_tolerations(template_spec)
    template["spec"] = template_spec
    labels = {CONTROLLER_REVISION_HASH_LABEL: compute_hash(template_of(doc))}
    generation = meta(doc).get("generation")
    if generation is not None:
        labels[DAEMONSET_TEMPLATE_GENERATION_LABEL] = str(generation)
    probe = pod_from_template(template, ns, f"{name}-probe", {"kind": "DaemonSet", "name": name})
    template_pod = parse_pod(probe)
    running = {
        target
        for p in own.of("DaemonSet", doc, "Pod")
        if is_active(p) and (target := _target_node(p)) is not None
    }
    owner = owner_reference(doc, "apps/v1", "DaemonSet")
    rng = controller_rng(seed, "DaemonSet", ns, name)
    taken = own.taken[("Pod", ns)]
    pods = []
    for node in nodes:
        if node.name in running or not node_should_run_daemon_pod(template_pod, node):
            continue
        pod = pod_from_template(
            template, ns, generated_name(f"{name}-", rng, taken), owner, extra_labels=labels
        )
        pod["spec"]["affinity"] = node_name_affinity(pod["spec"].get("affinity"), node.name)
        pods.append(pod)
    exp.add_pods(f"DaemonSet {ns}/{name}", pods)
