"""Kubernetes manifests (YAML or JSON) to the typed objects of ``api.objects``.

Kinds: v1 Pod, Node, Namespace, Service, ReplicationController, PersistentVolume,
PersistentVolumeClaim; policy/v1 PodDisruptionBudget; apps/v1 ReplicaSet, StatefulSet;
scheduling.k8s.io/v1 PriorityClass; storage.k8s.io/v1 StorageClass, CSINode, CSIDriver;
resource.k8s.io/v1 DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate.
``kind: List`` (and typed lists such as ``PodList``) are flattened.

Every problem is an InvalidObjectError (QuantityError for quantities) whose one-line
message names the file, the object and the field::

    pods.yaml: Pod default/web-1: field spec.containers[0].resources.requests.cpu: ...

Parsing is on the hot path of loading big workloads (100k pods): quantity strings and
label keys are parsed once and cached, and field paths are built only where needed.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from os import PathLike
from typing import Any, ParamSpec, TypeVar

import yaml  # type: ignore[import-untyped, unused-ignore]

from cluster_sched.api import _decode as d
from cluster_sched.api._pod import PREEMPTION_POLICIES, TAINT_EFFECTS, decode_pod, resource_list
from cluster_sched.api._volumes import (
    decode_csidriver,
    decode_csinode,
    decode_pv,
    decode_pvc,
    decode_storage_class,
)
from cluster_sched.api.files import read_text
from cluster_sched.api.objects import (
    ContainerImage,
    KubeObject,
    LabelSelector,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    Taint,
    WorkloadController,
)
from cluster_sched.api.selectors import validate_label_key, validate_label_value
from cluster_sched.api.storage import StorageObject
from cluster_sched.errors import InvalidObjectError

__all__ = [
    "KINDS",
    "AnyObject",
    "load_documents",
    "load_file",
    "parse_namespace",
    "parse_node",
    "parse_object",
    "parse_objects",
    "parse_pdb",
    "parse_pod",
    "parse_priority_class",
    "parse_workload_controller",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")

_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_JSON_START = re.compile(r'\s*[\[{][\s\[{]*(["\]}]|$)')


# Manifest text can smuggle line breaks into names and keys; messages stay on one line.
_ONE_LINE = {code: repr(chr(code))[1:-1] for code in (*range(32), 127, 0x85, 0x2028, 0x2029)}


def _escaped(err: InvalidObjectError) -> InvalidObjectError:
    """The same error with every part escaped onto one line."""
    return type(err)(
        err.reason.translate(_ONE_LINE),
        obj=err.obj.translate(_ONE_LINE),
        field=err.field.translate(_ONE_LINE),
        source=err.source.translate(_ONE_LINE),
    )


def _one_line_errors(func: Callable[_P, _T]) -> Callable[_P, _T]:
    """Public entry points re-raise InvalidObjectError escaped onto one line."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return func(*args, **kwargs)
        except InvalidObjectError as err:
            raise _escaped(err) from None

    return wrapper


# --- documents -------------------------------------------------------------------------------


def _yaml_error(err: yaml.YAMLError, source: str) -> InvalidObjectError:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if "nesting depth" in problem:
        # PyYAML >= 6.0.4 stops at a depth limit before Python's recursion limit: one
        # message for both, whichever stops first.
        return InvalidObjectError(f"{where}document is nested too deeply", source=source)
    return InvalidObjectError(f"{where}invalid YAML: {problem}", source=source)


