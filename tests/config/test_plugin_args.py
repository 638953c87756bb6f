"""parse_plugin_args: defaults and validation per upstream validation_pluginargs.go."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from cluster_sched.api.objects import (
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
)
from cluster_sched.config.plugin_args import (
    DEFAULT_RESOURCES,
    SYSTEM_DEFAULT_CONSTRAINTS,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
    VolumeBindingArgs,
    default_plugin_args,
    has_typed_args,
    parse_plugin_args,
)
from cluster_sched.errors import ConfigError

ARGS = "profiles[0].pluginConfig[1].args"

DEFAULTS = [
    pytest.param("NodeResourcesFit", NodeResourcesFitArgs(), id="fit"),
    pytest.param(
        "NodeResourcesBalancedAllocation", NodeResourcesBalancedAllocationArgs(), id="balanced"
    ),
    pytest.param("InterPodAffinity", InterPodAffinityArgs(1, False), id="inter-pod-affinity"),
    pytest.param("PodTopologySpread", PodTopologySpreadArgs((), "System"), id="spread"),
    pytest.param("NodeAffinity", NodeAffinityArgs(None), id="node-affinity"),
    pytest.param("DefaultPreemption", DefaultPreemptionArgs(10, 100), id="preemption"),
    pytest.param("VolumeBinding", VolumeBindingArgs(600), id="volume-binding"),
    pytest.param("DynamicResources", DynamicResourcesArgs(10.0, None), id="dra"),
]


@pytest.mark.parametrize(("plugin", "expected"), DEFAULTS)
def test_defaults_for_none_and_empty(plugin, expected):
    assert has_typed_args(plugin)
    assert default_plugin_args(plugin) == expected
    assert parse_plugin_args(plugin, None, ARGS) == expected
    assert parse_plugin_args(plugin, {}, ARGS) == expected


def test_fit_default_strategy_is_least_allocated_cpu_memory():
    strategy = NodeResourcesFitArgs().scoring_strategy
    assert strategy.type == "LeastAllocated"
    assert strategy.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    assert strategy.requested_to_capacity_ratio is None


def test_spread_system_constraints():
    hostname, zone = SYSTEM_DEFAULT_CONSTRAINTS
    assert hostname == TopologySpreadConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway")
    assert zone == TopologySpreadConstraint(5, "topology.kubernetes.io/zone", "ScheduleAnyway")
    assert PodTopologySpreadArgs().constraints == SYSTEM_DEFAULT_CONSTRAINTS


@pytest.mark.parametrize(
    "plugin", ["PrioritySort", "TaintToleration", "my_pkg.plugins:MyPlugin"], ids=str
)
def test_untyped_plugins_keep_raw_args(plugin):
    assert not has_typed_args(plugin)
    assert default_plugin_args(plugin) is None
    assert parse_plugin_args(plugin, None, ARGS) == {}
    parsed = parse_plugin_args(plugin, {"k": "v"}, ARGS)
    assert isinstance(parsed, MappingProxyType)
    assert dict(parsed) == {"k": "v"}


VALID = [
    pytest.param(
        "NodeResourcesFit",
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "NodeResourcesFitArgs",
            "ignoredResources": ["example.com/foo"],
            "ignoredResourceGroups": ["example.com"],
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [
                    {"name": "cpu", "weight": 0},
                    {"name": "nvidia.com/gpu", "weight": 5},
                ],
            },
        },
        NodeResourcesFitArgs(
            ("example.com/foo",),
            ("example.com",),
            ScoringStrategy(
                "MostAllocated", (ResourceSpec("cpu", 1), ResourceSpec("nvidia.com/gpu", 5))
            ),
        ),
        id="fit-most-allocated-weight-zero-becomes-one",
    ),
    pytest.param(
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
                },
            }
        },
        NodeResourcesFitArgs(
            scoring_strategy=ScoringStrategy(
                "RequestedToCapacityRatio",
                DEFAULT_RESOURCES,
                RequestedToCapacityRatioParam(
                    (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))
                ),
            )
        ),
        id="fit-requested-to-capacity-ratio",
    ),
    pytest.param(
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu"}, {"name": "example.com/gpu", "weight": 1}]},
        NodeResourcesBalancedAllocationArgs(
            (ResourceSpec("cpu", 1), ResourceSpec("example.com/gpu", 1))
        ),
        id="balanced-custom-resources",
    ),
    pytest.param(
        "InterPodAffinity",
        {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True},
        InterPodAffinityArgs(0, True),
        id="inter-pod-affinity-explicit-zero",
    ),
    pytest.param(
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 2,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "DoNotSchedule",
                },
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                },
            ],
        },
        PodTopologySpreadArgs(
            (
                TopologySpreadConstraint(2, "kubernetes.io/hostname", "DoNotSchedule"),
                TopologySpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway"),
            ),
            "List",
        ),
        id="spread-list",
    ),
    pytest.param(
        "PodTopologySpread",
        {"defaultingType": "List"},
        PodTopologySpreadArgs((), "List"),
        id="spread-empty-list-disables-defaults",
    ),
    pytest.param(
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a", "b"]},
                                {"key": "cpus", "operator": "Gt", "values": ["4"]},
                            ],
                            "matchFields": [
                                {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}
                            ],
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
                    }
                ],
            }
        },
        NodeAffinityArgs(
            NodeAffinity(
                required=NodeSelector(
                    (
                        NodeSelectorTerm(
                            (
                                NodeSelectorRequirement("zone", "In", ("a", "b")),
                                NodeSelectorRequirement("cpus", "Gt", ("4",)),
                            ),
                            (NodeSelectorRequirement("metadata.name", "NotIn", ("n1",)),),
                        ),
                    )
                ),
                preferred=(
                    PreferredSchedulingTerm(
                        5, NodeSelectorTerm((NodeSelectorRequirement("gpu", "Exists"),))
                    ),
                ),
            )
        ),
        id="node-affinity",
    ),
    pytest.param(
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3},
        DefaultPreemptionArgs(0, 3),
        id="preemption-percentage-zero",
    ),
    pytest.param(
        "DynamicResources",
        {"filterTimeout": "1m30s", "bindingTimeout": "1.5s"},
        DynamicResourcesArgs(90.0, 1.5),
        id="dra-durations",
    ),
    pytest.param(
        "DynamicResources", {"filterTimeout": "0"}, DynamicResourcesArgs(0.0), id="dra-zero"
    ),
]


@pytest.mark.parametrize(("plugin", "raw", "expected"), VALID)
def test_valid_args(plugin, raw, expected):
    assert parse_plugin_args(plugin, raw, ARGS) == expected


_SPREAD_OK = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}


def _spread(**overrides: Any) -> dict[str, Any]:
    return {"defaultingType": "List", "defaultConstraints": [{**_SPREAD_OK, **overrides}]}


def _affinity_expr(**expr: Any) -> dict[str, Any]:
    return {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }


_REQ = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"

INVALID = [
    # NodeResourcesFit
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "Foo"}},
        "scoringStrategy.type",
        'unsupported value "Foo"',
    ),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"resources": []}},
        "scoringStrategy.type",
        'unsupported value ""',
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 101}],
            }
        },
        "scoringStrategy.resources[0].weight",
        "resource weight of cpu not in valid range (0, 100]",
    ),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
        "scoringStrategy.requestedToCapacityRatio",
        "required value: must be specified when type is RequestedToCapacityRatio",
    ),
    (
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": []}}},
        "scoringStrategy.requestedToCapacityRatio",
        "forbidden: must be nil when type is not RequestedToCapacityRatio",
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": []},
            }
        },
        "scoringStrategy.requestedToCapacityRatio.shape",
        "required value: at least one point must be specified",
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                },
            }
        },
        "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        "values must be sorted in increasing order",
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]},
            }
        },
        "scoringStrategy.requestedToCapacityRatio.shape[0].score",
        "not in valid range [0, 10]",
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]},
            }
        },
        "scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
        "not in valid range [0, 100]",
    ),
    (
        "NodeResourcesFit",
        {"ignoredResources": ["bad name!"]},
        "ignoredResources[0]",
        "name part must",
    ),
    (
        "NodeResourcesFit",
        {"ignoredResourceGroups": ["example.com/foo"]},
        "ignoredResourceGroups[0]",
        "resource group name can't contain '/'",
    ),
    ("NodeResourcesFit", {"scoringstrategy": {}}, "scoringstrategy", "unknown field"),
    (
        "NodeResourcesFit",
        {"kind": "InterPodAffinityArgs"},
        "kind",
        "were not of type NodeResourcesFitArgs",
    ),
    # NodeResourcesBalancedAllocation
    (
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 2}]},
        "resources[0].weight",
        "must be 1",
    ),
    (
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
        "resources[1].name",
        'duplicate value "cpu"',
    ),
    # InterPodAffinity
    (
        "InterPodAffinity",
        {"hardPodAffinityWeight": 101},
        "hardPodAffinityWeight",
        "not in valid range [0, 100]",
    ),
    (
        "InterPodAffinity",
        {"ignorePreferredTermsOfExistingPods": "yes"},
        "ignorePreferredTermsOfExistingPods",
        "expected a boolean",
    ),
    # PodTopologySpread
    ("PodTopologySpread", {"defaultingType": "Foo"}, "defaultingType", 'unsupported value "Foo"'),
    (
        "PodTopologySpread",
        {"defaultConstraints": [_SPREAD_OK]},
        "defaultingType",
        'invalid value "System": when .defaultConstraints are not empty',
    ),
    (
        "PodTopologySpread",
        _spread(maxSkew=0),
        "defaultConstraints[0].maxSkew",
        "not in valid range (0, inf)",
    ),
    (
        "PodTopologySpread",
        _spread(topologyKey=""),
        "defaultConstraints[0].topologyKey",
        "required value",
    ),
    (
        "PodTopologySpread",
        _spread(topologyKey="a/b/c"),
        "defaultConstraints[0].topologyKey",
        "qualified name",
    ),
    (
        "PodTopologySpread",
        _spread(whenUnsatisfiable="Never"),
        "defaultConstraints[0].whenUnsatisfiable",
        'unsupported value "Never"',
    ),
    (
        "PodTopologySpread",
        _spread(labelSelector={"matchLabels": {"a": "b"}}),
        "defaultConstraints[0].labelSelector",
        "forbidden: constraint must not define a selector",
    ),
    (
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [_SPREAD_OK, {**_SPREAD_OK, "maxSkew": 4}],
        },
        "defaultConstraints[1]",
        'duplicate value "{zone, DoNotSchedule}"',
    ),
    # NodeAffinity
    (
        "NodeAffinity",
        _affinity_expr(key="zone", operator="Like", values=["a"]),
        f"{_REQ}.matchExpressions[0].operator",
        'unsupported value "Like"',
    ),
    (
        "NodeAffinity",
        _affinity_expr(key="zone", operator="In"),
        f"{_REQ}.matchExpressions[0].values",
        "values set can't be empty",
    ),
    (
        "NodeAffinity",
        _affinity_expr(key="zone", operator="Exists", values=["a"]),
        f"{_REQ}.matchExpressions[0].values",
        "must be empty",
    ),
    (
        "NodeAffinity",
        _affinity_expr(key="cpus", operator="Lt", values=["1", "2"]),
        f"{_REQ}.matchExpressions[0].values",
        "exactly one value",
    ),
    (
        "NodeAffinity",
        _affinity_expr(key="cpus", operator="Gt", values=["4.5"]),
        f"{_REQ}.matchExpressions[0].values[0]",
        "must be an integer",
    ),
    (
        "NodeAffinity",
        _affinity_expr(key="bad key!", operator="Exists"),
        f"{_REQ}.matchExpressions[0].key",
        "name part must",
    ),
    (
        "NodeAffinity",
        _affinity_expr(key="zone", operator="In", values=["not valid!"]),
        f"{_REQ}.matchExpressions[0].values[0]",
        "label value",
    ),
    (
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}
                            ]
                        }
                    ]
                }
            }
        },
        f"{_REQ}.matchFields[0].values",
        "must have one element",
    ),
    (
        "NodeAffinity",
        {
            "addedAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchFields": [{"key": "metadata.name", "operator": "Exists"}]
                        },
                    }
                ]
            }
        },
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].operator",
        'unsupported value "Exists"',
    ),
    (
        "NodeAffinity",
        {"addedAffinity": {"required": {}}},
        "addedAffinity.required",
        "unknown field",
    ),
    # DefaultPreemption
    (
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 101},
        "minCandidateNodesPercentage",
        "not in valid range [0, 100]",
    ),
    (
        "DefaultPreemption",
        {"minCandidateNodesAbsolute": -1},
        "minCandidateNodesAbsolute",
        "not in valid range [0, inf)",
    ),
    (
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        "minCandidateNodesPercentage",
        "cannot be zero at the same time as minCandidateNodesAbsolute",
    ),
    # VolumeBinding
    (
        "VolumeBinding",
        {"bindTimeoutSeconds": -1},
        "bindTimeoutSeconds",
        "should not be a negative value",
    ),
    (
        "VolumeBinding",
        {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
        "shape[1].utilization",
        "values must be sorted in increasing order",
    ),
    (
        "VolumeBinding",
        {"shape": [{"utilization": 0, "score": 11}]},
        "shape[0].score",
        "not in valid range [0, 10]",
    ),
    # DynamicResources
    ("DynamicResources", {"filterTimeout": "-1s"}, "filterTimeout", "must be zero or positive"),
    (
        "DynamicResources",
        {"filterTimeout": "10 seconds"},
        "filterTimeout",
        'invalid duration "10 seconds"',
    ),
    (
        "DynamicResources",
        {"bindingTimeout": "500ms"},
        "bindingTimeout",
        "must be at least 1 second",
    ),
]


@pytest.mark.parametrize(
    ("plugin", "raw", "field", "fragment"),
    INVALID,
    ids=[f"{case[0]}-{case[2]}-{i}" for i, case in enumerate(INVALID)],
)
def test_invalid_args_name_the_field(plugin, raw, field, fragment):
    with pytest.raises(ConfigError) as info:
        parse_plugin_args(plugin, raw, ARGS)
    message = str(info.value)
    assert message.startswith(f"{ARGS}.{field}: "), message
    assert fragment in message
    assert "\n" not in message
