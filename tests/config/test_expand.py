"""expand_plugins / expand_config: upstream's NewFramework plugin resolution."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.config import (
    API_VERSION,
    KIND,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    default_config,
    expand_config,
    expand_plugins,
    parse_config,
)
from cluster_sched.errors import ConfigError


def _profile(plugins: dict[str, Any] | None = None, **profile: Any) -> Profile:
    if plugins is not None:
        profile["plugins"] = plugins
    doc = {"apiVersion": API_VERSION, "kind": KIND, "profiles": [profile]}
    return parse_config(doc).profiles[0]


def _names(expanded: dict[str, tuple[tuple[str, int], ...]], point: str) -> list[str]:
    return [name for name, _ in expanded[point]]


# Upstream's ExpandedPluginsV1 (pkg/scheduler/apis/config/testing/defaults), without the
# removed cloud volume-limit plugins and with DynamicResources.
EXPECTED_DEFAULT = {
    "preEnqueue": [("SchedulingGates", 0), ("DynamicResources", 0)],
    "queueSort": [("PrioritySort", 0)],
    "preFilter": [
        (n, 0)
        for n in (
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        )
    ],
    "filter": [
        (n, 0)
        for n in (
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        )
    ],
    "postFilter": [("DynamicResources", 0), ("DefaultPreemption", 0)],
    "preScore": [
        (n, 0)
        for n in (
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeBinding",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        )
    ],
    "score": [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ],
    "reserve": [("VolumeBinding", 0), ("DynamicResources", 0)],
    "permit": [],
    "preBind": [("VolumeBinding", 0), ("DynamicResources", 0)],
    "bind": [("DefaultBinder", 0)],
    "postBind": [],
}


def test_default_profile_expands_like_upstream(capabilities):
    expanded = expand_plugins(default_config().profiles[0], capabilities)
    assert list(expanded) == list(EXPECTED_DEFAULT)
    assert {point: list(v) for point, v in expanded.items()} == EXPECTED_DEFAULT


SCORE_CASES = [
    pytest.param(
        {"score": {"disabled": [{"name": "ImageLocality"}]}},
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
        ],
        id="disable-one-default-score-plugin",
    ),
    pytest.param(
        {
            "score": {
                "disabled": [{"name": "*"}],
                "enabled": [
                    {"name": "ImageLocality", "weight": 5},
                    {"name": "NodeResourcesFit"},
                    {"name": "TaintToleration", "weight": 0},
                ],
            }
        },
        [("ImageLocality", 5), ("NodeResourcesFit", 1), ("TaintToleration", 1)],
        id="disable-star-and-custom-order",
    ),
    pytest.param(
        {"score": {"enabled": [{"name": "NodeAffinity", "weight": 7}]}},
        [
            ("NodeAffinity", 7),
            ("TaintToleration", 3),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
        id="score-override-moves-first-with-new-weight",
    ),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": 7}]}},
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 7),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
        id="multipoint-override-keeps-order",
    ),
    pytest.param(
        {"multiPoint": {"disabled": [{"name": "TaintToleration"}]}},
        [
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
        id="multipoint-disable-default",
    ),
]


@pytest.mark.parametrize(("plugins", "want"), SCORE_CASES)
def test_score_merge_cases(capabilities, plugins, want):
    expanded = expand_plugins(_profile(plugins), capabilities)
    assert list(expanded["score"]) == want


def test_disabling_score_keeps_other_points(capabilities):
    expanded = expand_plugins(
        _profile({"score": {"disabled": [{"name": "TaintToleration"}]}}), capabilities
    )
    assert "TaintToleration" not in _names(expanded, "score")
    assert "TaintToleration" in _names(expanded, "filter")
    assert "TaintToleration" in _names(expanded, "preScore")


def test_disable_star_on_multipoint_keeps_only_custom(capabilities):
    plugins = {
        "multiPoint": {
            "disabled": [{"name": "*"}],
            "enabled": [
                {"name": "DefaultBinder"},
                {"name": "PrioritySort"},
                {"name": "NodeResourcesFit", "weight": 4},
            ],
        }
    }
    expanded = expand_plugins(_profile(plugins), capabilities)
    assert {p: list(v) for p, v in expanded.items() if v} == {
        "queueSort": [("PrioritySort", 0)],
        "preFilter": [("NodeResourcesFit", 0)],
        "filter": [("NodeResourcesFit", 0)],
        "preScore": [("NodeResourcesFit", 0)],
        "score": [("NodeResourcesFit", 4)],
        "bind": [("DefaultBinder", 0)],
    }


# Ported from upstream's TestNewFrameworkMultiPointExpansion with a fake registry.
FAKE = {
    "Everything": frozenset(
        {
            "queueSort",
            "preFilter",
            "filter",
            "postFilter",
            "preScore",
            "score",
            "reserve",
            "permit",
            "preBind",
            "bind",
            "postBind",
        }
    ),
    "Score1": frozenset({"preScore", "score"}),
    "Score2": frozenset({"preScore", "score"}),
    "ScoreNormalize": frozenset({"score"}),
    "Sort": frozenset({"queueSort"}),
    "Binder": frozenset({"bind"}),
}


def _refs(*entries: str | tuple[str, int]) -> tuple[PluginRef, ...]:
    return tuple(PluginRef(e) if isinstance(e, str) else PluginRef(*e) for e in entries)


def _raw(**sets: PluginSet) -> Profile:
    """A profile built without the default merge, like upstream's framework tests."""
    plugins = Plugins()
    for point, plugin_set in sets.items():
        plugins = plugins.with_set(point, plugin_set)
    return Profile("p", plugins)


