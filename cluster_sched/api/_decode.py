"""Typed readers for manifest dicts: each checks one JSON type and names the field.

Every reader takes the raw value and its JSON path and raises InvalidObjectError with
only ``field`` set; ``manifest`` adds the object and the file on the way out. Readers
treat an absent key and an explicit ``null`` alike, as Go's JSON decoding does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import msgpack  # type: ignore[import-untyped]

from cluster_sched.api import selectors
from cluster_sched.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
)
from cluster_sched.errors import InvalidObjectError

_EMPTY: Mapping[str, Any] = {}
_T = TypeVar("_T")


class ParseCache(Generic[_T]):
    """Parse results by the value parsed, for sub-documents many objects repeat.

    The key is the value's msgpack encoding with exact types (a tuple, or a subclass of
    str, int or dict, may read differently from the list or plain value that would
    encode the same; such values, and any that cannot be encoded, are parsed every
    time). Sharing a result is safe because parsing is a pure function of the value and
    its results are immutable values. Errors are not cached: an invalid value raises
    every time. Bounded: past ``size`` entries the oldest is dropped.
    """

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[bytes, _T] = {}

    def get_or_parse(
        self, value: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], _T]
    ) -> _T:
        try:
            key: bytes | None = msgpack.packb(value, strict_types=True, use_bin_type=True)
        except (TypeError, ValueError, OverflowError):
            key = None
        if key is not None:
            found = self._entries.get(key)
            if found is not None:
                return found
        result = parse(value)
        if key is not None:
            if len(self._entries) >= self._size:
                self._entries.pop(next(iter(self._entries)), None)
            self._entries[key] = result
        return result


_JSON_TYPES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


def describe(value: object) -> str:
    """JSON-flavoured type name of a decoded value: 'a string', 'a list'..."""
    for kind, name in _JSON_TYPES.items():
        if type(value) is kind:
            return name
    if isinstance(value, dt.date):
        return "a timestamp"
    return type(value).__name__


def wrong_type(value: object, want: str, field: str) -> InvalidObjectError:
    return InvalidObjectError(f"must be {want}, got {describe(value)}", field=field)


def mapping(value: object, field: str) -> Mapping[str, Any]:
    if value is None:
        return _EMPTY
    if not isinstance(value, dict):
        raise wrong_type(value, "an object", field)
    return value


def seq(value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise wrong_type(value, "a list", field)
    return value


def string(value: object, field: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise wrong_type(value, "a string", field)
    return value


def required_string(value: object, field: str) -> str:
    text = string(value, field)
    if not text:
        raise InvalidObjectError("required value is missing or empty", field=field)
    return text


#: The ranges of Go's int32 and int64, which the API server's JSON decoding enforces.
INT_RANGES = {32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}


def integer(value: object, field: str, default: int | None = None, *, bits: int = 64) -> int | None:
    """Go decodes int32/int64 fields from integral JSON numbers only, and rejects a
    number past the field's width (``cannot unmarshal number ... of type int32``)."""
    if value is None:
        return default
    if type(value) is int:
        number = value
    elif type(value) is float and value.is_integer():
        number = int(value)
    else:
        raise wrong_type(value, "an integer", field)
    low, high = INT_RANGES[bits]
    if not low <= number <= high:
        # str() of a huge int is slow, and refused past 4300 digits: name its size.
        shown = str(number) if number.bit_length() <= 128 else f"a {number.bit_length()}-bit number"
        raise InvalidObjectError(
            f"{shown} is out of the int{bits} range ({low} to {high})", field=field
        )
    return number


def boolean(value: object, field: str, default: bool = False) -> bool:
    if value is None:
        return default
    if type(value) is not bool:
        raise wrong_type(value, "a boolean (true or false)", field)
    return value


def string_list(value: object, field: str) -> tuple[str, ...]:
    items = seq(value, field)
    for i, item in enumerate(items):
        if type(item) is not str:
            raise wrong_type(item, "a string", f"{field}[{i}]")
    return tuple(items)


def string_map(value: object, field: str) -> dict[str, str]:
    """A map[string]string (labels, annotations, nodeSelector). Keys and values must be
    strings: the API server rejects ``version: 1`` as a number."""
    items = mapping(value, field)
    for key, item in items.items():
        if type(item) is not str:
            raise wrong_type(item, "a string", f"{field}.{key}")
        if type(key) is not str:
            raise wrong_type(key, "a string key", field)
    return dict(items)


def label_map(value: object, field: str) -> dict[str, str]:
    """A map whose keys are label keys and values label values (labels, selectors)."""
    labels = string_map(value, field)
    for key, item in labels.items():
        selectors.validate_label_key(key, field)
        selectors.validate_label_value(item, f"{field}.{key}")
    return labels


