"""Value types of the config package and its public surface."""

from __future__ import annotations

import pytest

import cluster_sched.config as config
from cluster_sched.config import EXTENSION_POINTS, MULTI_POINT, PluginRef, Plugins, PluginSet


def test_public_names_resolve():
    assert sorted(config.__all__) == sorted(set(config.__all__))
    for name in config.__all__:
        assert getattr(config, name) is not None, name


def test_extension_points_are_upstream_spellings():
    assert EXTENSION_POINTS == (
        "preEnqueue",
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
    )
    assert MULTI_POINT == "multiPoint"


def test_plugins_get_and_with_set():
    score = PluginSet((PluginRef("A", 2),))
    plugins = (
        Plugins().with_set("score", score).with_set("multiPoint", PluginSet((PluginRef("B"),)))
    )
    assert plugins.get("score") is score
    assert plugins.score is score
    assert plugins.enabled_names() == {"A", "B"}
    assert Plugins().get("filter") == PluginSet()


@pytest.mark.parametrize("point", ["normalizeScore", "PreFilter", ""], ids=repr)
def test_unknown_extension_point_is_a_key_error(point):
    with pytest.raises(KeyError):
        Plugins().get(point)
    with pytest.raises(KeyError):
        Plugins().with_set(point, PluginSet())


def test_plugin_ref_source_field_does_not_affect_equality():
    assert PluginRef("A", 1, field="profiles[0].plugins.score.enabled[0]") == PluginRef("A", 1)
