"""load_config / parse_config: decoding, defaulting and validation of the document."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.config import (
    API_VERSION,
    DEFAULT_PLUGINS,
    KIND,
    default_config,
    load_config,
    parse_config,
)
from cluster_sched.config.plugin_args import (
    DefaultPreemptionArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
)
from cluster_sched.errors import ConfigError


def _doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def _error(doc: Any) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    return str(info.value)


def test_no_file_gives_upstream_defaults():
    config = load_config(None)
    assert config == default_config()
    assert config.parallelism == 16
    assert config.percentage_of_nodes_to_score == 0
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    [profile] = config.profiles
    assert profile.scheduler_name == "default-scheduler"
    assert profile.plugins == DEFAULT_PLUGINS
    assert profile.percentage_of_nodes_to_score is None
    assert config.percentage_for(profile) == 0
    assert config.profile("default-scheduler") is profile
    assert config.profile("other") is None


def test_default_plugin_config_covers_enabled_plugins_with_args():
    profile = default_config().profiles[0]
    assert sorted(profile.plugin_config) == [
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "PodTopologySpread",
        "VolumeBinding",
    ]
    assert profile.args_for("NodeResourcesFit") == NodeResourcesFitArgs()
    assert profile.args_for("PrioritySort") is None


def test_full_document_round_trip():
    doc = _doc(
        parallelism=8,
        percentageOfNodesToScore=40,
        podInitialBackoffSeconds=2,
        podMaxBackoffSeconds=20,
        leaderElection={"leaderElect": False},
        clientConnection={"kubeconfig": "/etc/kubernetes/scheduler.conf"},
        enableProfiling=True,
        profiles=[
            {
                "schedulerName": "a",
                "percentageOfNodesToScore": 70,
                "pluginConfig": [
                    {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 5}}
                ],
            },
            {"schedulerName": "b", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
        ],
    )
    config = parse_config(doc)
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (8, 40)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 20)
    a, b = config.profiles
    assert config.percentage_for(a) == 70
    assert config.percentage_for(b) == 40
    assert a.args_for("DefaultPreemption") == DefaultPreemptionArgs(10, 5)
    assert b.plugins.score.disabled_names == {"*"}


def test_explicit_null_fields_mean_unset():
    config = parse_config(_doc(profiles=None, parallelism=None, percentageOfNodesToScore=None))
    assert config == default_config()


def test_out_of_tree_plugin_name_and_args_are_kept():
    name = "my_pkg.plugins:MyPlugin"
    doc = _doc(
        profiles=[
            {
                "plugins": {"multiPoint": {"enabled": [{"name": name, "weight": 3}]}},
                "pluginConfig": [{"name": name, "args": {"anything": [1, 2]}}],
            }
        ]
    )
    profile = parse_config(doc).profiles[0]
    assert profile.plugins.multi_point.enabled[-1].name == name
    assert profile.plugins.multi_point.enabled[-1].weight == 3
    assert dict(profile.args_for(name)) == {"anything": [1, 2]}


def test_plugin_ref_remembers_its_field():
    doc = _doc(profiles=[{"plugins": {"score": {"enabled": [{"name": "ImageLocality"}]}}}])
    [ref] = parse_config(doc).profiles[0].plugins.score.enabled
    assert ref.field == "profiles[0].plugins.score.enabled[0]"


ERRORS = [
    pytest.param(["a"], "expected a mapping, got list", id="not-a-mapping"),
    pytest.param({"kind": KIND}, "apiVersion: required value", id="missing-api-version"),
    pytest.param(
        {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
        'apiVersion: unsupported value "kubescheduler.config.k8s.io/v1beta3": '
        'supported values: "kubescheduler.config.k8s.io/v1"',
        id="old-api-version",
    ),
    pytest.param(
        {"apiVersion": API_VERSION, "kind": "Policy"},
        'kind: unsupported value "Policy": supported values: "KubeSchedulerConfiguration"',
        id="wrong-kind",
    ),
    pytest.param(_doc(schedulerName="x"), "schedulerName: unknown field", id="unknown-top-level"),
    pytest.param(
        _doc(leaderElection=["x"]),
        "leaderElection: expected a mapping, got list",
        id="ignored-but-typed",
    ),
    pytest.param(
        _doc(extenders=[{"urlPrefix": "http://x", "prioritizeVerb": "p"}]),
        "extenders[0].weight: invalid value 0: must have a positive weight applied to it",
        id="extender-weight",
    ),
    pytest.param(
        _doc(parallelism=0),
        "parallelism: invalid value 0: should be an integer value greater than zero",
        id="parallelism-zero",
    ),
    pytest.param(
        _doc(parallelism="16"),
        "parallelism: expected an integer, got string",
        id="parallelism-type",
    ),
    pytest.param(
        _doc(parallelism=2**31),
        "parallelism: invalid value 2147483648: out of the int32 range",
        id="int32",
    ),
    pytest.param(
        _doc(percentageOfNodesToScore=101),
        "percentageOfNodesToScore: invalid value 101: not in valid range [0-100]",
        id="global-percentage",
    ),
    pytest.param(
        _doc(profiles=[{"percentageOfNodesToScore": -1}]),
        "profiles[0].percentageOfNodesToScore: invalid value -1: not in valid range [0-100]",
        id="profile-percentage",
    ),
    pytest.param(
        _doc(podInitialBackoffSeconds=0),
        "podInitialBackoffSeconds: invalid value 0: must be greater than 0",
        id="initial-backoff",
    ),
    pytest.param(
        _doc(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
        "podMaxBackoffSeconds: invalid value 4: must be greater than or equal to "
        "PodInitialBackoffSeconds",
        id="max-backoff",
    ),
    pytest.param(
        _doc(profiles=[{"schedulerName": "a"}, {}]),
        "profiles[1].schedulerName: required value",
        id="unnamed-second-profile",
    ),
    pytest.param(
        _doc(profiles=[{"schedulerName": ""}]),
        "profiles[0].schedulerName: required value",
        id="empty-name",
    ),
    pytest.param(
        _doc(profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}]),
        'profiles[2].schedulerName: duplicate value "a" (also profiles[0].schedulerName)',
        id="duplicate-names",
    ),
    pytest.param(
        _doc(profiles=[{"plugins": {"normalizeScore": {}}}]),
        "profiles[0].plugins.normalizeScore: unknown field",
        id="unknown-extension-point",
    ),
    pytest.param(
        _doc(profiles=[{"plugins": {"score": {"enabled": [{"weight": 1}]}}}]),
        "profiles[0].plugins.score.enabled[0].name: required value",
        id="plugin-without-name",
    ),
    pytest.param(
        _doc(profiles=[{"plugins": {"score": {"enabled": [{"name": "A", "wieght": 1}]}}}]),
        "profiles[0].plugins.score.enabled[0].wieght: unknown field",
        id="plugin-typo",
    ),
    pytest.param(
        _doc(
            profiles=[
                {"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": -2}]}}}
            ]
        ),
        "profiles[0].plugins.score.enabled[0].weight: invalid value -2: must not be negative",
        id="negative-weight",
    ),
    pytest.param(
        _doc(profiles=[{"plugins": {"filter": {"enabled": [{"name": "EBSLimits"}]}}}]),
        'profiles[0].plugins.filter.enabled[0]: invalid value "EBSLimits": was invalid in '
        'version "kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version '
        '"kubescheduler.config.k8s.io/v1")',
        id="removed-plugin",
    ),
    pytest.param(
        _doc(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "my-pkg:Plugin"}]}}}]),
        'profiles[0].plugins.multiPoint.enabled[0].name: invalid value "my-pkg:Plugin": an '
        'out-of-tree plugin is named by its import path, "package.module:Attribute"',
        id="bad-import-path",
    ),
    pytest.param(
        _doc(profiles=[{"pluginConfig": [{"name": "X"}, {"name": "X"}]}]),
        'profiles[0].pluginConfig[1]: duplicate value "X"',
        id="duplicate-plugin-config",
    ),
    pytest.param(
        _doc(profiles=[{"pluginConfig": [{"args": {}}]}]),
        "profiles[0].pluginConfig[0].name: required value",
        id="plugin-config-without-name",
    ),
    pytest.param(
        _doc(profiles=[{"pluginConfig": [{"name": "X", "args": [1]}]}]),
        "profiles[0].pluginConfig[0].args: expected a mapping, got list",
        id="args-not-mapping",
    ),
    pytest.param(
        _doc(
            profiles=[
                {
                    "pluginConfig": [
                        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Foo"}}}
                    ]
                }
            ]
        ),
        'profiles[0].pluginConfig[0].args.scoringStrategy.type: unsupported value "Foo": '
        'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        id="plugin-args-error",
    ),
    pytest.param(
        _doc(
            profiles=[
                {
                    "schedulerName": "a",
                    "plugins": {"queueSort": {"enabled": [{"name": "S1"}, {"name": "S2"}]}},
                },
            ]
        ),
        "profiles[0].plugins.queueSort.enabled: invalid value 2: only one queue sort plugin can be enabled",
        id="queue-sort-twice",
    ),
    pytest.param(
        _doc(
            profiles=[
                {"schedulerName": "a"},
                {"schedulerName": "b", "plugins": {"queueSort": {"enabled": [{"name": "S1"}]}}},
            ]
        ),
        "profiles[1].plugins.queueSort: invalid value: must be the same for all profiles",
        id="queue-sort-differs",
    ),
    pytest.param(
        _doc(
            profiles=[
                {
                    "schedulerName": "a",
                    "plugins": {"queueSort": {"enabled": [{"name": "S1"}]}},
                    "pluginConfig": [{"name": "S1", "args": {"x": 1}}],
                },
                {
                    "schedulerName": "b",
                    "plugins": {"queueSort": {"enabled": [{"name": "S1"}]}},
                    "pluginConfig": [{"name": "S1", "args": {"x": 2}}],
                },
            ]
        ),
        'profiles[1].pluginConfig: invalid value: queueSort args of "S1" must be the same for '
        "all profiles",
        id="queue-sort-args-differ",
    ),
]


@pytest.mark.parametrize(("doc", "message"), ERRORS)
def test_validation_errors_name_the_field(doc, message):
    assert _error(doc) == message


def test_multi_profile_with_same_queue_sort_is_accepted():
    sort = {"queueSort": {"enabled": [{"name": "S1"}]}}
    doc = _doc(
        profiles=[
            {"schedulerName": "a", "plugins": sort},
            {"schedulerName": "b", "plugins": sort},
        ]
    )
    assert [p.scheduler_name for p in parse_config(doc).profiles] == ["a", "b"]


def test_source_prefixes_errors():
    with pytest.raises(ConfigError, match=r"^sched\.yaml: parallelism: "):
        parse_config(_doc(parallelism=-1), source="sched.yaml")


# --- files ------------------------------------------------------------------------------


def test_load_yaml_file(tmp_path):
    path = tmp_path / "sched.yaml"
    path.write_text(
        f"""
apiVersion: {API_VERSION}
kind: {KIND}
profiles:
  - schedulerName: spread
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - maxSkew: 1
              topologyKey: topology.kubernetes.io/zone
              whenUnsatisfiable: DoNotSchedule
"""
    )
    profile = load_config(path).profiles[0]
    assert profile.scheduler_name == "spread"
    args = profile.args_for("PodTopologySpread")
    assert isinstance(args, PodTopologySpreadArgs)
    assert [c.max_skew for c in args.constraints] == [1]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            "apiVersion: x\nkind: [unclosed\n",
            r"^.*sched\.yaml: invalid YAML at line 3, column 1: ",
        ),
        ("a: 1\na: 2\n", r"^.*sched\.yaml: invalid YAML at line 2, column 1: duplicate field 'a'$"),
        ("", r"^.*sched\.yaml: configuration file is empty$"),
        ("- 1\n", r"^.*sched\.yaml: expected a mapping, got list$"),
    ],
    ids=["syntax-error", "duplicate-key", "empty", "not-a-mapping"],
)
def test_bad_files_name_the_file(tmp_path, text, pattern):
    path = tmp_path / "sched.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=pattern):
        load_config(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read configuration: "):
        load_config(tmp_path / "missing.yaml")
