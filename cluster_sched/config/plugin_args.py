"""Typed, defaulted and validated args for the in-tree plugins that take any.

Semantics are upstream's: field names and defaults from ``k8s.io/kube-scheduler/config/v1``
``types_pluginargs.go`` and ``pkg/scheduler/apis/config/v1/defaults.go``, checks from
``validation/validation_pluginargs.go`` (the first failing check is reported, as one line
naming the field). Args are decoded strictly: an unknown field is an error, as it is for
upstream's strict decoder. Plugins without a typed args kind (including every
out-of-tree plugin) get their raw mapping back, read-only and unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cluster_sched.api.objects import CPU, MEMORY, NodeAffinity, TopologySpreadConstraint
from cluster_sched.plugins import names

from ._fields import (
    as_mapping,
    check_fields,
    check_int,
    check_qualified_name,
    child,
    fail,
    fail_unsupported,
    index,
    opt_bool,
    opt_int,
    opt_list,
    opt_mapping,
    opt_str,
    str_list,
)
from ._selectors import SCHEDULE_ANYWAY, parse_default_constraint, parse_node_affinity
from .defaults import API_VERSION

__all__ = [
    "DEFAULT_RESOURCES",
    "LEAST_ALLOCATED",
    "LIST_DEFAULTING",
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultPreemptionArgs",
    "DynamicResourcesArgs",
    "InterPodAffinityArgs",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PodTopologySpreadArgs",
    "RequestedToCapacityRatioParam",
    "ResourceSpec",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
    "default_plugin_args",
    "has_typed_args",
    "parse_plugin_args",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

#: PodTopologySpreadArgs.defaultingType values.
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

#: Highest score of a utilization shape point (config.MaxCustomPriorityScore).
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


#: cpu and memory, weight 1 each: the default resource set of both resource plugins.
DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    #: x axis, 0..100 (percent of the resource requested)
    utilization: int
    #: y axis, 0..MAX_CUSTOM_PRIORITY_SCORE
    score: int


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatioParam:
    #: strictly increasing in utilization
    shape: tuple[UtilizationShapePoint, ...]


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    #: set exactly when ``type`` is RequestedToCapacityRatio
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs:
    #: resources the Filter ignores (not Score)
    ignored_resources: tuple[str, ...] = ()
    #: resource-name prefixes (``example.com`` ignores ``example.com/x``) the Filter ignores
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    #: every weight is 1 (upstream rejects any other)
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    #: score weight of existing pods' hard affinity to the incoming pod, 0..100
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


#: The ``System`` default constraints of PodTopologySpread (its ``systemDefaultConstraints``).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(
        max_skew=3, topology_key="kubernetes.io/hostname", when_unsatisfiable=SCHEDULE_ANYWAY
    ),
    TopologySpreadConstraint(
        max_skew=5, topology_key="topology.kubernetes.io/zone", when_unsatisfiable=SCHEDULE_ANYWAY
    ),
)


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    #: only with ``defaulting_type == "List"``; never carry a label selector
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    @property
    def constraints(self) -> tuple[TopologySpreadConstraint, ...]:
        """The constraints applied to pods that declare none (selector still to deduce)."""
        if self.defaulting_type == SYSTEM_DEFAULTING:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return self.default_constraints


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    #: ANDed with every pod's own node affinity; None: no extra constraint
    added_affinity: NodeAffinity | None = None


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    #: candidates to dry-run, as a percentage of the nodes, 0..100
    min_candidate_nodes_percentage: int = 10
    #: lower bound on that number, >= 0 (not both zero)
    min_candidate_nodes_absolute: int = 100


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs:
    #: how long PreBind waits for the claims to be bound; 0 means "do not wait"
    bind_timeout_seconds: int = 600
    #: the storage-capacity scoring function; None leaves Score off (upstream's alpha
    #: StorageCapacityScoring gate is off by default, and with it ``shape`` is refused;
    #: cluster-sched has no feature gates, so giving a shape is what turns scoring on)
    shape: tuple[UtilizationShapePoint, ...] | None = None


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    #: how long Filter may spend per node allocating devices; 0 disables the limit
    filter_timeout_seconds: float = 10.0
    #: PreBind wait for device binding conditions; None: upstream's unset
    binding_timeout_seconds: float | None = None


# --- decoding ---------------------------------------------------------------------------


def _resources(items: Sequence[Any] | None, path: str) -> tuple[ResourceSpec, ...]:
    """Resource specs with upstream's defaulting: none -> cpu+memory, weight 0 -> 1."""
    if not items:
        return DEFAULT_RESOURCES
    out = []
    for i, item in enumerate(items):
        item_path = index(path, i)
        obj = as_mapping(item, item_path)
        check_fields(obj, item_path, ("name", "weight"))
        name = opt_str(obj, "name", item_path) or ""
        if not name:
            fail(child(item_path, "name"), "required value")
        out.append(ResourceSpec(name, opt_int(obj, "weight", item_path, bits=64) or 1))
    return tuple(out)


