"""OpenAPI v3 for the served kinds, so kubectl's default (strict) validation works.

kubectl asks ``/openapi/v3/<group-version>`` whether the PATCH operation of an object's
GVK takes a ``fieldValidation`` query parameter; if so it leaves validation to the server
(``?fieldValidation=Strict``) instead of failing with "failed to download openapi". The
documents carry that operation per resource, and the kinds' schemas (kubernetes-validate's
copies of Kubernetes' own definitions, the ones ``api.schema`` judges field names by),
which also give ``kubectl explain`` something to show.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from cluster_sched.api.schema import SCHEMA_VERSION
from cluster_sched.kubeapi.resources import RESOURCES, Resource, group_versions

__all__ = ["gv_document", "gv_path", "index_document", "schema_definitions"]

_REF_PREFIX = "#/$defs/"
_COMPONENTS = "#/components/schemas/"


@functools.cache
def schema_definitions() -> dict[str, Any]:
    """Kubernetes' definitions by name (``io.k8s.api.core.v1.Pod``), as shipped."""
    import importlib.resources

    root = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"
    path = root / f"v{SCHEMA_VERSION}.0-local-strict" / "_definitions.json"
    defs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    return defs


@functools.cache
def definition_for(group: str, version: str, kind: str) -> str | None:
    """The definition name whose x-kubernetes-group-version-kind is this GVK."""
    for name, schema in schema_definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (
                group,
                version,
                kind,
            ):
                return name
    return None


def _convert(value: Any, refs: set[str]) -> Any:
    """JSON-schema draft to OpenAPI 3.0: component refs, one type, no strictness."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str) and item.startswith(_REF_PREFIX):
                name = item[len(_REF_PREFIX) :]
                refs.add(name)
                out["$ref"] = _COMPONENTS + name
            elif key == "type" and isinstance(item, list):
                types = [t for t in item if t != "null"]
                if types:
                    out["type"] = types[0]
            elif key == "additionalProperties" and item is False:
                continue
            else:
                out[key] = _convert(item, refs)
        return out
    if isinstance(value, list):
        return [_convert(v, refs) for v in value]
    return value


def _schemas(roots: list[str]) -> dict[str, Any]:
    defs = schema_definitions()
    out: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in out or name not in defs:
            continue
        refs: set[str] = set()
        out[name] = _convert(defs[name], refs)
        todo.extend(refs - out.keys())
    return out


def gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _object_path(r: Resource) -> str:
    base = "/" + gv_path(r.group, r.version)
    ns = "/namespaces/{namespace}" if r.namespaced else ""
    return f"{base}{ns}/{r.plural}/{{name}}"


def _patch_operation(r: Resource, schema_name: str | None) -> dict[str, Any]:
    params = [
        {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
        for name in ("dryRun", "fieldManager", "fieldValidation", "force")
    ]
    body_schema = {"$ref": _COMPONENTS + schema_name} if schema_name else {"type": "object"}
    return {
        "operationId": f"patch{r.kind}",
        "parameters": params,
        "requestBody": {
            "content": {
                media: {"schema": {"type": "object"}}
                for media in (
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                )
            },
            "required": True,
        },
        "responses": {"200": {"content": {"application/json": {"schema": body_schema}}}},
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {
            "group": r.group,
            "version": r.version,
            "kind": r.kind,
        },
    }


@functools.cache
def _gv_document_bytes(group: str, version: str) -> bytes:
    paths: dict[str, Any] = {}
    roots: list[str] = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version) or r.kind == "Binding":
            continue
        name = definition_for(r.group, r.version, r.kind)
        if name:
            roots.append(name)
        paths[_object_path(r)] = {"patch": _patch_operation(r, name)}
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (cluster-sched)", "version": "v1.35.0"},
        "paths": paths,
        "components": {"schemas": _schemas(roots)},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def gv_document(group: str, version: str) -> bytes | None:
    """The OpenAPI v3 document of one served group-version, as JSON bytes."""
    if (group, version) not in group_versions():
        return None
    return _gv_document_bytes(group, version)


def index_document() -> dict[str, Any]:
    paths = {}
    for group, version in group_versions():
        path = gv_path(group, version)
        digest = hashlib.sha256(path.encode() + SCHEMA_VERSION.encode()).hexdigest()[:32].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