def timestamp(value: object, field: str) -> float | None:
    """RFC 3339 (``2024-05-01T10:00:00Z``) to seconds since the epoch.

    YAML loaders turn unquoted timestamps into datetime objects; those are accepted too,
    naive ones read as UTC.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            raise InvalidObjectError(
                f"{value!r} is not an RFC 3339 timestamp (like 2024-05-01T10:00:00Z)",
                field=field,
            ) from None
    elif isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, dt.date):
        parsed = dt.datetime(value.year, value.month, value.day)
    else:
        raise wrong_type(value, "an RFC 3339 timestamp string", field)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


# --- metadata ------------------------------------------------------------------------------


#: The labels and annotations of every object that has none: one shared empty map rather
#: than two fresh dicts per object (128 bytes each of a million pods and nodes). Parsed
#: objects are values (frozen dataclasses): nothing writes into their maps.
_NO_ENTRIES: dict[str, str] = {}


def object_meta(doc: Mapping[str, Any], *, namespaced: bool, dns_label: bool = False) -> ObjectMeta:
    """metadata: name required; namespace defaults to ``default`` for namespaced kinds
    and is dropped for cluster-scoped ones, as the API server does."""
    meta = mapping(doc.get("metadata"), "metadata")
    name = string(meta.get("name"), "metadata.name")
    if not name:
        hint = " (generateName is not supported)" if meta.get("generateName") else ""
        raise InvalidObjectError(f"required value is missing{hint}", field="metadata.name")
    if dns_label:
        selectors.validate_dns_label(name, "metadata.name")
    else:
        selectors.validate_dns_subdomain(name, "metadata.name")
    namespace = ""
    if namespaced:
        namespace = string(meta.get("namespace"), "metadata.namespace") or "default"
        selectors.validate_dns_label(namespace, "metadata.namespace")
    created = timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp")
    owners = tuple(
        _owner_reference(item, f"metadata.ownerReferences[{i}]")
        for i, item in enumerate(seq(meta.get("ownerReferences"), "metadata.ownerReferences"))
    )
    labels = meta.get("labels")
    annotations = meta.get("annotations")
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=string(meta.get("uid"), "metadata.uid"),
        labels=label_map(labels, "metadata.labels") if labels else _NO_ENTRIES,
        annotations=string_map(annotations, "metadata.annotations") if annotations else _NO_ENTRIES,
        creation_timestamp=created or 0.0,
        deletion_timestamp=timestamp(meta.get("deletionTimestamp"), "metadata.deletionTimestamp"),
        owner_references=owners,
        resource_version=string(meta.get("resourceVersion"), "metadata.resourceVersion"),
    )


def _owner_reference(value: object, field: str) -> OwnerReference:
    ref = mapping(value, field)
    return OwnerReference(
        kind=required_string(ref.get("kind"), f"{field}.kind"),
        name=required_string(ref.get("name"), f"{field}.name"),
        uid=string(ref.get("uid"), f"{field}.uid"),
        controller=boolean(ref.get("controller"), f"{field}.controller"),
        api_version=string(ref.get("apiVersion"), f"{field}.apiVersion"),
    )


# --- selectors -----------------------------------------------------------------------------


def label_selector(value: object, field: str) -> LabelSelector | None:
    """metav1.LabelSelector; absent/null is None (matches nothing), ``{}`` matches all."""
    if value is None:
        return None
    sel = mapping(value, field)
    match_labels = label_map(sel.get("matchLabels"), f"{field}.matchLabels")
    expressions = []
    path = f"{field}.matchExpressions"
    for i, item in enumerate(seq(sel.get("matchExpressions"), path)):
        expr = mapping(item, f"{path}[{i}]")
        req = LabelSelectorRequirement(
            key=string(expr.get("key"), f"{path}[{i}].key"),
            operator=string(expr.get("operator"), f"{path}[{i}].operator"),
            values=string_list(expr.get("values"), f"{path}[{i}].values"),
        )
        selectors.validate_label_requirement(req, f"{path}[{i}]")
        expressions.append(req)
    return LabelSelector(
        match_labels=tuple(sorted(match_labels.items())), match_expressions=tuple(expressions)
    )


def _node_requirements(
    value: object, field: str, *, fields: bool
) -> tuple[NodeSelectorRequirement, ...]:
    out = []
    for i, item in enumerate(seq(value, field)):
        path = f"{field}[{i}]"
        expr = mapping(item, path)
        req = NodeSelectorRequirement(
            key=string(expr.get("key"), f"{path}.key"),
            operator=string(expr.get("operator"), f"{path}.operator"),
            values=string_list(expr.get("values"), f"{path}.values"),
        )
        if fields:
            selectors.validate_node_field_requirement(req, path)
        else:
            selectors.validate_node_requirement(req, path)
        out.append(req)
    return tuple(out)


def node_selector_term(value: object, field: str) -> NodeSelectorTerm:
    term = mapping(value, field)
    return NodeSelectorTerm(
        match_expressions=_node_requirements(
            term.get("matchExpressions"), f"{field}.matchExpressions", fields=False
        ),
        match_fields=_node_requirements(
            term.get("matchFields"), f"{field}.matchFields", fields=True
        ),
    )


def node_selector(value: object, field: str) -> NodeSelector | None:
    """v1.NodeSelector (required node affinity): at least one term, as the API requires."""
    if value is None:
        return None
    sel = mapping(value, field)
    path = f"{field}.nodeSelectorTerms"
    terms = seq(sel.get("nodeSelectorTerms"), path)
    if not terms:
        raise InvalidObjectError("must have at least one node selector term", field=path)
    return NodeSelector(
        terms=tuple(node_selector_term(term, f"{path}[{i}]") for i, term in enumerate(terms))
    )
