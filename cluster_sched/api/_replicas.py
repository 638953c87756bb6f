"""Deployments, ReplicaSets, ReplicationControllers and Jobs: how many pods each
controller would create next, and what they look like (upstream pkg/controller/
deployment, replicaset, job).

Counting follows the controllers: a controller's pods are the active pods it owns
(``ownerReferences``; Succeeded, Failed and terminating pods do not count), and it
creates the difference to its target.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from cluster_sched.api import _decode as d
from cluster_sched.api._controller_common import (
    POD_TEMPLATE_HASH_LABEL,
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
    scaled_int_or_percent,
    spec,
    template_of,
)
from cluster_sched.errors import InvalidObjectError

#: Labels the API server gives a Job's pod template (and the controller its pods).
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
DEFAULT_BACKOFF_LIMIT = 6
DEFAULT_MAX_SURGE = "25%"
#: Job conditions after which the controller creates no more pods.
_JOB_FINISHED = frozenset({"Complete", "Failed", "SuccessCriteriaMet", "FailureTarget"})


# --- ReplicaSet / ReplicationController ----------------------------------------------------


def expand_replica_set(
    doc: Mapping[str, Any],
    own: Ownership,
    exp: Expansion,
    seed: int,
    *,
    target: int | None = None,
    api_version: str = "apps/v1",
) -> None:
    """upstream manageReplicas: create ``replicas - active owned pods`` pods named
    ``<name>-<5 random characters>``. ``target`` overrides spec.replicas (the
    Deployment controller's scaling of its new ReplicaSet)."""
    kind = str(doc.get("kind"))
    want = replicas(doc) if target is None else target
    ns, name = namespace_of(doc), name_of(doc)
    active = [p for p in own.of(kind, doc, "Pod") if is_active(p)]
    missing = want - len(active)
    if missing <= 0:
        return
    template = template_of(doc)
    owner = owner_reference(doc, api_version, kind)
    rng = controller_rng(seed, kind, ns, name)
    taken = own.taken[("Pod", ns)]
    pods = [
        pod_from_template(template, ns, generated_name(f"{name}-", rng, taken), owner)
        for _ in range(missing)
    ]
    exp.add_pods(f"{kind} {ns}/{name}", pods)


# --- Deployment ----------------------------------------------------------------------------


def _without_hash(template: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    return {**template, "metadata": {**(template.get("metadata") or {}), "labels": labels}}


def _equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """upstream EqualIgnoreHash: templates equal but for the pod-template-hash label."""
    return _without_hash(a) == _without_hash(b)


def _new_rs_replicas(deploy: Mapping[str, Any], all_total: int, new_replicas: int) -> int:
    """upstream NewRSNewReplicas (RollingUpdate) and the Recreate strategy's scale-up."""
    want = replicas(deploy)
    strategy = d.mapping(spec(deploy).get("strategy"), "spec.strategy")
    if strategy.get("type") == "Recreate":
        old = all_total - new_replicas
        return new_replicas if old > 0 else want
    rolling = d.mapping(strategy.get("rollingUpdate"), "spec.strategy.rollingUpdate")
    surge = rolling.get("maxSurge", DEFAULT_MAX_SURGE)
    max_surge = scaled_int_or_percent(surge, want, True, "spec.strategy.rollingUpdate.maxSurge")
    if new_replicas >= want:
        return want  # a new ReplicaSet above the target is scaled down to it
    max_total = want + max_surge
    if all_total >= max_total:
        return new_replicas
    return new_replicas + min(max_total - all_total, want - new_replicas)


def expand_deployment(
    doc: Mapping[str, Any], own: Ownership, seed: int
) -> tuple[dict[str, Any] | None, dict[str, int]]:
    """The Deployment controller's step: its new ReplicaSet, created if no owned one
    has the current template (named ``<deploy>-<pod-template-hash>``), and the
    replicas that ReplicaSet should have. Returns (the ReplicaSet to create or None,
    {name of an existing ReplicaSet: its new target})."""
    ns, name = namespace_of(doc), name_of(doc)
    template = template_of(doc)
    owned = own.of("Deployment", doc, "ReplicaSet")
    new_rs = next((rs for rs in owned if _equal_ignore_hash(template_of(rs), template)), None)
    total = sum(replicas(rs, 1) for rs in owned)
    paused = d.boolean(spec(doc).get("paused"), "spec.paused")
    if new_rs is not None:
        if paused:
            return None, {}
        current = replicas(new_rs, 1)
        return None, {name_of(new_rs): _new_rs_replicas(doc, total, current)}
    if paused:
        return None, {}
    status = d.mapping(doc.get("status"), "status")
    collisions = d.integer(status.get("collisionCount"), "status.collisionCount", bits=32)
    taken = own.taken[("ReplicaSet", ns)]
    while True:
        pod_hash = compute_hash(template, collisions)
        rs_name = f"{name}-{pod_hash}"
        if rs_name not in taken:
            break
        collisions = (collisions or 0) + 1  # upstream bumps status.collisionCount
    taken.add(rs_name)
    rs_template = copy.deepcopy(dict(template))
    rs_meta = dict(rs_template.get("metadata") or {})
    rs_meta["labels"] = {**(rs_meta.get("labels") or {}), POD_TEMPLATE_HASH_LABEL: pod_hash}
    rs_template["metadata"] = rs_meta
    selector = copy.deepcopy(dict(d.mapping(spec(doc).get("selector"), "spec.selector")))
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        POD_TEMPLATE_HASH_LABEL: pod_hash,
    }
    rs_spec: dict[str, Any] = {
        "replicas": _new_rs_replicas(doc, total, 0),
        "selector": selector,
        "template": rs_template,
    }
    if spec(doc).get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec(doc)["minReadySeconds"]
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": rs_name,
            "namespace": ns,
            "labels": dict(rs_meta["labels"]),
            "ownerReferences": [owner_reference(doc, "apps/v1", "Deployment")],
        },
        "spec": rs_spec,
    }
    return rs, {}


