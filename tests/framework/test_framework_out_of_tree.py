"""Out-of-tree plugins named ``module:Class`` in a KubeSchedulerConfiguration, and the
registry's view of the in-tree plugins' extension points.

The sample plugins are ``tests.testing_plugins.cs_sample_plugins``, importable like any
installed package's module; nothing in ``cluster_sched`` knows them.
"""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import ConfigError, PluginError
from cluster_sched.framework.events import EVENT_WILDCARD
from cluster_sched.plugins import names
from cluster_sched.plugins.registry import new_in_tree_registry
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import make_node, make_pod
from tests.testing_plugins.cs_sample_plugins import REJECT_LABEL, REJECT_REASON

SAMPLES = "tests.testing_plugins.cs_sample_plugins"
SCORE = f"{SAMPLES}:PreferNamed"
FILTER = f"{SAMPLES}:RejectLabel"


def _config(
    plugins: dict[str, Any], plugin_config: list[dict[str, Any]] | None = None
) -> SchedulerConfiguration:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": plugins}
    if plugin_config:
        profile["pluginConfig"] = plugin_config
    return parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [profile],
        }
    )


def _cluster() -> Cache:
    cache = Cache()
    cache.load(
        [
            make_node("n1")
            .capacity(cpu="4", memory="8Gi", pods=10)
            .label(REJECT_LABEL, "yes")
            .obj(),
            make_node("n2").capacity(cpu="4", memory="8Gi", pods=10).obj(),
            make_node("n3").capacity(cpu="4", memory="8Gi", pods=10).obj(),
        ]
    )
    return cache


SAMPLE_PLUGINS = {
    "score": {"enabled": [{"name": SCORE, "weight": 5}]},
    "filter": {"enabled": [{"name": FILTER}]},
}


def test_out_of_tree_plugins_load_run_and_show_in_explain() -> None:
    config = _config(SAMPLE_PLUGINS, [{"name": SCORE, "args": {"prefer": ["n3"]}}])
    out = explain(_cluster(), make_pod("web").req(cpu="1").obj(), config, seed=1).json
    assert out["filter"]["n1"] == {
        "code": "Unschedulable",
        "plugin": FILTER,
        "reasons": [REJECT_REASON],
    }
    assert out["selectedNode"] == "n3"
    assert out["rawScores"]["n3"][SCORE] == 100 and out["rawScores"]["n2"][SCORE] == 0
    # default plugins still run next to them; n2 and n3 differ only in the sample score,
    # which counts with its configured weight
    assert names.NODE_RESOURCES_FIT in out["scores"]["n2"]
    assert out["finalScores"]["n3"] - out["finalScores"]["n2"] == 5 * 100


def test_out_of_tree_capabilities_come_from_its_methods() -> None:
    registry = new_in_tree_registry()
    assert registry.capabilities([SCORE, FILTER])[SCORE] == frozenset({"score"})
    assert registry.get(FILTER).capabilities == frozenset({"filter"})  # type: ignore[union-attr]


def test_out_of_tree_filter_without_registration_gets_the_wildcard() -> None:
    fwk = new_framework(_config(SAMPLE_PLUGINS).profiles[0])
    events = fwk.events_to_register()
    assert events[FILTER] == (EVENT_WILDCARD,)
    assert SCORE not in events
    assert fwk.score_weights[SCORE] == 5