FAKE_CASES = [
    pytest.param(
        _raw(
            multiPoint=PluginSet(_refs("Everything", "Score1")),
            preScore=PluginSet(disabled=_refs("*")),
        ),
        {"preScore": [], "score": [("Everything", 1), ("Score1", 1)]},
        id="disable-multipoint-expansion-with-star",
    ),
    pytest.param(
        _raw(
            multiPoint=PluginSet(_refs("ScoreNormalize", "Everything", "Score1")),
            score=PluginSet(_refs("Score1", "Everything")),
        ),
        {
            "preScore": [("Everything", 0), ("Score1", 0)],
            "score": [("Score1", 1), ("Everything", 1), ("ScoreNormalize", 1)],
        },
        id="specific-point-takes-precedence",
    ),
    pytest.param(
        _raw(
            multiPoint=PluginSet(_refs("Everything", "Score1")),
            score=PluginSet(_refs("ScoreNormalize", "Score1", "Everything")),
        ),
        {
            "preScore": [("Everything", 0), ("Score1", 0)],
            "score": [("Score1", 1), ("Everything", 1), ("ScoreNormalize", 1)],
        },
        id="precedence-only-for-multipoint-plugins",
    ),
    pytest.param(
        _raw(
            multiPoint=PluginSet(_refs("Everything", "Score1")),
            score=PluginSet(_refs(("Score1", 5), ("Score2", 5), ("Everything", 3))),
        ),
        {
            "preScore": [("Everything", 0), ("Score1", 0)],
            "score": [("Score1", 5), ("Everything", 3), ("Score2", 5)],
        },
        id="specific-weights-override-multipoint",
    ),
    pytest.param(
        _raw(
            multiPoint=PluginSet(_refs("Everything", ("Score1", 9))),
            score=PluginSet(disabled=_refs("Score1")),
        ),
        {"preScore": [("Everything", 0), ("Score1", 0)], "score": [("Everything", 1)]},
        id="multipoint-plugin-disabled-at-one-point",
    ),
]


@pytest.mark.parametrize(("profile", "want"), FAKE_CASES)
def test_multipoint_expansion(profile, want):
    expanded = expand_plugins(profile, FAKE)
    assert {point: list(expanded[point]) for point in want} == want
    assert _names(expanded, "bind") == ["Everything"]