# --- Job -----------------------------------------------------------------------------------


def _indexes(text: object, field: str) -> set[int]:
    """status.completedIndexes: ``1,3-5`` → {1, 3, 4, 5}."""
    out: set[int] = set()
    for part in d.string(text, field).split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise InvalidObjectError(f"{part!r} is not an index or a range", field=field)
        out.update(range(int(low), int(high or low) + 1))
    return out


def _pod_index(pod: Mapping[str, Any]) -> int | None:
    for where in ("annotations", "labels"):
        value = (meta(pod).get(where) or {}).get(JOB_COMPLETION_INDEX)
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def expand_job(doc: Mapping[str, Any], own: Ownership, exp: Expansion, seed: int) -> None:
    """upstream manageJob: ``parallelism`` pods at once, never more than the completions
    left; none once the Job is suspended, finished or past its backoffLimit. Indexed
    Jobs fill the lowest missing completion indexes (``<job>-<index>-<suffix>``)."""
    job_spec, status = spec(doc), d.mapping(doc.get("status"), "status")
    ns, name = namespace_of(doc), name_of(doc)
    if d.boolean(job_spec.get("suspend"), "spec.suspend"):
        return
    for i, cond in enumerate(d.seq(status.get("conditions"), "status.conditions")):
        cond = d.mapping(cond, f"status.conditions[{i}]")
        if cond.get("type") in _JOB_FINISHED and cond.get("status") == "True":
            return
    parallelism = d.integer(job_spec.get("parallelism"), "spec.parallelism", 1, bits=32)
    completions = d.integer(job_spec.get("completions"), "spec.completions", bits=32)
    backoff_limit = d.integer(
        job_spec.get("backoffLimit"), "spec.backoffLimit", DEFAULT_BACKOFF_LIMIT, bits=32
    )
    assert parallelism is not None and backoff_limit is not None
    pods = own.of("Job", doc, "Pod")
    active = [p for p in pods if is_active(p)]
    phases = [str((p.get("status") or {}).get("phase")) for p in pods]
    succeeded = max(
        phases.count("Succeeded"), d.integer(status.get("succeeded"), "status.succeeded", 0) or 0
    )
    failed = max(phases.count("Failed"), d.integer(status.get("failed"), "status.failed", 0) or 0)
    if failed > backoff_limit:
        return
    indexed = job_spec.get("completionMode") == "Indexed" and completions is not None
    if indexed:
        assert completions is not None
        done = _indexes(status.get("completedIndexes"), "status.completedIndexes")
        done |= {idx for p in pods if is_succeeded(p) and (idx := _pod_index(p)) is not None}
        succeeded = max(succeeded, len(done))
    if completions is None:
        want = len(active) if succeeded > 0 else parallelism
    else:
        want = max(0, min(completions - succeeded, parallelism))
    missing = want - len(active)
    if missing <= 0:
        return
    template = template_of(doc)
    labels = {k: name for k in JOB_NAME_LABELS}
    uid = meta(doc).get("uid")
    if uid:
        labels.update({k: str(uid) for k in JOB_UID_LABELS})
    owner = owner_reference(doc, "batch/v1", "Job")
    rng = controller_rng(seed, "Job", ns, name)
    taken = own.taken[("Pod", ns)]
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    extra = {k: v for k, v in labels.items() if k not in template_labels}
    created = []
    if indexed:
        assert completions is not None
        busy = done | {jdx for p in active if (jdx := _pod_index(p)) is not None}
        free = [k for k in range(completions) if k not in busy][:missing]
        for index in free:
            pod_name = generated_name(f"{name}-{index}-", rng, taken)
            pod = pod_from_template(
                template,
                ns,
                pod_name,
                owner,
                extra_labels={**extra, JOB_COMPLETION_INDEX: str(index)},
            )
            pod["metadata"]["annotations"] = {
                **(pod["metadata"].get("annotations") or {}),
                JOB_COMPLETION_INDEX: str(index),
            }
            created.append(pod)
    else:
        created = [
            pod_from_template(
                template, ns, generated_name(f"{name}-", rng, taken), owner, extra_labels=extra
            )
            for _ in range(missing)
        ]
    exp.add_pods(f"Job {ns}/{name}", created)


def is_succeeded(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Succeeded"
