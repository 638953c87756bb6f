"""fit_skips: the store's over-commit check refuses what the profile's Fit refuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.config.load import parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.binding import BindingJob
from cluster_sched.scheduler.binding_cycle import bind_jobs, fit_skips, store_binder
from cluster_sched.scheduler.profile import new_framework, new_frameworks
from cluster_sched.store.store import Store
from cluster_sched.testing import make_node, make_pod


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


def plugin_binder_framework(store: Store) -> Framework:
    """A profile whose Bind is an out-of-tree plugin writing through handle.binder."""
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "plugins": {
                    "multiPoint": {
                        "enabled": [
                            {"name": "tests.testing_plugins.cs_sample_plugins:FaultyBinder"}
                        ],
                        "disabled": [{"name": "DefaultBinder"}],
                    }
                }
            }
        ],
    }
    handle = Handle(profile_name="default-scheduler", binder=store_binder(store))
    return new_framework(parse_config(doc).profiles[0], handle)


def test_a_bind_plugin_binding_through_the_store_gets_the_check_and_one_event(
    store: Store,
) -> None:
    store.apply_many([make_node("n1").capacity(cpu="1", pods=10).manifest()])
    fwk = plugin_binder_framework(store)
    jobs = []
    for name in ("fits", "too-big"):
        doc = store.apply(make_pod(name).req(cpu="800m").manifest()).obj
        pod = replace(parse_pod(doc), node_name="n1")
        jobs.append(
            BindingJob(pod, "n1", "default-scheduler", CycleState(), QueuedPodInfo(pod.key), 1)
        )
    fits, too_big = bind_jobs(store, {"default-scheduler": fwk}, jobs)
    assert fits.is_success
    assert not too_big.is_success and "over committed" in too_big.message()
    assert [e["key"] for e in store.events(reason="Scheduled")] == ["default/fits"]
    assert [e["key"] for e in store.events(reason="OverCommit")] == ["default/too-big"]


def test_one_shared_bind_many_checks_each_pod_as_its_profile_would(store: Store) -> None:
    """The Fit args are read once per profile per shared ``bind_many`` (``_FitSkips``):
    pods of two profiles in one call, one ignoring the GPU, the other not, each get
    their own profile's check (a per-call answer would bind b or refuse a)."""
    store.apply_many([make_node("n1").capacity({"cpu": "8", "pods": 10, GPU: 1}).manifest()])
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "ignores-gpu",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": [GPU]}}],
            },
            {"schedulerName": "default-scheduler"},
        ],
    }
    frameworks = new_frameworks(parse_config(doc), lambda p: Handle(profile_name=p.scheduler_name))
    jobs = []
    for name, profile in (("a", "ignores-gpu"), ("b", "default-scheduler"), ("c", "ignores-gpu")):
        stored = store.apply(make_pod(name).req({"cpu": "1", GPU: 1}).manifest()).obj
        pod = replace(parse_pod(stored), node_name="n1")
        jobs.append(BindingJob(pod, "n1", profile, CycleState(), QueuedPodInfo(pod.key), 1))
    a, b, c = bind_jobs(store, frameworks, jobs)
    assert a.is_success and c.is_success  # the GPU is not checked for their profile
    assert not b.is_success and "over committed" in b.message()  # a holds the one GPU
    assert [e["key"] for e in store.events(reason="OverCommit")] == ["default/b"]


GPU = "example.com/gpu"
