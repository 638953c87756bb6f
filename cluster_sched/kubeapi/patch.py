"""The three patch types: strategic merge, JSON merge (RFC 7386) and JSON patch (RFC 6902).

Strategic merge follows apimachinery's documented semantics (``strategicpatch``): a list
whose schema says ``x-kubernetes-patch-strategy: merge`` is merged element by element on
its ``x-kubernetes-patch-merge-key`` (or as a set, for lists of primitives); every other
list is replaced whole; ``null`` deletes a field. The directives are ``$patch:
replace|delete|merge`` (on a map or a list element), ``$retainKeys``,
``$setElementOrder/<list>`` and ``$deleteFromPrimitiveList/<list>``; none is ever stored.
Strategies and merge keys come from Kubernetes' own definitions (``openapi``), so every
kind gets upstream's keys (containers by name, conditions by type, ports by containerPort).
A kind without a definition merges like JSON merge patch, as the API server does for CRDs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

from cluster_sched.kubeapi.errors import ApiError, bad_request
from cluster_sched.kubeapi.openapi import definition_for, schema_definitions

__all__ = [
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

_PATCH = "$patch"
_RETAIN = "$retainKeys"
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_REF = "#/$defs/"


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out


def apply_json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 via ``jsonpatch``; a malformed or failing patch is a 422 as upstream."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    try:
        return jsonpatch.JsonPatch(ops).apply(target)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from None
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as exc:
        raise ApiError(422, "Invalid", f"invalid json patch: {exc}") from None


def _resolve(schema: Any) -> dict[str, Any]:
    """Follow ``$ref`` (and a single ``allOf``) to the schema that has properties."""
    defs = schema_definitions()
    seen = 0
    while isinstance(schema, dict) and seen < 8:
        seen += 1
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            schema = defs.get(ref[len(_REF) :], {})
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            schema = all_of[0]
            continue
        return schema
    return schema if isinstance(schema, dict) else {}


def _child(schema: dict[str, Any], key: str) -> dict[str, Any]:
    props = schema.get("properties")
    if isinstance(props, dict) and key in props:
        return props[key]  # type: ignore[no-any-return]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else {}


def _strategy(field_schema: dict[str, Any]) -> tuple[set[str], str | None]:
    raw = field_schema.get("x-kubernetes-patch-strategy") or ""
    key = field_schema.get("x-kubernetes-patch-merge-key")
    return set(str(raw).split(",")) - {""}, key if isinstance(key, str) else None


def apply_strategic_merge_patch(
    target: dict[str, Any], patch: Any, group: str, version: str, kind: str
) -> dict[str, Any]:
    """``patch`` merged into ``target`` with the strategies of the kind's definition."""
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    name = definition_for(group, version, kind)
    schema = schema_definitions().get(name, {}) if name else {}
    out = _merge_map(target, patch, schema if isinstance(schema, dict) else {})
    return out if out is not None else {}


def _merge_map(
    original: Any, patch: dict[str, Any], schema: dict[str, Any]
) -> dict[str, Any] | None:
    """One map level; None when the patch says ``$patch: delete``."""
    schema = _resolve(schema)
    directive = patch.get(_PATCH)
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if k != _PATCH}
    if directive == "replace":
        return _strip(body)
    if directive not in (None, "merge"):
        raise bad_request(f"Unknown patch type: {directive}")
    out = dict(original) if isinstance(original, dict) else {}
    retain = body.pop(_RETAIN, None)
    orders = {k[len(_ORDER) :]: body.pop(k) for k in list(body) if k.startswith(_ORDER)}
    removals = {
        k[len(_DELETE_PRIMITIVE) :]: body.pop(k)
        for k in list(body)
        if k.startswith(_DELETE_PRIMITIVE)
    }
    for key, value in body.items():
        field_schema = _child(schema, key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(out.get(key), value, field_schema)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, field_schema)
        else:
            out[key] = value
    for key, values in removals.items():
        if isinstance(out.get(key), list) and isinstance(values, list):
            out[key] = [v for v in out[key] if v not in values]
    for key, order in orders.items():
        if isinstance(out.get(key), list) and isinstance(order, list):
            out[key] = _ordered(out[key], order, _strategy(_child(schema, key))[1])
    if isinstance(retain, list):
        keep = set(retain)
        out = {k: v for k, v in out.items() if k in keep}
    return out


def _merge_list(original: Any, patch: list[Any], field_schema: dict[str, Any]) -> list[Any]:
    strategies, merge_key = _strategy(field_schema)
    items_schema = field_schema.get("items") if isinstance(field_schema.get("items"), dict) else {}
    if any(isinstance(p, dict) and p.get(_PATCH) == "replace" for p in patch):
        return [_strip(p) for p in patch if not (isinstance(p, dict) and _PATCH in p)]
    if "merge" not in strategies:
        return [_strip(p) for p in patch]
    base = list(original) if isinstance(original, list) else []
    if merge_key is None:  # a set of primitives
        out = list(base)
        for value in patch:
            if value not in out:
                out.append(value)
        return out
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise bad_request(f"map: {item!r} does not contain declared merge key: {merge_key}")
        key_value = item[merge_key]
        at = next(
            (
                i
                for i, o in enumerate(base)
                if isinstance(o, dict) and o.get(merge_key) == key_value
            ),
            None,
        )
        if item.get(_PATCH) == "delete":
            if at is not None:
                base.pop(at)
            continue
        merged = _merge_map(base[at] if at is not None else {}, item, items_schema or {})
        if merged is None:
            continue
        if at is None:
            base.append(merged)
        else:
            base[at] = merged
    return base


def _ordered(items: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    """Elements named in ``order`` in that order, then the others in their own order."""

    def ident(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    wanted = [o.get(merge_key) if merge_key and isinstance(o, dict) else o for o in order]
    rank = {repr(w): i for i, w in enumerate(wanted)}
    named = sorted(
        (it for it in items if repr(ident(it)) in rank), key=lambda it: rank[repr(ident(it))]
    )
    rest = [it for it in items if repr(ident(it)) not in rank]
    return named + rest


def _strip(value: Any) -> Any:
    """A value with every patch directive removed (nothing ``$``-prefixed is stored)."""
    if isinstance(value, Mapping):
        return {
            k: _strip(v) for k, v in value.items() if not (isinstance(k, str) and _is_directive(k))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _is_directive(key: str) -> bool:
    return key in (_PATCH, _RETAIN) or key.startswith((_ORDER, _DELETE_PRIMITIVE))
