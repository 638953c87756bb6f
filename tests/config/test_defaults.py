"""Default plugin set and merge rules (upstream's default_plugins_test.go)."""

from __future__ import annotations

import pytest

from cluster_sched.config import DEFAULT_PLUGINS, PluginRef, Plugins, PluginSet
from cluster_sched.config.defaults import merge_plugin_set, merge_plugins
from cluster_sched.plugins import names


def _set(enabled=(), disabled=()) -> PluginSet:
    def refs(items):
        return tuple(PluginRef(i) if isinstance(i, str) else PluginRef(*i) for i in items)

    return PluginSet(refs(enabled), refs(disabled))


def _pairs(plugin_set: PluginSet) -> list[tuple[str, int | None]]:
    return [(ref.name, ref.weight) for ref in plugin_set.enabled]


def test_default_multipoint_list_and_weights():
    assert _pairs(DEFAULT_PLUGINS.multi_point) == [
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", None),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", None),
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", None),
    ]
    assert DEFAULT_PLUGINS.multi_point.disabled == ()
    assert all(not DEFAULT_PLUGINS.get(p).enabled for p in ("score", "filter", "queueSort"))


def test_removed_plugins_are_not_defaults():
    assert names.REMOVED_IN_V1.isdisjoint(DEFAULT_PLUGINS.enabled_names())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("my_pkg.plugins:MyPlugin", True),
        ("pkg:Plugin", True),
        ("a.b.c:D.e", True),
        ("NodeResourcesFit", False),
        ("pkg:", False),
        (":Plugin", False),
        ("my-pkg:Plugin", False),
        ("pkg:Plugin:x", False),
    ],
    ids=["dotted", "short", "nested-attr", "in-tree", "no-attr", "no-module", "dash", "two-colons"],
)
def test_is_import_path(name, expected):
    assert names.is_import_path(name) is expected


# (default, custom, expected) per upstream TestMergePlugins (Filter point).
MERGE_CASES = [
    pytest.param(
        _set(["DefaultPlugin1", "DefaultPlugin2"]),
        _set(["CustomPlugin"]),
        _set(["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"]),
        id="append-custom",
    ),
    pytest.param(
        _set(["DefaultPlugin1", "DefaultPlugin2"]),
        _set(["CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"]),
        _set(["DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"], ["DefaultPlugin2"]),
        id="insert-after-default-plugins",
    ),
    pytest.param(
        _set(["DefaultPlugin1", "DefaultPlugin2"]),
        _set(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"]),
        _set(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"], ["*"]),
        id="insert-before-all",
    ),
    pytest.param(
        _set(["DefaultPlugin1", "DefaultPlugin2"]),
        _set(["DefaultPlugin2", "DefaultPlugin1"], ["*"]),
        _set(["DefaultPlugin2", "DefaultPlugin1"], ["*"]),
        id="reorder-defaults",
    ),
    pytest.param(
        _set(["Plugin1", "Plugin2", "Plugin3"]),
        _set([("Plugin1", 2), ("Plugin3", 3)]),
        _set([("Plugin1", 2), "Plugin2", ("Plugin3", 3)]),
        id="override-default-weight",
    ),
    pytest.param(
        _set(["Plugin1", "Plugin2", "Plugin3"]),
        _set([("Plugin2", 2), ("Plugin1", 1)]),
        _set([("Plugin1", 1), ("Plugin2", 2), "Plugin3"]),
        id="order-preserved-after-override",
    ),
    pytest.param(
        _set(["Plugin1", "Plugin2", "Plugin3"]),
        _set(["Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)]),
        _set(["Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)]),
        id="repeated-custom-last-wins-then-appended",
    ),
    pytest.param(
        _set(["DefaultPlugin"], ["DefaultPlugin2"]),
        _set(["CustomPlugin"]),
        _set(["DefaultPlugin", "CustomPlugin"], ["DefaultPlugin2"]),
        id="default-disabled-carried",
    ),
    pytest.param(
        _set(["DefaultPlugin"]),
        _set(disabled=["DefaultPlugin"]),
        _set(disabled=["DefaultPlugin"]),
        id="only-disabled",
    ),
]


@pytest.mark.parametrize(("default", "custom", "expected"), MERGE_CASES)
def test_merge_plugin_set(default, custom, expected):
    assert merge_plugin_set(default, custom) == expected


def test_merge_plugins_per_point():
    default = Plugins(multi_point=_set(["DefaultPlugin1", "DefaultPlugin2"]))
    custom = Plugins(
        multi_point=_set(["CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]),
        score=_set(disabled=["CustomPlugin2"]),
    )
    merged = merge_plugins(default, custom)
    assert merged.multi_point == _set(
        ["DefaultPlugin1", "CustomPlugin", "CustomPlugin2"], ["DefaultPlugin2"]
    )
    assert merged.score == _set(disabled=["CustomPlugin2"])
    assert merge_plugins(default, None) is default
