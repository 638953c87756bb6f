"""Fields Kubernetes does not know, found with Kubernetes' own OpenAPI schemas.

A typo such as ``nodeSelecter`` decodes silently in Go's lenient JSON (the field is just
dropped), so a snapshot with one would schedule a pod without the selector its author
meant. ``kubectl apply`` refuses it (server-side field validation, ``Strict``); so do we.

The schemas are kubernetes-validate's "strict" JSON schemas (``additionalProperties:
false`` on every struct), for the Kubernetes minor the scheduler follows
(``SCHEMA_VERSION``) and the newest one the package ships: a field is unknown only if
neither knows it, so a snapshot of a newer cluster (whose new fields this scheduler
ignores, as a v1.35 kube-scheduler would) loads without complaint. Only unknown fields
are looked for: types and values are the decoders' job (``api.manifest``), which name
the field in their own words. A field Kubernetes knows but the project does not model
is accepted silently.

Speed: the definitions are compiled once into a small tree of ``_Struct`` nodes (a dict
of property → node per struct); checking an object walks its keys once, in Python, at
well under a microsecond per key. Free-form parts (``metadata.managedFields[].fieldsV1``,
maps such as labels) are not walked.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SCHEMA_VERSION", "has_schema", "schema_versions", "unknown_fields"]

#: The Kubernetes minor whose schemas judge field names (the scheduler's own version).
SCHEMA_VERSION = "1.35"

_DEFS_PREFIX = "#/$defs/"
#: At most this many unknown fields are listed per object (the first ones, in file order).
MAX_REPORTED = 5


@dataclass(slots=True)
class _Struct:
    """One schema node: known properties (None: anything goes below), a map's value
    schema, or a list's item schema. ``closed`` means unknown keys are errors."""

    properties: dict[str, _Struct | None] = field(default_factory=dict)
    closed: bool = False
    values: _Struct | None = None
    items: _Struct | None = None


class _Compiler:
    """Turns the ``$defs`` of kubernetes-validate's ``_definitions.json`` into _Struct
    trees, each definition once (recursive definitions share their node)."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.done: dict[str, _Struct | None] = {}

    def ref(self, name: str) -> _Struct | None:
        if name in self.done:
            return self.done[name]
        schema = self.defs.get(name)
        if schema is None:
            self.done[name] = None
            return None
        node = _Struct()
        self.done[name] = node  # before recursing: definitions refer to themselves
        compiled = self.node(schema)
        if compiled is None:
            self.done[name] = None
            return None
        node.properties, node.closed = compiled.properties, compiled.closed
        node.values, node.items = compiled.values, compiled.items
        return node

    def node(self, schema: Any) -> _Struct | None:
        if not isinstance(schema, Mapping):
            return None
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return None
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.ref(ref.split(_DEFS_PREFIX, 1)[-1])
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        items = schema.get("items")
        if isinstance(props, Mapping):
            return _Struct(
                properties={k: self.node(v) for k, v in props.items()},
                closed=extra is False,
                values=self.node(extra) if isinstance(extra, Mapping) else None,
            )
        if isinstance(extra, Mapping):
            values = self.node(extra)
            return None if values is None else _Struct(values=values)
        if isinstance(items, Mapping):
            item = self.node(items)
            return None if item is None else _Struct(items=item)
        return None  # a scalar, IntOrString, Quantity, free-form object


def _schema_root() -> Any:
    import importlib.resources

    return importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"


@functools.cache
def schema_versions() -> tuple[str, ...]:
    """``SCHEMA_VERSION`` and the newest minor kubernetes-validate ships, if newer."""
    shipped = []
    for entry in _schema_root().iterdir():
        name = entry.name
        if name.startswith("v") and name.endswith(".0-local-strict"):
            shipped.append(tuple(int(p) for p in name[1 : -len(".0-local-strict")].split(".")))
    newest = ".".join(map(str, max(shipped))) if shipped else SCHEMA_VERSION
    return (SCHEMA_VERSION,) if newest == SCHEMA_VERSION else (SCHEMA_VERSION, newest)


@functools.cache
def _top_level(version: str = SCHEMA_VERSION) -> dict[tuple[str, str], _Struct | None]:
    """(apiVersion, kind) → the compiled schema of every top-level Kubernetes kind."""
    path = _schema_root() / f"v{version}.0-local-strict" / "_definitions.json"
    defs = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    compiler = _Compiler(defs)
    out: dict[tuple[str, str], _Struct | None] = {}
    for name, schema in defs.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            group, version_, kind = gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind")
            api_version = f"{group}/{version_}" if group else version_
            if kind and (api_version, kind) not in out:
                out[(api_version, kind)] = compiler.ref(name)
    return out


def has_schema(api_version: str, kind: str) -> bool:
    """Does Kubernetes (``SCHEMA_VERSION`` or newer) serve ``kind`` at ``api_version``?"""
    return any((api_version, kind) in _top_level(v) for v in schema_versions())


def unknown_fields(doc: Mapping[str, Any]) -> list[str]:
    """JSON paths of the fields of ``doc`` no schema of ``schema_versions()`` knows for
    its kind (the first ``MAX_REPORTED``, in document order). Empty for kinds without a
    schema. The newer schema is consulted only when the first finds something."""
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return []
    found: list[str] | None = None
    for version in schema_versions():
        schema = _top_level(version).get((api_version, kind))
        if schema is None:
            continue
        out: list[str] = []
        _walk(doc, schema, "", out)
        found = out if found is None else [p for p in found if p in set(out)]
        if not found:
            return []
    return found or []


def _walk(value: Any, node: _Struct, path: str, out: list[str]) -> None:
    if type(value) is dict:
        props = node.properties
        for key, item in value.items():
            if key in props:
                child = props[key]
            elif node.values is not None:
                child = node.values
            elif node.closed:
                out.append(f"{path}.{key}" if path else str(key))
                if len(out) >= MAX_REPORTED:
                    return
                continue
            else:
                continue
            if child is not None and (type(item) is dict or type(item) is list):
                _walk(item, child, f"{path}.{key}" if path else str(key), out)
                if len(out) >= MAX_REPORTED:
                    return
    elif type(value) is list and node.items is not None:
        item_node = node.items
        for i, item in enumerate(value):
            if type(item) is dict or type(item) is list:
                _walk(item, item_node, f"{path}[{i}]", out)
                if len(out) >= MAX_REPORTED:
                    return
