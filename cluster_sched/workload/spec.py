"""Workload files: plain Kubernetes YAML, or the project's compact Workload format.

Plain YAML (a cluster snapshot such as ``kubectl get -A -o yaml``): every non-Pod object
is created first (nodes, namespaces, PDBs...), then the pods in file order, then the pods
the controllers create, as one group (``workload.snapshot``: unknown fields, skipped
kinds, terminal pods, controller expansion).

The Workload format (``apiVersion: cluster-sched.io/v1alpha1``, ``kind: Workload``)
names node groups and pod groups, like scheduler_perf's workload templates::

    spec:
      objects: [...]            # namespaces, PDBs, PriorityClasses, Services, ...
      nodeGroups:
      - count: 5000
        template: {Node manifest; metadata.name is the name prefix}
        labels:                 # labelNodePrepareStrategy: values round-robin
          topology.kubernetes.io/zone: [zone-a, zone-b, zone-c]
      podGroups:
      - name: measured
        count: 10000
        template: {Pod manifest; metadata.name is the name prefix}
        rate: 0                 # pods per second; 0 creates them all at once
        wait: true              # let the group settle before the next one starts
        labels: {color: [green]}  # optional round-robin labels, as for nodes
        lifetime: {exponential: {mean: 600s}}  # optional: bound pods complete (workload.arrivals)
        arrival: {poisson: {rate: 2}}          # optional: arrival process (virtual time)
      - name: replay
        trace: pods.jsonl       # pods from a trace file (workload.trace), relative path
        template: {Pod manifest: namespace, image, ...}
      nodes: [...]              # optional: individual Node manifests (trace imports)

DRA objects (DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates) go
in ``objects``; a pod group whose template names a ResourceClaimTemplate gets one claim
per pod, made as the resourceclaim controller makes them (``<pod>-<entry>-xxxxx``, owned
by the pod, named in its ``status.resourceClaimStatuses``; deterministic for a seed).

Lifetimes, arrival processes and traces drive ``--clock virtual`` runs
(``workload.virtual``); the real-time runner paces pods by ``rate`` and ignores them.

Each template is validated once, as a real object, before anything is created; a
malformed pod in plain YAML is reported (object and field) and skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np

from cluster_sched.api.controllers import instantiate_claims
from cluster_sched.api.files import read_text
from cluster_sched.api.manifest import load_documents, parse_object
from cluster_sched.api.tree import copy_tree
from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.arrivals import Arrival, Lifetime, parse_arrival, parse_lifetime
from cluster_sched.workload.snapshot import build_snapshot, unknown_field_errors
from cluster_sched.workload.trace import TraceRecord, read_trace, trace_manifests

API_VERSION = "cluster-sched.io/v1alpha1"
KIND = "Workload"


@dataclass(slots=True)
class PodGroup:
    name: str
    count: int
    template: Mapping[str, Any] | None = None
    #: pre-built manifests (plain YAML) instead of a template
    docs: list[dict[str, Any]] = field(default_factory=list)
    rate: float = 0.0
    wait: bool = True
    labels: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: how long bound pods run (None: until the end of the run)
    lifetime: Lifetime | None = None
    #: arrival process over virtual time (None: ``rate``, or all at once)
    arrival: Arrival | None = None
    #: trace records, one pod each, sorted by arrival (None: a template group)
    trace: list[TraceRecord] | None = None
    #: per pod, the ``status.resourceClaimStatuses`` naming the claims made from its
    #: ResourceClaimTemplates (None: the pods name no template)
    claim_statuses: list[list[dict[str, Any]]] | None = None

    def manifests(self, *, shared: bool = False) -> Iterator[dict[str, Any]]:
        """The group's pods in order. ``shared``: a template's pods share its parts below
        metadata (each pod's top level and metadata are its own), for
        a caller that only reads them, as the store's writes do (they copy what they
        stamp): a pod costs a few dict copies instead of a copy of the whole tree."""
        statuses = self.claim_statuses
        for i, doc in enumerate(self._manifests(shared)):
            if statuses is not None and statuses[i]:
                status = doc["status"] = dict(doc.get("status") or {})
                status["resourceClaimStatuses"] = [dict(s) for s in statuses[i]]
            yield doc

    def _manifests(self, shared: bool = False) -> Iterator[dict[str, Any]]:
        if self.trace is not None:
            yield from trace_manifests(self.trace, _name_prefix(self.template or {}), self.template)
            return
        if self.template is None:
            yield from self.docs
            return
        prefix = _name_prefix(self.template)
        for i in range(self.count):
            yield _instance(self.template, f"{prefix}{i}", self.labels, i, shared=shared)

    def pod_keys(self) -> list[str]:
        """``namespace/name`` of every pod the group creates, without building them
        (the report's per-group figures need membership only)."""
        if self.trace is not None:
            return [_key(doc) for doc in self.manifests()]
        if self.template is None:
            return [_key(doc) for doc in self.docs]
        prefix = _name_prefix(self.template)
        namespace = (self.template.get("metadata") or {}).get("namespace") or "default"
        return [f"{namespace}/{prefix}{i}" for i in range(self.count)]

    def timeline(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """float64[count] arrival times (seconds from the group's start) and lifetimes
        (seconds; inf: never completes) of the group's pods, in manifest order."""
        n = self.count
        if self.trace is not None:
            arrivals = np.asarray([r.arrival for r in self.trace], dtype=np.float64)
            lifetimes = np.asarray(
                [np.inf if r.lifetime is None else r.lifetime for r in self.trace],
                dtype=np.float64,
            )
            return arrivals, lifetimes
        if self.arrival is not None:
            arrivals = self.arrival.times(rng, n)
        elif self.rate > 0:
            arrivals = np.arange(n, dtype=np.float64) / self.rate
        else:
            arrivals = np.zeros(n)
        lifetimes = self.lifetime.draw(rng, n) if self.lifetime is not None else np.full(n, np.inf)
        return arrivals, lifetimes


@dataclass(slots=True)
class Workload:
    name: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: node manifests; a node group's are generated when read (a million nodes never
    #: exist as a million dicts at once)
    node_docs: Sequence[dict[str, Any]] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    #: one line per skipped malformed object
    invalid: list[str] = field(default_factory=list)
    #: plain YAML: one line per warning (skipped kinds; unknown fields with ``lenient``)
    warnings: list[str] = field(default_factory=list)
    #: plain YAML: Succeeded/Failed pods left out (``namespace/name``)
    terminal: list[str] = field(default_factory=list)
    #: plain YAML: ``Kind namespace/name`` → pods its controller created
    created: dict[str, int] = field(default_factory=dict)

    @property
    def total_pods(self) -> int:
        return sum(g.count for g in self.pod_groups)


def _name_prefix(template: Mapping[str, Any]) -> str:
    meta = template.get("metadata") or {}
    base = meta.get("generateName") or meta.get("name") or "obj"
    return base if str(base).endswith("-") else f"{base}-"


def _key(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _instance(
    template: Mapping[str, Any],
    name: str,
    labels: Mapping[str, Sequence[str]],
    i: int,
    *,
    shared: bool = False,
) -> dict[str, Any]:
    """The template's ``i``-th object named ``name``; ``shared``: see PodGroup.manifests."""
    doc = dict(template) if shared else copy_tree(dict(template))
    meta = dict(doc.get("metadata") or {})
    meta.pop("generateName", None)
    meta["name"] = name
    extra = {k: v[i % len(v)] for k, v in labels.items() if v}
    if doc.get("kind") == "Node":
        extra.setdefault("kubernetes.io/hostname", name)
    if extra:
        meta["labels"] = {**(meta.get("labels") or {}), **extra}
    doc["metadata"] = meta
    return doc


def _check(
    doc: Mapping[str, Any], source: str, w: Workload, lenient: bool, field_prefix: str
) -> None:
    """The object parses, and Kubernetes knows each of its fields (with ``lenient``, an
    unknown field is a warning); errors name ``field_prefix`` in the Workload."""
    try:
        parse_object(doc, source)
    except InvalidObjectError as err:
        raise err.located(field_prefix=field_prefix) from None
    for unknown in unknown_field_errors(doc, source):
        located = unknown.located(field_prefix=field_prefix)
        if not lenient:
            raise located
        w.warnings.append(str(located))


def _int(value: Any, field_: str, source: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidObjectError(
            f"must be a non-negative integer, got {value!r}",
            obj=f"Workload {source}",
            field=field_,
            source=source,
        )
    return value


class GeneratedDocs(Sequence[dict[str, Any]]):
    """Node manifests in file order: explicit ones, and node groups' made from their
    templates on demand (``len``, slicing and iteration as a list would give them,
    without holding a million dicts)."""

    def __init__(self, docs: list[dict[str, Any]] | None = None) -> None:
        #: in order: a list of explicit manifests, or a group (template, prefix, labels, count)
        self._segments: list[Any] = [list(docs)] if docs else []

    def add_group(
        self,
        template: Mapping[str, Any],
        prefix: str,
        labels: Mapping[str, Sequence[str]],
        count: int,
    ) -> None:
        self._segments.append((template, prefix, labels, count))

    def append(self, doc: dict[str, Any]) -> None:
        if not self._segments or not isinstance(self._segments[-1], list):
            self._segments.append([])
        self._segments[-1].append(doc)

    @staticmethod
    def _size(segment: Any) -> int:
        return len(segment) if isinstance(segment, list) else int(segment[3])

    def __len__(self) -> int:
        return sum(map(self._size, self._segments))

    def _make(self, i: int) -> dict[str, Any]:
        for seg in self._segments:
            n = self._size(seg)
            if i < n:
                if isinstance(seg, list):
                    return seg[i]  # type: ignore[no-any-return]
                template, prefix, labels, _ = seg
                return _instance(template, f"{prefix}{i}", labels, i)
            i -= n
        raise IndexError("node manifest index out of range")

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self._make(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("node manifest index out of range")
        return self._make(i % n)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.manifests()

    def manifests(self, *, shared: bool = False) -> Iterator[dict[str, Any]]:
        """In order; ``shared`` as ``PodGroup.manifests`` (for a caller that only reads)."""
        for seg in self._segments:
            if isinstance(seg, list):
                yield from seg
            else:
                template, prefix, labels, count = seg
                for i in range(count):
                    yield _instance(template, f"{prefix}{i}", labels, i, shared=shared)

    def wire(self) -> list[dict[str, Any]]:
        """The segments as msgpack-able values (``from_wire`` rebuilds them): the feeder
        process makes the node manifests itself from these, as it does a pod group's from
        its template, so the run's parent neither builds nor packs a million of them
        and the child unpacks none (1,000,000 nodes: ~38 s before the child's first
        write, the parent's and the child's together)."""
        return [
            {"docs": seg} if isinstance(seg, list) else {"group": list(seg)}
            for seg in self._segments
        ]

    @classmethod
    def from_wire(cls, segments: Sequence[Mapping[str, Any]]) -> GeneratedDocs:
        docs = cls()
        for seg in segments:
            if "group" in seg:  # (template, prefix, labels, count)
                docs._segments.append(tuple(seg["group"]))
            else:
                docs._segments.append([dict(doc) for doc in seg["docs"]])
        return docs


def _shape_error(field_: str, expected: str, value: Any, source: str) -> InvalidObjectError:
    return InvalidObjectError(
        f"must be {expected}, got {type(value).__name__}",
        obj=f"Workload {Path(source).stem}",
        field=field_,
        source=source,
    )


def _mapping_or_none(value: Any, field_: str, source: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _shape_error(field_, "a mapping", value, source)
    return value


def _list_or_none(value: Any, field_: str, source: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _shape_error(field_, "a list", value, source)
    return value


def _check_group(group: Any, path: str, source: str) -> Mapping[str, Any]:
    """The shapes ``_instance`` relies on, checked before any template is expanded."""
    if not isinstance(group, Mapping):
        raise _shape_error(path, "a mapping", group, source)
    template = _mapping_or_none(group.get("template"), f"{path}.template", source)
    meta = _mapping_or_none(template.get("metadata"), f"{path}.template.metadata", source)
    _mapping_or_none(meta.get("labels"), f"{path}.template.metadata.labels", source)
    labels = _mapping_or_none(group.get("labels"), f"{path}.labels", source)
    for key, values in labels.items():
        where = f"{path}.labels[{key!r}]"
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise _shape_error(where, "a list of strings", values, source)
    return group


def _claims_from_templates(group: PodGroup, w: Workload, seed: int) -> None:
    """The resourceclaim controller for a group whose pods name ResourceClaimTemplates
    (declared in ``spec.objects``): each pod's claims join the objects (created before
    the pods, as a snapshot's are), their names go in the pod's status."""
    entries = ((group.template or {}).get("spec") or {}).get("resourceClaims")
    if not isinstance(entries, list) or not any(
        isinstance(e, Mapping) and e.get("resourceClaimTemplateName") for e in entries
    ):
        return
    pods = list(group.manifests())
    w.objects.extend(instantiate_claims(pods, list(w.objects), seed=seed))
    group.claim_statuses = [
        list((pod.get("status") or {}).get("resourceClaimStatuses") or []) for pod in pods
    ]


def _parse_workload(
    doc: Mapping[str, Any], source: str, lenient: bool = False, seed: int = 0
) -> Workload:
    spec = _mapping_or_none(doc.get("spec"), "spec", source)
    meta = _mapping_or_none(doc.get("metadata"), "metadata", source)
    name = meta.get("name") or Path(source).stem
    if not isinstance(name, str):
        raise _shape_error("metadata.name", "a string", name, source)
    nodes = GeneratedDocs()
    w = Workload(name=name, node_docs=nodes)
    for i, obj in enumerate(_list_or_none(spec.get("objects"), "spec.objects", source)):
        _check(obj, source, w, lenient, f"spec.objects[{i}]")
        w.objects.append(dict(obj))
    for gi, group in enumerate(_list_or_none(spec.get("nodeGroups"), "spec.nodeGroups", source)):
        path = f"spec.nodeGroups[{gi}]"
        group = _check_group(group, path, source)
        count = _int(group.get("count"), f"{path}.count", source)
        template = group.get("template") or {}
        labels = group.get("labels") or {}
        first = _instance(template, f"{_name_prefix(template)}0", labels, 0)
        _check(first, source, w, lenient, f"{path}.template")
        nodes.add_group(template, _name_prefix(template), labels, count)
    for ni, node in enumerate(_list_or_none(spec.get("nodes"), "spec.nodes", source)):
        _check(node, source, w, lenient, f"spec.nodes[{ni}]")
        nodes.append(dict(node))
    for gi, group in enumerate(_list_or_none(spec.get("podGroups"), "spec.podGroups", source)):
        path = f"spec.podGroups[{gi}]"
        group = _check_group(group, path, source)
        trace = None
        if group.get("trace") is not None:
            trace = read_trace(Path(source).parent / str(group["trace"]))
            count = len(trace)
        else:
            count = _int(group.get("count"), f"{path}.count", source)
        template = group.get("template") or {}
        gname = str(group.get("name") or f"group-{gi}")
        meta = template.get("metadata") or {}
        if trace is not None and not (meta.get("name") or meta.get("generateName")):
            template = {**template, "metadata": {**meta, "name": gname}}
        labels = group.get("labels") or {}
        if trace is not None:
            for doc in trace_manifests(trace, _name_prefix(template), template):
                _check(doc, source, w, lenient, f"{path}.template")  # each record differs
        else:
            first_pod = _instance(template, f"{_name_prefix(template)}0", labels, 0)
            _check(first_pod, source, w, lenient, f"{path}.template")
        rate = group.get("rate", 0) or 0
        if not isinstance(rate, int | float) or rate < 0:
            raise InvalidObjectError(
                f"must be a non-negative number, got {rate!r}",
                obj=f"Workload {name}",
                field=f"{path}.rate",
                source=source,
            )
        w.pod_groups.append(
            PodGroup(
                name=gname,
                count=count,
                template=template,
                rate=float(rate),
                wait=bool(group.get("wait", True)),
                labels=labels,
                lifetime=parse_lifetime(group.get("lifetime"), f"{path}.lifetime", source),
                arrival=parse_arrival(group.get("arrival"), count, f"{path}.arrival", source),
                trace=trace,
            )
        )
        _claims_from_templates(w.pod_groups[-1], w, seed)
    return w


def load_workload(
    path: str | Path, *, seed: int = 0, lenient: bool = False, what: str = "workload"
) -> Workload:
    """Read a workload file (either format). ``seed`` names the pods controllers create;
    ``lenient`` turns unknown fields into warnings (plain YAML); ``what`` names the
    kind of file in errors ("manifest" for ``explain``'s inputs)."""
    source = str(path)
    text = read_text(path, what)
    docs = load_documents(text, source)
    if not docs:
        # Nothing to create and nothing to schedule: a run of it would report an empty
        # evaluation as a success, which is never what the file's author meant.
        raise InvalidObjectError(f"the file holds no objects (empty {what})", source=source)
    if len(docs) == 1 and docs[0].get("kind") == KIND:
        if docs[0].get("apiVersion") != API_VERSION:
            raise InvalidObjectError(
                f'unsupported apiVersion "{docs[0].get("apiVersion")}", expected "{API_VERSION}"',
                obj=f"Workload {Path(path).stem}",
                field="apiVersion",
                source=source,
            )
        return _parse_workload(docs[0], source, lenient, seed)
    snap = build_snapshot(docs, source, seed=seed, lenient=lenient)
    w = Workload(
        name=Path(path).stem,
        objects=snap.objects,
        node_docs=snap.node_docs,
        invalid=snap.invalid,
        warnings=snap.warnings,
        terminal=snap.terminal,
        created=snap.created,
    )
    w.pod_groups.append(PodGroup(name="pods", count=len(snap.pod_docs), docs=snap.pod_docs))
    return w
