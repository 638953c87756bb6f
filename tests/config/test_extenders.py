"""The ``extenders`` section: decoding, upstream's validateExtenders messages, defaults,
ignorable extenders last, and ignoredByScheduler feeding NodeResourcesFit."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from cluster_sched.config.extenders import (
    DEFAULT_EXTENDER_TIMEOUT_SECONDS,
    ExtenderManagedResource,
    parse_duration,
)
from cluster_sched.config.load import parse_config
from cluster_sched.errors import ConfigError
from cluster_sched.plugins import names


def _doc(*extenders: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": list(extenders),
        **top,
    }


def test_every_field_is_decoded() -> None:
    cfg = parse_config(
        _doc(
            {
                "urlPrefix": "https://ext:8443/scheduler",
                "filterVerb": "filter",
                "preemptVerb": "preempt",
                "prioritizeVerb": "prioritize",
                "bindVerb": "bind",
                "weight": 5,
                "enableHTTPS": True,
                "tlsConfig": {
                    "insecure": False,
                    "serverName": "ext",
                    "caData": base64.b64encode(b"PEM").decode(),
                },
                "httpTimeout": "1m30s",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": False}],
                "ignorable": True,
            }
        )
    )
    (ext,) = cfg.extenders
    assert ext.url_prefix == "https://ext:8443/scheduler"
    assert (ext.filter_verb, ext.preempt_verb, ext.prioritize_verb, ext.bind_verb) == (
        "filter",
        "preempt",
        "prioritize",
        "bind",
    )
    assert ext.weight == 5 and ext.enable_https and ext.node_cache_capable and ext.ignorable
    assert ext.tls_config is not None and ext.tls_config.ca_data == b"PEM"
    assert ext.tls_config.server_name == "ext"
    assert ext.http_timeout == 90.0 and ext.timeout_seconds == 90.0
    assert ext.managed_resources == (ExtenderManagedResource("example.com/gpu", False),)


def test_unset_timeout_is_upstreams_default() -> None:
    (ext,) = parse_config(_doc({"urlPrefix": "http://x", "filterVerb": "f"})).extenders
    assert ext.http_timeout == 0.0
    assert ext.timeout_seconds == DEFAULT_EXTENDER_TIMEOUT_SECONDS == 5.0


def test_no_extenders_by_default() -> None:
    cfg = parse_config({k: v for k, v in _doc().items() if k != "extenders"})
    assert cfg.extenders == ()


def test_ignorable_extenders_are_placed_last() -> None:
    cfg = parse_config(
        _doc(
            {"urlPrefix": "http://a", "ignorable": True},
            {"urlPrefix": "http://b"},
            {"urlPrefix": "http://c", "ignorable": True},
            {"urlPrefix": "http://d"},
        )
    )
    assert [e.url_prefix for e in cfg.extenders] == ["http://b", "http://d", "http://a", "http://c"]


def test_ignored_by_scheduler_replaces_node_resources_fit_ignored_resources() -> None:
    cfg = parse_config(
        _doc(
            {
                "urlPrefix": "http://x",
                "managedResources": [
                    {"name": "foo.com/bar", "ignoredByScheduler": True},
                    {"name": "foo.com/baz"},
                ],
            },
            profiles=[
                {
                    "pluginConfig": [
                        {"name": "NodeResourcesFit", "args": {"ignoredResources": ["x.io/y"]}}
                    ]
                }
            ],
        )
    )
    args = cfg.profiles[0].args_for(names.NODE_RESOURCES_FIT)
    assert args.ignored_resources == ("foo.com/bar",)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5s", 5.0), ("1m30s", 90.0), ("250ms", 0.25), ("1.5h", 5400.0), ("0", 0.0), ("2us", 2e-6)],
)
def test_durations_parse_as_go_does(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5", "s", "5 s", "5sec", ""])
def test_bad_durations_are_rejected(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    ("extenders", "message"),
    [
        pytest.param(
            [{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": -1}],
            "extenders[0].weight: invalid value -1: must have a positive weight applied to it",
            id="negative-weight",
        ),
        pytest.param(
            [
                {"urlPrefix": "http://a", "bindVerb": "b"},
                {"urlPrefix": "http://b", "bindVerb": "b"},
            ],
            'extenders: invalid value "found 2 extenders implementing bind": '
            "only one extender can implement bind",
            id="two-binders",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "managedResources": [{"name": "memory"}]}],
            'extenders[0].managedResources[0].name: invalid value "memory": '
            "is an invalid extended resource name",
            id="native-resource",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "managedResources": [{"name": "kubernetes.io/x"}]}],
            'extenders[0].managedResources[0].name: invalid value "kubernetes.io/x": '
            "is an invalid extended resource name",
            id="kubernetes-io-resource",
        ),
        pytest.param(
            [
                {"urlPrefix": "http://a", "managedResources": [{"name": "foo.com/bar"}]},
                {"urlPrefix": "http://b", "managedResources": [{"name": "foo.com/bar"}]},
            ],
            'extenders[1].managedResources[0].name: invalid value "foo.com/bar": '
            "duplicate extender managed resource name",
            id="duplicate-resource",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "httpTimeout": "soon"}],
            'extenders[0].httpTimeout: invalid value "soon": not a duration',
            id="bad-timeout",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "filtreVerb": "f"}],
            "extenders[0].filtreVerb: unknown field",
            id="unknown-field",
        ),
        pytest.param([{"filterVerb": "f"}], "extenders[0].urlPrefix: required value", id="no-url"),
        pytest.param(
            [{"urlPrefix": "http://a", "tlsConfig": {"caData": "not base64!"}}],
            "extenders[0].tlsConfig.caData: invalid value: expected base64-encoded data",
            id="bad-ca-data",
        ),
    ],
)
def test_invalid_extenders_are_one_line_naming_the_field(
    extenders: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_doc(*extenders), "sched.yaml")
    assert str(err.value).startswith(f"sched.yaml: {message}")


def test_ignored_resource_without_node_resources_fit_is_rejected() -> None:
    doc = _doc(
        {
            "urlPrefix": "http://x",
            "managedResources": [{"name": "a.io/b", "ignoredByScheduler": True}],
        },
        profiles=[{"plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}}],
    )
    with pytest.raises(ConfigError, match="can't find NodeResourcesFitArgs in plugin config"):
        parse_config(doc)