def _json_documents(text: str, source: str) -> list[Any]:
    """One JSON value, or several back to back (JSON lines, concatenated objects)."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise InvalidObjectError(
                f"line {err.lineno}, column {err.colno}: invalid JSON: {err.msg}", source=source
            ) from None
        docs.append(doc)


def _flatten(docs: Iterable[Any], source: str) -> Iterator[dict[str, Any]]:
    for index, doc in enumerate(docs):
        if doc is None:
            continue  # empty YAML document ("---" twice)
        if isinstance(doc, list):  # a bare JSON/YAML array of objects
            yield from _flatten(doc, source)
            continue
        if not isinstance(doc, dict):
            raise InvalidObjectError(
                f"document {index + 1} is {d.describe(doc)}, not an object", source=source
            )
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            items = doc.get("items")
            if not isinstance(items, list):
                raise InvalidObjectError(
                    f"{kind}.items must be a list, got {d.describe(items)}", source=source
                )
            item_kind = kind[: -len("List")]
            if item_kind:  # a typed list (PodList): its items omit kind and apiVersion
                version = doc.get("apiVersion")
                items = [
                    {"kind": item_kind, "apiVersion": version, **item}
                    if isinstance(item, dict) and "kind" not in item
                    else item
                    for item in items
                ]
            yield from _flatten(items, source)
        else:
            yield doc


@_one_line_errors
def load_documents(text: str, source: str = "") -> list[dict[str, Any]]:
    """Every object in ``text`` (YAML or JSON, multi-document), Lists flattened and empty
    documents skipped. Syntax errors name ``source`` and the line."""
    # JSON is decoded by the json module (several times faster than YAML); a YAML flow
    # mapping ("{kind: Pod}") also opens with a brace but never with a quoted key.
    try:
        if _JSON_START.match(text):
            raw = _json_documents(text, source)
        else:
            try:
                raw = list(yaml.load_all(text, Loader=_YAML_LOADER))
            except yaml.YAMLError as err:
                raise _yaml_error(err, source) from None
        return list(_flatten(raw, source))
    except RecursionError:
        raise InvalidObjectError("document is nested too deeply", source=source) from None
    except (ValueError, OverflowError) as err:
        # A scalar the loaders cannot build: an integer past Python's 4300-digit
        # conversion limit, a timestamp in year 0...
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InvalidObjectError(f"cannot decode a value: {reason}", source=source) from None


# --- objects ------------------------------------------------------------------------------------


def _label(doc: Mapping[str, Any], kind: str, namespaced: bool) -> str:
    """``Kind namespace/name`` for error messages, from whatever the manifest holds."""
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name")
    name = name if isinstance(name, str) and name else "(unnamed)"
    if not namespaced:
        return f"{kind} {name}"
    namespace = meta.get("namespace")
    namespace = namespace if isinstance(namespace, str) and namespace else "default"
    return f"{kind} {namespace}/{name}"


#: Parsed node resource lists by value: a node pool's nodes report the same capacity and
#: allocatable, so a million nodes hold a few maps, not two each (ParseCache: why safe).
_NODE_RESOURCES = d.ParseCache[dict[str, int]](1024)


def _node_resources(value: object, field: str) -> dict[str, int]:
    if not isinstance(value, dict):
        return resource_list(value, field)[0]
    return _NODE_RESOURCES.get_or_parse(value, lambda v: resource_list(v, field)[0])


def _decode_node(doc: Mapping[str, Any]) -> Node:
    meta = d.object_meta(doc, namespaced=False)
    spec = d.mapping(doc.get("spec"), "spec")
    status = d.mapping(doc.get("status"), "status")
    capacity = _node_resources(status.get("capacity"), "status.capacity")
    if status.get("allocatable") is None:
        allocatable = dict(capacity)
    else:
        allocatable = _node_resources(status.get("allocatable"), "status.allocatable")
    taints: list[Taint] = []
    for i, item in enumerate(d.seq(spec.get("taints"), "spec.taints")):
        field = f"spec.taints[{i}]"
        raw = d.mapping(item, field)
        key = d.required_string(raw.get("key"), f"{field}.key")
        validate_label_key(key, f"{field}.key")
        value = d.string(raw.get("value"), f"{field}.value")
        validate_label_value(value, f"{field}.value")
        effect = d.required_string(raw.get("effect"), f"{field}.effect")
        if effect not in TAINT_EFFECTS:
            raise InvalidObjectError(
                f"unsupported taint effect {effect!r} (want one of {', '.join(sorted(TAINT_EFFECTS))})",
                field=f"{field}.effect",
            )
        taint = Taint(key=key, value=value, effect=effect)
        if any(t.key == key and t.effect == effect for t in taints):
            raise InvalidObjectError(f"duplicate taint {key!r} with effect {effect!r}", field=field)
        taints.append(taint)
    images = []
    for i, item in enumerate(d.seq(status.get("images"), "status.images")):
        raw = d.mapping(item, f"status.images[{i}]")
        size = d.integer(raw.get("sizeBytes"), f"status.images[{i}].sizeBytes", 0) or 0
        images.append(
            ContainerImage(
                names=d.string_list(raw.get("names"), f"status.images[{i}].names"), size_bytes=size
            )
        )
    return Node(
        meta=meta,
        allocatable=allocatable,
        capacity=capacity,
        unschedulable=d.boolean(spec.get("unschedulable"), "spec.unschedulable"),
        taints=tuple(taints),
        images=tuple(images),
        raw=doc,
    )


def _decode_namespace(doc: Mapping[str, Any]) -> Namespace:
    return Namespace(meta=d.object_meta(doc, namespaced=False, dns_label=True), raw=doc)


def _int_or_percent(value: object, field: str) -> int | str | None:
    """IntOrString of a PDB: a non-negative integer or a percentage such as ``50%``."""
    if value is None:
        return None
    if type(value) is int:
        d.integer(value, field, bits=32)  # IntOrString holds an int32
        if value < 0:
            raise InvalidObjectError(
                f"must be greater than or equal to 0, got {value}", field=field
            )
        return value
    if isinstance(value, str):
        digits = value[:-1]
        if value.endswith("%") and digits.isascii() and digits.isdigit():
            if int(digits) > 100:
                raise InvalidObjectError(f"must not be greater than 100%, got {value}", field=field)
            return value
        raise InvalidObjectError(
            f"{value!r} must be an integer or a percentage (like 50%)", field=field
        )
    raise d.wrong_type(value, "an integer or a percentage string", field)


def _decode_pdb(doc: Mapping[str, Any]) -> PodDisruptionBudget:
    meta = d.object_meta(doc, namespaced=True)
    spec = d.mapping(doc.get("spec"), "spec")
    status = d.mapping(doc.get("status"), "status")
    min_available = _int_or_percent(spec.get("minAvailable"), "spec.minAvailable")
    max_unavailable = _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        raise InvalidObjectError("minAvailable and maxUnavailable cannot be both set", field="spec")
    disrupted = {}
    for name, when in d.mapping(status.get("disruptedPods"), "status.disruptedPods").items():
        disrupted[name] = d.timestamp(when, f"status.disruptedPods.{name}") or 0.0
    allowed = (
        d.integer(status.get("disruptionsAllowed"), "status.disruptionsAllowed", 0, bits=32) or 0
    )
    return PodDisruptionBudget(
        meta=meta,
        selector=d.label_selector(spec.get("selector"), "spec.selector"),
        min_available=min_available,
        max_unavailable=max_unavailable,
        disruptions_allowed=allowed,
        disrupted_pods=disrupted,
        raw=doc,
    )


def _map_selector(value: object, field: str) -> LabelSelector | None:
    """Service/RC ``spec.selector`` (a plain map): absent is None, which matches nothing."""
    if value is None:
        return None
    labels = d.label_map(value, field)
    return LabelSelector(match_labels=tuple(sorted(labels.items())))


def _decode_controller(doc: Mapping[str, Any]) -> WorkloadController:
    kind = doc["kind"]
    meta = d.object_meta(doc, namespaced=True)
    spec = d.mapping(doc.get("spec"), "spec")
    if kind == "Service":
        selector = _map_selector(spec.get("selector"), "spec.selector")
    elif kind == "ReplicationController":
        raw_selector = spec.get("selector")
        if not raw_selector:  # API-server default: the pod template's labels
            template = d.mapping(spec.get("template"), "spec.template")
            template_meta = d.mapping(template.get("metadata"), "spec.template.metadata")
            selector = _map_selector(template_meta.get("labels"), "spec.template.metadata.labels")
        else:
            selector = _map_selector(raw_selector, "spec.selector")
    else:
        selector = d.label_selector(spec.get("selector"), "spec.selector")
    return WorkloadController(kind=kind, meta=meta, selector=selector, raw=doc)


def _decode_priority_class(doc: Mapping[str, Any]) -> PriorityClass:
    meta = d.object_meta(doc, namespaced=False)
    value = d.integer(doc.get("value"), "value", bits=32)
    if value is None:
        raise InvalidObjectError("required value is missing", field="value")
    policy = d.string(doc.get("preemptionPolicy"), "preemptionPolicy") or "PreemptLowerPriority"
    if policy not in PREEMPTION_POLICIES:
        raise InvalidObjectError(
            f"unsupported value {policy!r} (want PreemptLowerPriority or Never)",
            field="preemptionPolicy",
        )
    return PriorityClass(
        meta=meta,
        value=value,
        global_default=d.boolean(doc.get("globalDefault"), "globalDefault"),
        preemption_policy=policy,
        raw=doc,
    )


#: Everything ``parse_object`` can return (the resource.k8s.io kinds are ``Any`` here).
AnyObject = KubeObject | StorageObject | Any


def _dra(name: str) -> Callable[[Mapping[str, Any]], Any]:
    """A resource.k8s.io decoder, imported when first used: ``dra`` builds on ``api``."""

    def decode(doc: Mapping[str, Any]) -> Any:
        from cluster_sched.dra import decode as dra_decode

        return getattr(dra_decode, name)(doc)

    return decode


_STORAGE = frozenset({"storage.k8s.io/v1"})
_DRA = frozenset({"resource.k8s.io/v1"})

#: kind → (accepted apiVersions, namespaced, decoder)
KINDS: Mapping[str, tuple[frozenset[str], bool, Callable[[Mapping[str, Any]], AnyObject]]] = {
    "Pod": (frozenset({"v1"}), True, decode_pod),
    "Node": (frozenset({"v1"}), False, _decode_node),
    "Namespace": (frozenset({"v1"}), False, _decode_namespace),
    "PodDisruptionBudget": (frozenset({"policy/v1", "policy/v1beta1"}), True, _decode_pdb),
    "Service": (frozenset({"v1"}), True, _decode_controller),
    "ReplicationController": (frozenset({"v1"}), True, _decode_controller),
    "ReplicaSet": (frozenset({"apps/v1"}), True, _decode_controller),
    "StatefulSet": (frozenset({"apps/v1"}), True, _decode_controller),
    "PriorityClass": (frozenset({"scheduling.k8s.io/v1"}), False, _decode_priority_class),
    "PersistentVolume": (frozenset({"v1"}), False, decode_pv),
    "PersistentVolumeClaim": (frozenset({"v1"}), True, decode_pvc),
    "StorageClass": (_STORAGE, False, decode_storage_class),
    "CSINode": (_STORAGE, False, decode_csinode),
    "CSIDriver": (_STORAGE, False, decode_csidriver),
    "DeviceClass": (_DRA, False, _dra("decode_device_class")),
    "ResourceSlice": (_DRA, False, _dra("decode_resource_slice")),
    "ResourceClaim": (_DRA, True, _dra("decode_resource_claim")),
    "ResourceClaimTemplate": (_DRA, True, _dra("decode_resource_claim_template")),
}


@_one_line_errors
def parse_object(doc: Mapping[str, Any], source: str = "") -> AnyObject:
    """One manifest dict to its typed object (``raw`` is ``doc`` itself, not a copy)."""
    if not isinstance(doc, dict):
        raise InvalidObjectError(
            f"an object must be a mapping, got {d.describe(doc)}", source=source
        )
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InvalidObjectError("object has no kind", field="kind", source=source)
    entry = KINDS.get(kind)
    if entry is None:
        unsupported = InvalidObjectError(
            f"unsupported kind {kind!r} (supported: {', '.join(sorted(KINDS))})", field="kind"
        )
        raise unsupported.located(obj=_label(doc, kind, False), source=source)
    versions, namespaced, decode = entry
    try:
        version = doc.get("apiVersion")
        if version is not None and (not isinstance(version, str) or version not in versions):
            raise InvalidObjectError(
                f"apiVersion {version!r} does not serve {kind} "
                f"(want {' or '.join(sorted(versions))})",
                field="apiVersion",
            )
        return decode(doc)
    except InvalidObjectError as err:
        raise err.located(obj=_label(doc, kind, namespaced), source=source) from None


@_one_line_errors
def _parse_kind(doc: Mapping[str, Any], source: str, kind: str) -> Any:
    if isinstance(doc, dict):
        actual = doc.get("kind")
        if actual is None:
            doc = {**doc, "kind": kind}  # a bare manifest handed to parse_pod() & co.
        elif actual != kind:
            raise InvalidObjectError(
                f"expected a {kind}, got {actual!r}",
                field="kind",
                source=source,
                obj=_label(doc, str(actual), False),
            )
    return parse_object(doc, source)


def parse_pod(doc: Mapping[str, Any], source: str = "") -> Pod:
    """A v1 Pod manifest (``kind`` may be omitted)."""
    return _parse_kind(doc, source, "Pod")  # type: ignore[no-any-return]


def parse_node(doc: Mapping[str, Any], source: str = "") -> Node:
    """A v1 Node manifest (``kind`` may be omitted)."""
    return _parse_kind(doc, source, "Node")  # type: ignore[no-any-return]


def parse_namespace(doc: Mapping[str, Any], source: str = "") -> Namespace:
    return _parse_kind(doc, source, "Namespace")  # type: ignore[no-any-return]


def parse_pdb(doc: Mapping[str, Any], source: str = "") -> PodDisruptionBudget:
    return _parse_kind(doc, source, "PodDisruptionBudget")  # type: ignore[no-any-return]


def parse_priority_class(doc: Mapping[str, Any], source: str = "") -> PriorityClass:
    return _parse_kind(doc, source, "PriorityClass")  # type: ignore[no-any-return]


@_one_line_errors
def parse_workload_controller(doc: Mapping[str, Any], source: str = "") -> WorkloadController:
    """A Service, ReplicationController, ReplicaSet or StatefulSet (``kind`` required)."""
    obj = parse_object(doc, source)
    if not isinstance(obj, WorkloadController):
        raise InvalidObjectError(
            "expected a Service, ReplicationController, ReplicaSet or StatefulSet, "
            f"got {doc.get('kind')!r}",
            field="kind",
            source=source,
        )
    return obj


def parse_objects(docs: Iterable[Mapping[str, Any]], source: str = "") -> list[AnyObject]:
    return [parse_object(doc, source) for doc in docs]


@_one_line_errors
def load_file(path: str | PathLike[str]) -> list[AnyObject]:
    """Every object of a YAML/JSON manifest file, in file order."""
    source = str(path)
    text = read_text(path, "manifest")
    return parse_objects(load_documents(text, source), source)
