"""The resourceclaim controller of kube-controller-manager, for a snapshot: each pod
entry naming a ResourceClaimTemplate gets its own ResourceClaim, recorded in the pod's
``status.resourceClaimStatuses`` (which the scheduler waits for).

The claim is named as the API server's generateName would (``<pod>-<entry>-`` and five
random characters, deterministic for a seed), owned by the pod (controller,
blockOwnerDeletion), annotated ``resource.kubernetes.io/pod-claim-name``, with the
template's labels, annotations and spec. Pods whose status already names a claim for
the entry are left alone; a template that does not exist creates nothing (the pod then
waits in PreEnqueue, as it would upstream).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

from cluster_sched.api._controller_common import ALPHANUMS

__all__ = ["POD_CLAIM_NAME_ANNOTATION", "instantiate_claims"]

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def instantiate_claims(
    pods: list[dict[str, Any]], objects: list[dict[str, Any]], *, seed: int = 0
) -> list[dict[str, Any]]:
    """Add the claims ``pods`` need from templates among ``objects`` (to ``objects``,
    returned too), setting each pod's ``status.resourceClaimStatuses`` in place."""
    templates: dict[tuple[str, str], Mapping[str, Any]] = {}
    for doc in objects:
        if doc.get("kind") == "ResourceClaimTemplate":
            meta = doc.get("metadata") or {}
            templates[(meta.get("namespace") or "default", meta.get("name", ""))] = doc
    rng = random.Random(seed)
    created: list[dict[str, Any]] = []
    for pod in pods:
        spec = pod.get("spec") or {}
        entries = spec.get("resourceClaims") or []
        if not isinstance(entries, list):
            continue
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        status = pod.setdefault("status", {})
        statuses = list(status.get("resourceClaimStatuses") or [])
        have = {s.get("name") for s in statuses if isinstance(s, dict)}
        for entry in entries:
            if not isinstance(entry, dict) or not entry.get("resourceClaimTemplateName"):
                continue
            if entry.get("name") in have:
                continue
            template = templates.get((namespace, entry["resourceClaimTemplateName"]))
            if template is None:
                continue
            claim = _claim(pod, entry["name"], template, rng)
            created.append(claim)
            statuses.append({"name": entry["name"], "resourceClaimName": claim["metadata"]["name"]})
        if statuses:
            status["resourceClaimStatuses"] = statuses
    objects.extend(created)
    return created


def _claim(
    pod: Mapping[str, Any], entry: str, template: Mapping[str, Any], rng: random.Random
) -> dict[str, Any]:
    pod_meta = pod.get("metadata") or {}
    tspec = template.get("spec") or {}
    tmeta = tspec.get("metadata") or {}
    prefix = f"{pod_meta.get('name', '')}-{entry}"
    # generateName keeps at most 58 characters of the prefix (63 with the suffix)
    name = f"{prefix[:57]}-" + "".join(rng.choice(ALPHANUMS) for _ in range(5))
    owner = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod_meta.get("name", ""),
        "uid": pod_meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    meta: dict[str, Any] = {
        "name": name,
        "namespace": pod_meta.get("namespace") or "default",
        "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: entry},
        "ownerReferences": [owner],
    }
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": copy.deepcopy(tspec.get("spec") or {}),
    }