def _shape(items: Sequence[Any] | None, path: str) -> tuple[UtilizationShapePoint, ...]:
    if not items:
        fail(path, "required value: at least one point must be specified")
    points = []
    for i, item in enumerate(items):
        item_path = index(path, i)
        obj = as_mapping(item, item_path)
        check_fields(obj, item_path, ("utilization", "score"))
        points.append(
            UtilizationShapePoint(
                check_int(obj.get("utilization", 0), child(item_path, "utilization")),
                check_int(obj.get("score", 0), child(item_path, "score")),
            )
        )
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            fail(
                child(index(path, i), "utilization"),
                f"invalid value {points[i].utilization}: values must be sorted in increasing order",
            )
    for i, point in enumerate(points):
        if not 0 <= point.utilization <= 100:
            fail(
                child(index(path, i), "utilization"),
                f"invalid value {point.utilization}: not in valid range [0, 100]",
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            fail(
                child(index(path, i), "score"),
                f"invalid value {point.score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
            )
    return tuple(points)


def _scoring_strategy(obj: Mapping[str, Any], path: str) -> ScoringStrategy:
    check_fields(obj, path, ("type", "resources", "requestedToCapacityRatio"))
    # An explicit strategy is not re-defaulted: an empty type is unsupported upstream too.
    kind = opt_str(obj, "type", path) or ""
    if kind not in _STRATEGIES:
        fail_unsupported(child(path, "type"), kind, _STRATEGIES)
    resources_path = child(path, "resources")
    resources = _resources(opt_list(obj, "resources", path), resources_path)
    for i, spec in enumerate(resources):
        if not 0 < spec.weight <= 100:
            fail(
                child(index(resources_path, i), "weight"),
                f"invalid value {spec.weight}: resource weight of {spec.name} not in valid range (0, 100]",
            )
    ratio_path = child(path, "requestedToCapacityRatio")
    raw_ratio = opt_mapping(obj, "requestedToCapacityRatio", path)
    ratio = None
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        if raw_ratio is None:
            fail(
                ratio_path,
                "required value: must be specified when type is RequestedToCapacityRatio",
            )
        check_fields(raw_ratio, ratio_path, ("shape",))
        shape = _shape(opt_list(raw_ratio, "shape", ratio_path), child(ratio_path, "shape"))
        ratio = RequestedToCapacityRatioParam(shape)
    elif raw_ratio is not None:
        fail(ratio_path, "forbidden: must be nil when type is not RequestedToCapacityRatio")
    return ScoringStrategy(kind, resources, ratio)


def _fit(obj: Mapping[str, Any], path: str) -> NodeResourcesFitArgs:
    check_fields(obj, path, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"))
    ignored = str_list(obj, "ignoredResources", path)
    for i, name in enumerate(ignored):
        check_qualified_name(name, index(child(path, "ignoredResources"), i))
    groups = str_list(obj, "ignoredResourceGroups", path)
    for i, group in enumerate(groups):
        group_path = index(child(path, "ignoredResourceGroups"), i)
        if "/" in group:
            fail(group_path, f"invalid value {group!r}: resource group name can't contain '/'")
        check_qualified_name(group, group_path)
    raw_strategy = opt_mapping(obj, "scoringStrategy", path)
    strategy = (
        ScoringStrategy()
        if raw_strategy is None
        else _scoring_strategy(raw_strategy, child(path, "scoringStrategy"))
    )
    return NodeResourcesFitArgs(ignored, groups, strategy)


def _balanced(obj: Mapping[str, Any], path: str) -> NodeResourcesBalancedAllocationArgs:
    check_fields(obj, path, ("resources",))
    resources_path = child(path, "resources")
    resources = _resources(opt_list(obj, "resources", path), resources_path)
    seen: set[str] = set()
    for i, spec in enumerate(resources):
        if spec.name in seen:
            fail(child(index(resources_path, i), "name"), f'duplicate value "{spec.name}"')
        seen.add(spec.name)
        if spec.weight != 1:
            fail(
                child(index(resources_path, i), "weight"), f"invalid value {spec.weight}: must be 1"
            )
    return NodeResourcesBalancedAllocationArgs(resources)


def _inter_pod_affinity(obj: Mapping[str, Any], path: str) -> InterPodAffinityArgs:
    check_fields(obj, path, ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"))
    weight = opt_int(obj, "hardPodAffinityWeight", path)
    weight = 1 if weight is None else weight
    if not 0 <= weight <= 100:
        fail(
            child(path, "hardPodAffinityWeight"),
            f"invalid value {weight}: not in valid range [0, 100]",
        )
    ignore = opt_bool(obj, "ignorePreferredTermsOfExistingPods", path) or False
    return InterPodAffinityArgs(weight, ignore)


def _pod_topology_spread(obj: Mapping[str, Any], path: str) -> PodTopologySpreadArgs:
    check_fields(obj, path, ("defaultConstraints", "defaultingType"))
    constraints_path = child(path, "defaultConstraints")
    raw_constraints = opt_list(obj, "defaultConstraints", path) or ()
    defaulting = opt_str(obj, "defaultingType", path) or SYSTEM_DEFAULTING
    type_path = child(path, "defaultingType")
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        fail_unsupported(type_path, defaulting, (SYSTEM_DEFAULTING, LIST_DEFAULTING))
    if defaulting == SYSTEM_DEFAULTING and raw_constraints:
        fail(type_path, f'invalid value "{defaulting}": when .defaultConstraints are not empty')
    constraints: list[TopologySpreadConstraint] = []
    for i, raw in enumerate(raw_constraints):
        constraint = parse_default_constraint(raw, index(constraints_path, i))
        for other in constraints:
            if (other.topology_key, other.when_unsatisfiable) == (
                constraint.topology_key,
                constraint.when_unsatisfiable,
            ):
                fail(
                    index(constraints_path, i),
                    f'duplicate value "{{{constraint.topology_key}, '
                    f'{constraint.when_unsatisfiable}}}"',
                )
        constraints.append(constraint)
    return PodTopologySpreadArgs(tuple(constraints), defaulting)


def _node_affinity(obj: Mapping[str, Any], path: str) -> NodeAffinityArgs:
    check_fields(obj, path, ("addedAffinity",))
    raw = obj.get("addedAffinity")
    if raw is None:
        return NodeAffinityArgs()
    return NodeAffinityArgs(parse_node_affinity(raw, child(path, "addedAffinity")))


def _default_preemption(obj: Mapping[str, Any], path: str) -> DefaultPreemptionArgs:
    check_fields(obj, path, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"))
    percentage = opt_int(obj, "minCandidateNodesPercentage", path)
    percentage = 10 if percentage is None else percentage
    absolute = opt_int(obj, "minCandidateNodesAbsolute", path)
    absolute = 100 if absolute is None else absolute
    percentage_path = child(path, "minCandidateNodesPercentage")
    if not 0 <= percentage <= 100:
        fail(percentage_path, f"invalid value {percentage}: not in valid range [0, 100]")
    if absolute < 0:
        fail(
            child(path, "minCandidateNodesAbsolute"),
            f"invalid value {absolute}: not in valid range [0, inf)",
        )
    if percentage == 0 and absolute == 0:
        fail(
            percentage_path,
            "invalid value 0: cannot be zero at the same time as minCandidateNodesAbsolute",
        )
    return DefaultPreemptionArgs(percentage, absolute)


def _volume_binding(obj: Mapping[str, Any], path: str) -> VolumeBindingArgs:
    check_fields(obj, path, ("bindTimeoutSeconds", "shape"))
    timeout = opt_int(obj, "bindTimeoutSeconds", path, bits=64)
    timeout = 600 if timeout is None else timeout
    if timeout < 0:
        fail(
            child(path, "bindTimeoutSeconds"),
            f"invalid value {timeout}: invalid BindTimeoutSeconds, should not be a negative value",
        )
    shape = None
    if obj.get("shape") is not None:
        # Upstream accepts a shape only with the StorageCapacityScoring gate on, and
        # validates it as RequestedToCapacityRatio's (validateFunctionShape).
        shape = _shape(opt_list(obj, "shape", path), child(path, "shape"))
    return VolumeBindingArgs(timeout, shape)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def _duration(obj: Mapping[str, Any], key: str, path: str) -> float | None:
    """A metav1.Duration (Go duration string such as ``1m30s``), in seconds."""
    text = opt_str(obj, key, path)
    if text is None:
        return None
    sign, body = (-1.0, text[1:]) if text.startswith("-") else (1.0, text.lstrip("+"))
    if body == "0":
        return 0.0
    parts = _DURATION_PART.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        fail(child(path, key), f'invalid duration "{text}"')
    return sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def _dynamic_resources(obj: Mapping[str, Any], path: str) -> DynamicResourcesArgs:
    check_fields(obj, path, ("filterTimeout", "bindingTimeout"))
    filter_timeout = _duration(obj, "filterTimeout", path)
    filter_timeout = 10.0 if filter_timeout is None else filter_timeout
    if filter_timeout < 0:
        fail(child(path, "filterTimeout"), "invalid value: must be zero or positive")
    binding_timeout = _duration(obj, "bindingTimeout", path)
    if binding_timeout is not None and binding_timeout < 1:
        fail(child(path, "bindingTimeout"), "invalid value: must be at least 1 second")
    return DynamicResourcesArgs(filter_timeout, binding_timeout)


_PARSERS: Mapping[str, Callable[[Mapping[str, Any], str], Any]] = MappingProxyType(
    {
        names.NODE_RESOURCES_FIT: _fit,
        names.NODE_RESOURCES_BALANCED_ALLOCATION: _balanced,
        names.INTER_POD_AFFINITY: _inter_pod_affinity,
        names.POD_TOPOLOGY_SPREAD: _pod_topology_spread,
        names.NODE_AFFINITY: _node_affinity,
        names.DEFAULT_PREEMPTION: _default_preemption,
        names.VOLUME_BINDING: _volume_binding,
        names.DYNAMIC_RESOURCES: _dynamic_resources,
    }
)

_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        names.NODE_RESOURCES_FIT: NodeResourcesFitArgs(),
        names.NODE_RESOURCES_BALANCED_ALLOCATION: NodeResourcesBalancedAllocationArgs(),
        names.INTER_POD_AFFINITY: InterPodAffinityArgs(),
        names.POD_TOPOLOGY_SPREAD: PodTopologySpreadArgs(),
        names.NODE_AFFINITY: NodeAffinityArgs(),
        names.DEFAULT_PREEMPTION: DefaultPreemptionArgs(),
        names.VOLUME_BINDING: VolumeBindingArgs(),
        names.DYNAMIC_RESOURCES: DynamicResourcesArgs(),
    }
)

_EMPTY_ARGS: Mapping[str, Any] = MappingProxyType({})


def has_typed_args(plugin_name: str) -> bool:
    """True for in-tree plugins with an ``<Name>Args`` kind."""
    return plugin_name in _PARSERS


def default_plugin_args(plugin_name: str) -> Any:
    """Upstream's defaulted args for ``plugin_name``, or None if it has no args kind."""
    return _DEFAULTS.get(plugin_name)


def parse_plugin_args(plugin_name: str, raw: Mapping[str, Any] | None, field: str) -> Any:
    """Decode, default and validate ``raw`` as the args of ``plugin_name``.

    ``field`` is the args' path (``profiles[0].pluginConfig[1].args``), prefixed to every
    error. Returns the typed args dataclass, or for plugins without one (out-of-tree
    plugins included) the raw mapping, read-only; ``{}`` when ``raw`` is None.
    """
    if raw is None:
        return _DEFAULTS.get(plugin_name, _EMPTY_ARGS)
    obj = as_mapping(raw, field)
    parser = _PARSERS.get(plugin_name)
    if parser is None:
        return MappingProxyType(dict(obj))
    # The args' own TypeMeta is optional; when present it must name this plugin's kind.
    api_version = opt_str(obj, "apiVersion", field)
    if api_version is not None and api_version != API_VERSION:
        fail_unsupported(child(field, "apiVersion"), api_version, (API_VERSION,))
    kind = opt_str(obj, "kind", field)
    if kind is not None and kind != f"{plugin_name}Args":
        fail(
            child(field, "kind"),
            f"args for plugin {plugin_name} were not of type {plugin_name}Args, got {kind}",
        )
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return parser(body, field)
