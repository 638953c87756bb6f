"""Workload files: plain Kubernetes YAML, or the project's compact Workload format.

Plain YAML: every non-Pod object is created first (nodes, namespaces, PDBs...), then the
pods in file order, as one group.

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

Lifetimes, arrival processes and traces drive ``--clock virtual`` runs
(``workload.virtual``); the real-time runner paces pods by ``rate`` and ignores them.

Each template is validated once, as a real object, before anything is created; a
malformed pod in plain YAML is reported (object and field) and skipped.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cluster_sched.api.files import read_text
from cluster_sched.api.manifest import load_documents, parse_object
from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.arrivals import Arrival, Lifetime, parse_arrival, parse_lifetime
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

    def manifests(self) -> Iterator[dict[str, Any]]:
        if self.trace is not None:
            yield from trace_manifests(self.trace, _name_prefix(self.template or {}), self.template)
            return
        if self.template is None:
            yield from self.docs
            return
        prefix = _name_prefix(self.template)
        for i in range(self.count):
            yield _instance(self.template, f"{prefix}{i}", self.labels, i)

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
    node_docs: list[dict[str, Any]] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    #: one line per skipped malformed object
    invalid: list[str] = field(default_factory=list)

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
    template: Mapping[str, Any], name: str, labels: Mapping[str, Sequence[str]], i: int
) -> dict[str, Any]:
    doc = copy.deepcopy(dict(template))
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


def _check(doc: Mapping[str, Any], source: str) -> None:
    parse_object(doc, source)


def _int(value: Any, field_: str, source: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidObjectError(
            f"must be a non-negative integer, got {value!r}",
            obj=f"Workload {source}",
            field=field_,
            source=source,
        )
    return value


def _parse_workload(doc: Mapping[str, Any], source: str) -> Workload:
    spec = doc.get("spec") or {}
    name = (doc.get("metadata") or {}).get("name") or Path(source).stem
    w = Workload(name=name)
    for i, obj in enumerate(spec.get("objects") or []):
        try:
            _check(obj, source)
        except InvalidObjectError as err:
            raise err.located(field_prefix=f"spec.objects[{i}]") from None
        w.objects.append(dict(obj))
    for gi, group in enumerate(spec.get("nodeGroups") or []):
        path = f"spec.nodeGroups[{gi}]"
        count = _int(group.get("count"), f"{path}.count", source)
        template = group.get("template") or {}
        labels = group.get("labels") or {}
        first = _instance(template, f"{_name_prefix(template)}0", labels, 0)
        try:
            _check(first, source)
        except InvalidObjectError as err:
            raise err.located(field_prefix=f"{path}.template") from None
        prefix = _name_prefix(template)
        w.node_docs.extend(_instance(template, f"{prefix}{i}", labels, i) for i in range(count))
    for ni, node in enumerate(spec.get("nodes") or []):
        try:
            _check(node, source)
        except InvalidObjectError as err:
            raise err.located(field_prefix=f"spec.nodes[{ni}]") from None
        w.node_docs.append(dict(node))
    for gi, group in enumerate(spec.get("podGroups") or []):
        path = f"spec.podGroups[{gi}]"
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
        try:
            if trace is not None:
                for doc in trace_manifests(trace, _name_prefix(template), template):
                    _check(doc, source)  # each record differs: check them all
            else:
                _check(_instance(template, f"{_name_prefix(template)}0", labels, 0), source)
        except InvalidObjectError as err:
            raise err.located(field_prefix=f"{path}.template") from None
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
    return w


def load_workload(path: str | Path) -> Workload:
    """Read a workload file (either format)."""
    source = str(path)
    text = read_text(path, "workload")
    docs = load_documents(text, source)
    if len(docs) == 1 and docs[0].get("kind") == KIND:
        if docs[0].get("apiVersion") != API_VERSION:
            raise InvalidObjectError(
                f'unsupported apiVersion "{docs[0].get("apiVersion")}", expected "{API_VERSION}"',
                obj=f"Workload {Path(path).stem}",
                field="apiVersion",
                source=source,
            )
        return _parse_workload(docs[0], source)
    w = Workload(name=Path(path).stem)
    pods: list[dict[str, Any]] = []
    for doc in docs:
        kind = doc.get("kind")
        try:
            _check(doc, source)
        except InvalidObjectError as err:
            if kind == "Pod":
                w.invalid.append(str(err))
                continue
            raise
        if kind == "Pod":
            pods.append(doc)
        elif kind == "Node":
            w.node_docs.append(doc)
        else:
            w.objects.append(doc)
    w.pod_groups.append(PodGroup(name="pods", count=len(pods), docs=pods))
    return w