ERROR_CASES = [
    pytest.param(
        {"score": {"enabled": [{"name": "ImageLocality"}, {"name": "NodeName"}, {"name": "Foo"}]}},
        'profiles[0].plugins.score.enabled[2]: unknown plugin "Foo"',
        id="unknown-plugin",
    ),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "my_pkg.plugins:Missing"}]}},
        'profiles[0].plugins.multiPoint.enabled[0]: unknown plugin "my_pkg.plugins:Missing"',
        id="unknown-out-of-tree-plugin",
    ),
    pytest.param(
        {"score": {"enabled": [{"name": "NodeName"}]}},
        'profiles[0].plugins.score.enabled[0]: plugin "NodeName" does not extend score',
        id="plugin-does-not-extend-point",
    ),
    pytest.param(
        {
            "score": {
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}],
            }
        },
        'profiles[0].plugins.score.enabled[1]: plugin "ImageLocality" already registered as score',
        id="duplicate-at-specific-point",
    ),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 2}]}},
        None,
        id="multipoint-override-is-not-a-duplicate",
    ),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "Custom"}, {"name": "Custom"}]}},
        'profiles[0].plugins.multiPoint.enabled[1]: plugin "Custom" already registered as filter',
        id="duplicate-in-multipoint",
    ),
    pytest.param(
        {"queueSort": {"enabled": [{"name": "OtherSort"}]}},
        "profiles[0].plugins.queueSort: only one queue sort plugin required for profile with "
        'scheduler name "default-scheduler", but got 2',
        id="two-queue-sort",
    ),
    pytest.param(
        {"multiPoint": {"disabled": [{"name": "PrioritySort"}]}},
        "profiles[0].plugins.queueSort: only one queue sort plugin required for profile with "
        'scheduler name "default-scheduler", but got 0',
        id="no-queue-sort",
    ),
    pytest.param(
        {"bind": {"disabled": [{"name": "*"}]}},
        "profiles[0].plugins.bind: at least one bind plugin is needed for profile with "
        'scheduler name "default-scheduler"',
        id="no-bind",
    ),
]


@pytest.mark.parametrize(("plugins", "error"), ERROR_CASES)
def test_expansion_errors_name_the_field(capabilities, plugins, error):
    capabilities |= {"Custom": frozenset({"filter"}), "OtherSort": frozenset({"queueSort"})}
    profile = _profile(plugins)
    if error is None:
        expand_plugins(profile, capabilities)
        return
    with pytest.raises(ConfigError) as info:
        expand_plugins(profile, capabilities)
    assert str(info.value) == error


def test_default_plugin_missing_from_registry_names_multipoint(capabilities):
    del capabilities["VolumeZone"]
    with pytest.raises(
        ConfigError, match=r'^profiles\[0\]\.plugins\.multiPoint: unknown plugin "VolumeZone"$'
    ):
        expand_plugins(default_config().profiles[0], capabilities)


def test_out_of_tree_plugin_expands_like_any_other(capabilities):
    name = "my_pkg.plugins:MyPlugin"
    capabilities[name] = frozenset({"filter", "score"})
    profile = _profile({"multiPoint": {"enabled": [{"name": name, "weight": 4}]}})
    expanded = expand_plugins(profile, capabilities)
    assert _names(expanded, "filter")[-1] == name
    assert expanded["score"][-1] == (name, 4)


def test_score_weight_overflow_is_rejected():
    huge = 2**62
    profile = _raw(
        queueSort=PluginSet(_refs("Sort")),
        bind=PluginSet(_refs("Binder")),
        score=PluginSet(_refs(("Score1", huge), ("Score2", huge))),
    )
    with pytest.raises(ConfigError, match="total score of Score plugins could overflow"):
        expand_plugins(profile, FAKE)


def test_capabilities_with_unknown_point_is_a_programming_error():
    with pytest.raises(ValueError, match="normalizeScore"):
        expand_plugins(_raw(), {"X": frozenset({"normalizeScore"})})


def test_expand_config_keys_profiles_and_requires_common_queue_sort(capabilities):
    capabilities["OtherSort"] = frozenset({"queueSort"})
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}],
    }
    assert list(expand_config(parse_config(doc), capabilities)) == ["a", "b"]

    doc["profiles"][1]["plugins"] = {
        "multiPoint": {"disabled": [{"name": "PrioritySort"}], "enabled": [{"name": "OtherSort"}]}
    }
    with pytest.raises(ConfigError) as info:
        expand_config(parse_config(doc), capabilities)
    assert str(info.value).startswith("profiles[1].plugins.queueSort: ")
    assert "must be the same for all profiles" in str(info.value)
