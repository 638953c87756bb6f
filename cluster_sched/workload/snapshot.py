"""Cluster snapshots: ``kubectl get -A -o yaml`` (or any plain manifest file) to the
objects a run or an explanation starts from.

What a snapshot goes through, in order:

1. Every object whose kind Kubernetes serves is checked against Kubernetes' own schema
   (``api.schema``): a field Kubernetes does not know (``nodeSelecter``) is an error
   naming the file, the object and the field, or with ``lenient`` a warning.
2. Kinds the scheduler does not model (ConfigMap, Secret, Ingress, custom resources...)
   are skipped, reported once per kind.
3. Pods in phase Succeeded or Failed are left out: the scheduler's informer never sees
   them (its field selector excludes them), so they hold no room on any node and are
   never queued. They still count for their Job's completions.
4. Controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
   ReplicationController) create the pods they would create next (``api.controllers``).

The store keeps ReplicaSets, StatefulSets and ReplicationControllers (PodTopologySpread's
default constraints read their selectors); Deployments, DaemonSets and Jobs are read
for their pods only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_sched.api import schema
from cluster_sched.api.controllers import (
    CONTROLLER_KINDS,
    EXPANDED_ONLY_KINDS,
    check_template,
    expand_controllers,
    instantiate_claims,
)
from cluster_sched.api.files import read_text
from cluster_sched.api.manifest import KINDS, AnyObject, load_documents, parse_object
from cluster_sched.api.objects import TERMINAL_POD_PHASES, Node, Pod
from cluster_sched.errors import InvalidObjectError

__all__ = [
    "Snapshot",
    "build_snapshot",
    "is_terminal_pod",
    "load_snapshot",
    "unknown_field_errors",
]


def is_terminal_pod(doc: Mapping[str, Any]) -> bool:
    status = doc.get("status")
    return isinstance(status, dict) and status.get("phase") in TERMINAL_POD_PHASES


def _key(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _label(doc: Mapping[str, Any]) -> str:
    kind = str(doc.get("kind"))
    entry = KINDS.get(kind)
    namespaced = entry[1] if entry is not None else True
    raw = doc.get("metadata")
    meta: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    name = meta.get("name") or "(unnamed)"
    return f"{kind} {meta.get('namespace') or 'default'}/{name}" if namespaced else f"{kind} {name}"


@dataclass(slots=True)
class Snapshot:
    """A snapshot ready to load: manifests by role, plus what was left out and why."""

    #: objects other than nodes and pods, created ReplicaSets and claims included
    objects: list[dict[str, Any]] = field(default_factory=list)
    node_docs: list[dict[str, Any]] = field(default_factory=list)
    #: the file's pods that are not terminal, then the pods controllers created
    pod_docs: list[dict[str, Any]] = field(default_factory=list)
    #: ``Kind namespace/name`` → pods it created
    created: dict[str, int] = field(default_factory=dict)
    #: ``namespace/name`` of the Succeeded/Failed pods left out
    terminal: list[str] = field(default_factory=list)
    #: kind → objects skipped because the scheduler does not model the kind
    skipped_kinds: dict[str, int] = field(default_factory=dict)
    #: one line per warning (unknown fields with ``lenient``, skipped kinds)
    warnings: list[str] = field(default_factory=list)
    #: one line per malformed pod (reported and skipped, as for any workload)
    invalid: list[str] = field(default_factory=list)

    def parsed(self) -> list[AnyObject]:
        """Every object, typed (nodes first, so a pod finds its node)."""
        return [parse_object(doc) for doc in (*self.objects, *self.node_docs, *self.pod_docs)]


def _versions() -> str:
    versions = schema.schema_versions()
    return f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]} to v{versions[-1]}"


def unknown_field_errors(doc: Mapping[str, Any], source: str) -> list[InvalidObjectError]:
    """One error per field of ``doc`` Kubernetes does not know (none for kinds without a
    schema), naming the file, the object and the field."""
    kind = str(doc.get("kind"))
    return [
        InvalidObjectError(
            f"unknown field {path.rsplit('.', 1)[-1]!r} "
            f"(Kubernetes {_versions()} {kind} has no such field)",
            obj=_label(doc),
            field=path,
            source=source,
        )
        for path in schema.unknown_fields(doc)
    ]


def _check_controller(doc: Mapping[str, Any], source: str) -> None:
    kind = str(doc.get("kind"))
    versions = CONTROLLER_KINDS[kind]
    version = doc.get("apiVersion")
    if version is not None and version not in versions:
        raise InvalidObjectError(
            f"apiVersion {version!r} does not serve {kind} (want {' or '.join(sorted(versions))})",
            obj=_label(doc),
            field="apiVersion",
            source=source,
        )
    try:
        check_template(doc)
    except InvalidObjectError as err:
        raise err.located(source=source) from None


def build_snapshot(
    docs: Iterable[dict[str, Any]], source: str = "", *, seed: int = 0, lenient: bool = False
) -> Snapshot:
    """Sort, check and expand the objects of one file (see the module docstring).

    Raises InvalidObjectError for an unknown field (unless ``lenient``) or any other
    malformed object but a pod; a malformed pod is listed in ``invalid`` and skipped.
    """
    snap = Snapshot()
    skipped: Counter[str] = Counter()
    all_pods: list[dict[str, Any]] = []
    controllers: list[dict[str, Any]] = []
    nodes: list[Node] = []
    for doc in docs:
        kind = doc.get("kind")
        if not isinstance(kind, str) or not kind:
            parse_object(doc, source)  # raises the usual "object has no kind"
            continue
        modelled = kind in KINDS or kind in EXPANDED_ONLY_KINDS
        if not modelled:
            skipped[kind] += 1
            continue
        for err in unknown_field_errors(doc, source):
            if not lenient:
                raise err
            snap.warnings.append(str(err))
        if kind in CONTROLLER_KINDS:
            _check_controller(doc, source)
            controllers.append(doc)
        if kind in EXPANDED_ONLY_KINDS:
            continue
        try:
            obj = parse_object(doc, source)
        except InvalidObjectError as err:
            if kind == "Pod":
                snap.invalid.append(str(err))
                continue
            raise
        if isinstance(obj, Pod):
            all_pods.append(doc)
            if is_terminal_pod(doc):
                snap.terminal.append(_key(doc))
            else:
                snap.pod_docs.append(doc)
        elif isinstance(obj, Node):
            nodes.append(obj)
            snap.node_docs.append(doc)
        else:
            snap.objects.append(doc)
    for kind, count in sorted(skipped.items()):
        snap.skipped_kinds[kind] = count
        snap.warnings.append(
            f"{source}: skipped {count} {kind} object{'s' if count != 1 else ''}: "
            "kind not modelled by the scheduler"
        )
    if controllers:
        others = [d for d in snap.objects if d.get("kind") == "PersistentVolumeClaim"]
        try:
            exp = expand_controllers([*all_pods, *controllers, *others], nodes, seed=seed)
        except InvalidObjectError as err:
            raise err.located(source=source) from None
        snap.objects.extend(exp.objects)
        snap.pod_docs.extend(exp.pods)
        snap.created = exp.created
        snap.warnings.extend(f"{source}: {line}" if source else line for line in exp.warnings)
    instantiate_claims(snap.pod_docs, snap.objects, seed=seed)
    return snap


def load_snapshot(path: str | Path, *, seed: int = 0, lenient: bool = False) -> Snapshot:
    """``build_snapshot`` of a YAML/JSON file (Lists flattened)."""
    source = str(path)
    text = read_text(path, "manifest")
    return build_snapshot(load_documents(text, source), source, seed=seed, lenient=lenient)
