"""The objects a scheduler_perf workload creates: templates, names, node strategies.

Upstream renders every template file with Go's text/template (``{{.Index}}``,
``{{.Count}}`` and the op's ``templateParams``) before decoding it. cluster-sched renders
the ``{{.Name}}`` placeholders and upstream's ``{{DivideInt A B}}`` function (integer
division of two placeholders or numbers), which is what the shipped configs' templates
use; any other template action is an error naming the file. A file without placeholders is
decoded once and copied per object.

Objects upstream creates with ``generateName`` get ``<generateName><n>`` here, ``n``
counting per namespace and prefix, so a seeded run names everything the same way twice.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cluster_sched.api.files import read_text
from cluster_sched.api.manifest import load_documents, parse_object
from cluster_sched.api.tree import copy_tree
from cluster_sched.errors import InvalidObjectError
from cluster_sched.store.kinds import NAMESPACED_KINDS
from cluster_sched.workload.perf.ops import CreateNodes
from cluster_sched.workload.snapshot import unknown_field_errors

__all__ = ["Namer", "Template", "base_node", "base_pod", "namespace_doc", "prepare_node"]

HOSTNAME_LABEL = "kubernetes.io/hostname"
_ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_PLACEHOLDER = re.compile(r"^-?\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*-?$")
#: upstream's template functions (scheduler_perf getSpecFromTextTemplateFile): ``DivideInt``
_DIVIDE = re.compile(r"^-?\s*DivideInt\s+(\S+)\s+(\S+)\s*-?$")


def base_pod() -> dict[str, Any]:
    """The pod upstream creates without a template (makeBasePod + testutils.MakePodSpec)."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": dict(resources), "requests": dict(resources)},
                }
            ]
        },
    }


def base_node(prefix: str) -> dict[str, Any]:
    """The node upstream creates without a template (makeBaseNode): 4 CPU, 32Gi, 110 pods."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": prefix},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def namespace_doc(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


class Template:
    """One object template: a file rendered per object, or a built-in default."""

    def __init__(
        self,
        path: Path | None,
        default: dict[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.source = str(path) if path is not None else "<built-in>"
        self.params = dict(params or {})
        self._text = ""
        self._schema_checked = False
        self._static: dict[str, Any] | None = default
        if path is not None:
            self._text = read_text(path, "template")
            self._static = None if "{{" in self._text else self._decode(self._text)
        if self._static is not None:
            self._check(self._static)  # a bad template fails before anything runs

    @property
    def templated(self) -> bool:
        return self._static is None

    def render(self, index: int, count: int) -> dict[str, Any]:
        """The object for the ``index``-th of ``count`` objects (a fresh dict)."""
        if self._static is not None:
            return copy_tree(self._static)
        env = {**self.params, "Index": index, "Count": count}

        def value(arg: str) -> Any:
            placeholder = _PLACEHOLDER.match(arg)
            if placeholder is None:
                return None
            key = placeholder.group(1)
            if key not in env:
                raise InvalidObjectError(f"template refers to undefined .{key}", source=self.source)
            return env[key]

        def integer(arg: str) -> int:
            v = value(arg) if arg.startswith(".") else (int(arg) if arg.isdigit() else None)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidObjectError(
                    f"DivideInt needs integers, got {arg!r}", source=self.source
                )
            return v

        def substitute(match: re.Match[str]) -> str:
            inner = match.group(1).strip()
            divide = _DIVIDE.match(inner)
            if divide is not None:
                divisor = integer(divide.group(2))
                if divisor == 0:
                    raise InvalidObjectError("DivideInt: division by zero", source=self.source)
                return str(int(integer(divide.group(1)) / divisor))  # Go truncates
            if _PLACEHOLDER.match(inner) is None:
                raise InvalidObjectError(
                    f"unsupported template action {match.group(0)!r} "
                    "(cluster-sched renders {{.Name}} placeholders and DivideInt only)",
                    source=self.source,
                )
            return str(value(inner))

        doc = self._decode(_ACTION.sub(substitute, self._text))
        self._check(doc)
        return doc

    def _check(self, doc: dict[str, Any]) -> None:
        """Validate as the API server would, once the object has its generated name."""
        meta = doc.get("metadata")
        if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
            meta = {k: v for k, v in meta.items() if k != "generateName"}
            doc = {**doc, "metadata": {**meta, "name": "generated"}}
        parse_object(doc, self.source)
        if not self._schema_checked:
            # Kubernetes' schema once per template (its rendered objects differ only in
            # placeholder values): a typo is refused as in any other input file.
            self._schema_checked = True
            for err in unknown_field_errors(doc, self.source):
                raise err

    def _decode(self, text: str) -> dict[str, Any]:
        docs = load_documents(text, self.source)
        if len(docs) != 1:
            raise InvalidObjectError(
                f"a template must hold exactly one object, found {len(docs)}", source=self.source
            )
        return docs[0]


class Namer:
    """Names for objects created from ``generateName`` templates: ``<prefix><n>``."""

    def __init__(self) -> None:
        self._next: dict[tuple[str, str], int] = {}

    def name(self, doc: dict[str, Any], namespace: str = "") -> str:
        """Give ``doc`` a name (kept if it has one) and return it."""
        meta = doc.setdefault("metadata", {})
        if meta.get("name"):
            meta.pop("generateName", None)
            return str(meta["name"])
        prefix = str(meta.pop("generateName", None) or f"{str(doc.get('kind', 'obj')).lower()}-")
        n = self._next.get((namespace, prefix), 0)
        self._next[(namespace, prefix)] = n + 1
        meta["name"] = f"{prefix}{n}"
        return str(meta["name"])


def place(doc: dict[str, Any], namespace: str, namer: Namer) -> tuple[str, str]:
    """Set ``doc``'s namespace (for namespaced kinds) and name; return (kind, store key)."""
    kind = str(doc.get("kind"))
    if kind in NAMESPACED_KINDS:
        doc.setdefault("metadata", {})["namespace"] = namespace
        return kind, f"{namespace}/{namer.name(doc, namespace)}"
    return kind, namer.name(doc)


def prepare_node(doc: dict[str, Any], op: CreateNodes, index: int, rng: random.Random) -> None:
    """Apply the op's node strategy to the ``index``-th node (upstream PrepareNodes: at
    most one strategy, NodeAllocatable over LabelNode over UniqueNodeLabel)."""
    meta = doc.setdefault("metadata", {})
    labels = meta.setdefault("labels", {}) or {}
    meta["labels"] = labels
    labels[HOSTNAME_LABEL] = meta["name"]
    if op.node_allocatable:
        status = doc.setdefault("status", {})
        # The API server defaults allocatable to capacity; the strategy then overrides.
        allocatable = dict(status.get("allocatable") or status.get("capacity") or {})
        allocatable.update(op.node_allocatable)
        status["allocatable"] = allocatable
    elif op.label_strategy is not None:
        key, values = op.label_strategy
        labels[key] = values[index % len(values)]
    elif op.unique_label_key is not None:
        labels[op.unique_label_key] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
