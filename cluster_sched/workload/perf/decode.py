"""Decoding scheduler_perf ops as upstream does: strict, case-insensitive field names.

Upstream decodes each op with encoding/json into the struct its ``opcode`` picks, with
unknown fields disallowed; Go matches JSON keys to field names case-insensitively. The
decoders here do the same and name the offending field; template paths are resolved
against the config file's directory once, here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_sched.workload.perf.ops import (
    UNSUPPORTED_OPS,
    AllocResourceClaims,
    Barrier,
    Churn,
    CreateAny,
    CreateNamespaces,
    CreateNodes,
    CreatePods,
    CreatePodSets,
    CreateResourceClaims,
    CreateResourceDriver,
    DeletePods,
    FieldError,
    Op,
    Sleep,
    StartCollectingMetrics,
    StopCollectingMetrics,
    parse_duration,
    validate,
)

__all__ = ["OPS", "field_name", "parse_op"]


def _int(v: Any, ctx: _Ctx) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"must be an integer, got {v!r}")
    return v


def _str(v: Any, ctx: _Ctx) -> str:
    if not isinstance(v, str):
        raise ValueError(f"must be a string, got {v!r}")
    return v


def _param(v: Any, ctx: _Ctx) -> str:
    text = _str(v, ctx)
    if text and not text.startswith("$"):
        raise ValueError(f"must name a parameter as $name, got {text!r}")
    return text


def _bool(v: Any, ctx: _Ctx) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"must be true or false, got {v!r}")
    return v


def _path(v: Any, ctx: _Ctx) -> Path:
    return ctx.base / _str(v, ctx)


def _paths(v: Any, ctx: _Ctx) -> list[Path]:
    if not isinstance(v, list):
        raise ValueError(f"must be a list of paths, got {v!r}")
    return [_path(item, ctx) for item in v]


def _strs(v: Any, ctx: _Ctx) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ValueError(f"must be a list of strings, got {v!r}")
    return list(v)


def _str_map(v: Any, ctx: _Ctx) -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(x, str) for x in (*v, *v.values())):
        raise ValueError(f"must be a map of strings, got {v!r}")
    return dict(v)


def _any_map(v: Any, ctx: _Ctx) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ValueError(f"must be a map, got {v!r}")
    return dict(v)


def _duration(v: Any, ctx: _Ctx) -> float:
    return parse_duration(_str(v, ctx))


def _allocatable(v: Any, ctx: _Ctx) -> dict[str, str]:
    for unsupported in ("csiNodeAllocatable", "migratedPlugins"):
        if isinstance(v, dict) and any(str(k).lower() == unsupported.lower() for k in v):
            raise ValueError(f"{unsupported} is not supported (CSINode is not modelled)")
    fields = _fields(v, {"nodeAllocatable": _quantities}, ctx, "nodeAllocatableStrategy")
    return dict(fields.get("nodeAllocatable") or {})


def _quantities(v: Any, ctx: _Ctx) -> dict[str, str]:
    if not isinstance(v, dict):
        raise ValueError(f"must be a map of resource quantities, got {v!r}")
    return {str(k): str(q) for k, q in v.items()}


def _label_strategy(v: Any, ctx: _Ctx) -> tuple[str, tuple[str, ...]]:
    fields = _fields(v, {"labelKey": _str, "labelValues": _strs}, ctx, "labelNodePrepareStrategy")
    values = tuple(fields.get("labelValues") or ())
    if not fields.get("labelKey") or not values:
        raise ValueError("labelNodePrepareStrategy needs labelKey and labelValues")
    return str(fields["labelKey"]), values


def _unique_label(v: Any, ctx: _Ctx) -> str:
    fields = _fields(v, {"labelKey": _str}, ctx, "uniqueNodeLabelStrategy")
    if not fields.get("labelKey"):
        raise ValueError("uniqueNodeLabelStrategy needs labelKey")
    return str(fields["labelKey"])


def _nested_create_pods(v: Any, ctx: _Ctx) -> CreatePods:
    op = parse_op(v, ctx.base)
    if not isinstance(op, CreatePods):
        raise ValueError("must be a createPods op")
    return op


@dataclass(frozen=True, slots=True)
class _Ctx:
    base: Path


Decoder = Callable[[Any, _Ctx], Any]


def _fields(raw: Any, spec: Mapping[str, Decoder], ctx: _Ctx, what: str) -> dict[str, Any]:
    """Decode ``raw`` strictly: keys match ``spec`` case-insensitively, as encoding/json
    matches Go field names; an unknown key is an error naming it."""
    if not isinstance(raw, dict):
        raise ValueError(f"{what} must be a mapping, got {raw!r}")
    by_lower = {name.lower(): name for name in spec}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = by_lower.get(str(key).lower())
        if name is None:
            raise FieldError(str(key), f"unknown field {key!r} in {what}")
        try:
            out[name] = spec[name](value, ctx)
        except FieldError:
            raise
        except ValueError as err:
            raise FieldError(name, str(err)) from None
    return out


# opcode -> (op class, upstream field -> (attribute, decoder))
_Spec = tuple[type, Mapping[str, tuple[str, Decoder]]]
OPS: Mapping[str, _Spec] = {
    "createNodes": (
        CreateNodes,
        {
            "count": ("count", _int),
            "countParam": ("count_param", _param),
            "nodeTemplatePath": ("node_template_path", _path),
            "nodeAllocatableStrategy": ("node_allocatable", _allocatable),
            "labelNodePrepareStrategy": ("label_strategy", _label_strategy),
            "uniqueNodeLabelStrategy": ("unique_label_key", _unique_label),
            "templateParams": ("template_params", _any_map),
        },
    ),
    "createNamespaces": (
        CreateNamespaces,
        {
            "prefix": ("prefix", _str),
            "count": ("count", _int),
            "countParam": ("count_param", _param),
            "namespaceTemplatePath": ("namespace_template_path", _path),
        },
    ),
    "createPods": (
        CreatePods,
        {
            "count": ("count", _int),
            "countParam": ("count_param", _param),
            "countMultiplierParam": ("count_multiplier_param", _param),
            "steadyState": ("steady_state", _bool),
            "steadyStateParam": ("steady_state_param", _param),
            "duration": ("duration", _duration),
            "durationParam": ("duration_param", _param),
            "collectMetrics": ("collect_metrics", _bool),
            "namespace": ("namespace", _str),
            "podTemplatePath": ("pod_template_path", _path),
            "skipWaitToCompletion": ("skip_wait_to_completion", _bool),
            "templateParams": ("template_params", _any_map),
        },
    ),
    "createPodSets": (
        CreatePodSets,
        {
            "count": ("count", _int),
            "countParam": ("count_param", _param),
            "namespacePrefix": ("namespace_prefix", _str),
            "createPodsOp": ("create_pods_op", _nested_create_pods),
        },
    ),
    "createAny": (
        CreateAny,
        {
            "namespace": ("namespace", _str),
            "templatePath": ("template_path", _path),
            "count": ("count", _int),
            "countParam": ("count_param", _param),
            "templateParams": ("template_params", _any_map),
        },
    ),
    "createResourceDriver": (
        CreateResourceDriver,
        {
            "driverName": ("driver_name", _str),
            "nodes": ("nodes", _str),
            "maxClaimsPerNode": ("max_claims_per_node", _int),
            "maxClaimsPerNodeParam": ("max_claims_per_node_param", _param),
        },
    ),
    "allocResourceClaims": (AllocResourceClaims, {"namespace": ("namespace", _str)}),
    "createResourceClaims": (
        CreateResourceClaims,
        {
            "count": ("count", _int),
            "countParam": ("count_param", _param),
            "namespace": ("namespace", _str),
            "templatePath": ("template_path", _path),
        },
    ),
    "deletePods": (
        DeletePods,
        {
            "namespace": ("namespace", _str),
            "labelSelector": ("label_selector", _str_map),
            "skipWaitToCompletion": ("skip_wait_to_completion", _bool),
            "deletePodsPerSecond": ("delete_pods_per_second", _int),
        },
    ),
    "churn": (
        Churn,
        {
            "mode": ("mode", _str),
            "number": ("number", _int),
            "intervalMilliseconds": ("interval_milliseconds", _int),
            "namespace": ("namespace", _str),
            "templatePaths": ("template_paths", _paths),
        },
    ),
    "barrier": (
        Barrier,
        {
            "namespaces": ("namespaces", _strs),
            "labelSelector": ("label_selector", _str_map),
            "stageRequirement": ("stage_requirement", _str),
        },
    ),
    "sleep": (
        Sleep,
        {"duration": ("duration", _duration), "durationParam": ("duration_param", _param)},
    ),
    "startCollectingMetrics": (
        StartCollectingMetrics,
        {
            "name": ("name", _str),
            "namespaces": ("namespaces", _strs),
            "labelSelector": ("label_selector", _str_map),
        },
    ),
    "stopCollectingMetrics": (StopCollectingMetrics, {}),
}


def parse_op(raw: Any, base: Path) -> Op:
    """One op of a ``workloadTemplate``. Raises ValueError (a ``FieldError`` names the
    field) for the caller to locate in the file."""
    if not isinstance(raw, dict):
        raise ValueError(f"an op must be a mapping, got {raw!r}")
    opcode = next((v for k, v in raw.items() if str(k).lower() == "opcode"), None)
    if not isinstance(opcode, str) or not opcode:
        raise FieldError("opcode", "missing opcode")
    if opcode in UNSUPPORTED_OPS:
        raise FieldError(
            "opcode",
            f"opcode {opcode!r} is not supported by cluster-sched ({UNSUPPORTED_OPS[opcode]})",
        )
    spec = OPS.get(opcode)
    if spec is None:
        raise FieldError("opcode", f"unknown opcode {opcode!r}")
    cls, fields = spec
    decoders = {"opcode": _str, **{name: dec for name, (_attr, dec) in fields.items()}}
    decoded = _fields(raw, decoders, _Ctx(base), opcode)
    decoded.pop("opcode")
    op = cls(**{fields[name][0]: value for name, value in decoded.items()})
    validate(op, allow_params=True)
    return op  # type: ignore[no-any-return]


def field_name(err: ValueError) -> str:
    """The upstream field name a parse error is about ('' if none)."""
    return err.name if isinstance(err, FieldError) else ""
