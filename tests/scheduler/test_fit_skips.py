"""fit_skips: the store's over-commit check refuses what the profile's Fit refuses."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.config.load import parse_config
from cluster_sched.framework.handle import Handle
from cluster_sched.scheduler.binding_cycle import fit_skips
from cluster_sched.scheduler.profile import new_frameworks
from cluster_sched.testing import make_pod


def framework(plugins: dict[str, Any] | None = None, args: dict[str, Any] | None = None) -> Any:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if plugins:
        profile["plugins"] = plugins
    if args is not None:
        profile["pluginConfig"] = [{"name": "NodeResourcesFit", "args": args}]
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }
    frameworks = new_frameworks(parse_config(doc), lambda p: Handle(profile_name=p.scheduler_name))
    return frameworks["default-scheduler"]


POD = parse_pod(
    make_pod("p").req({"cpu": "1", "example.com/gpu": 1, "other.io/fpga": 1}).manifest()
)


@pytest.mark.parametrize(
    ("fwk", "skips"),
    [
        (lambda: framework(), []),
        (lambda: framework(args={"ignoredResources": ["example.com/gpu"]}), ["example.com/gpu"]),
        (lambda: framework(args={"ignoredResourceGroups": ["other.io"]}), ["other.io/fpga"]),
        (
            lambda: framework(plugins={"filter": {"disabled": [{"name": "NodeResourcesFit"}]}}),
            None,
        ),
    ],
    ids=["default", "ignored", "ignored-group", "no-fit-filter"],
)
def test_fit_skips(fwk: Any, skips: list[str] | None) -> None:
    assert fit_skips(fwk(), POD) == skips