@pytest.mark.parametrize(
    ("plugin", "point", "error", "needles"),
    [
        pytest.param(
            "cs_no_such_module:Plugin", "filter", PluginError,
            ['"cs_no_such_module:Plugin"', "cannot import module 'cs_no_such_module'"], id="import-error",
        ),
        pytest.param(
            f"{SAMPLES}:NOT_A_CLASS", "filter", PluginError,
            [f'"{SAMPLES}:NOT_A_CLASS"', "must be a class"], id="not-a-class",
        ),
        pytest.param(
            f"{SAMPLES}:Missing", "filter", PluginError,
            [f'"{SAMPLES}:Missing"', "has no attribute 'Missing'"], id="missing-attribute",
        ),
        pytest.param(
            f"{SAMPLES}:RefusesArgs", "filter", (PluginError, ConfigError),
            [f'"{SAMPLES}:RefusesArgs"', "prefer must be a list"], id="constructor-raises",
        ),
        pytest.param(
            FILTER, "score", (PluginError, ConfigError),
            [f'"{FILTER}"', "does not extend score"], id="wrong-extension-point",
        ),
    ],
)  # fmt: skip
def test_bad_out_of_tree_plugin_is_one_line_naming_it(
    plugin: str, point: str, error: Any, needles: list[str]
) -> None:
    config = _config({point: {"enabled": [{"name": plugin}]}})
    with pytest.raises(error) as err:
        new_framework(config.profiles[0])
    message = str(err.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message


def test_malformed_import_path_is_rejected_at_config_load() -> None:
    with pytest.raises(ConfigError) as err:
        _config({"filter": {"enabled": [{"name": "not a:path:at all"}]}})
    assert "not a:path:at all" in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------------- in-tree registry

#: upstream v1.35: the framework interfaces each in-tree plugin implements
#: (pkg/scheduler/framework/plugins/*, ``var _ fwk.XPlugin = &X{}``).
UPSTREAM_EXTENSION_POINTS: dict[str, set[str]] = {
    names.SCHEDULING_GATES: {"preEnqueue"},
    names.PRIORITY_SORT: {"queueSort"},
    names.NODE_UNSCHEDULABLE: {"filter"},
    names.NODE_NAME: {"filter"},
    names.TAINT_TOLERATION: {"filter", "preScore", "score"},
    names.NODE_AFFINITY: {"preFilter", "filter", "preScore", "score"},
    names.NODE_PORTS: {"preFilter", "filter"},
    names.NODE_RESOURCES_FIT: {"preFilter", "filter", "preScore", "score"},
    names.NODE_RESOURCES_BALANCED_ALLOCATION: {"preScore", "score"},
    names.IMAGE_LOCALITY: {"score"},
    names.VOLUME_RESTRICTIONS: {"preFilter", "filter"},
    names.NODE_VOLUME_LIMITS: {"preFilter", "filter"},
    names.VOLUME_BINDING: {"preFilter", "filter", "reserve", "preBind", "preScore", "score"},
    names.VOLUME_ZONE: {"preFilter", "filter"},
    names.INTER_POD_AFFINITY: {"preFilter", "filter", "preScore", "score"},
    names.POD_TOPOLOGY_SPREAD: {"preFilter", "filter", "preScore", "score"},
    names.DEFAULT_BINDER: {"bind"},
    names.DEFAULT_PREEMPTION: {"preEnqueue", "postFilter"},
    names.DYNAMIC_RESOURCES: {
        "preEnqueue",
        "preFilter",
        "filter",
        "postFilter",
        "score",
        "reserve",
        "preBind",
    },
}

#: Known gaps, kept visible: strict xfail fails the suite once they are closed.
_KNOWN_GAPS: dict[str, str] = {}


@pytest.mark.parametrize(
    "plugin",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=_KNOWN_GAPS[n]))
        if n in _KNOWN_GAPS
        else n
        for n in sorted(UPSTREAM_EXTENSION_POINTS)
    ],
)
def test_in_tree_capabilities_match_upstream(plugin: str) -> None:
    spec = new_in_tree_registry().get(plugin)
    assert spec is not None, f"{plugin} is not registered"
    assert spec.capabilities == UPSTREAM_EXTENSION_POINTS[plugin]


def test_every_in_tree_plugin_is_covered() -> None:
    assert set(new_in_tree_registry().names()) == set(UPSTREAM_EXTENSION_POINTS)
