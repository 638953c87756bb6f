"""A plugin failing anywhere in the binding cycle never kills a binder nor strands a pod.

Through the real coordinator, with both binding executors (threads in this process and
Ray tasks) and both ways of binding: DefaultBinder alone (pods bound together with one
``bind_many``) and an out-of-tree Bind plugin (each pod's Bind run on its own). The
faulty plugins (``tests.testing_plugins.cs_sample_plugins``) fail the pods labelled for it, by raising or by
returning an Error, and return None (upstream's nil Status, Success) for the others.

upstream's binding cycle: a PreBind or Bind failure runs Unreserve, forgets the assumed
pod and requeues it; PostBind's outcome is ignored, the pod is bound.
"""

# Fixtures are imported from test_coordinator (and shadowed by their parameters).

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.config.load import load_config
from cluster_sched.plugins import names
from cluster_sched.queue.types import Location
from tests.scheduler.coordinator_harness import CROSS_NODE, PROFILE, Harness, node, pod
from tests.testing_plugins.cs_sample_plugins import FAIL_AT_LABEL, FAIL_HOW_LABEL
from workers.ray_binding import ray_binding_executor

FAULTY = "tests.testing_plugins.cs_sample_plugins:FaultyBinding"
FAULTY_BINDER = "tests.testing_plugins.cs_sample_plugins:FaultyBinder"
#: liveness bound for Ray bindings (a first task starts a worker); never a timing assertion
RAY_PATIENCE = 120.0


def config_document(binder: str) -> dict[str, Any]:
    """``default-binder``: FaultyBinding next to DefaultBinder; ``plugin-binder``:
    FaultyBinder binds instead of DefaultBinder."""
    disabled = [{"name": n} for n in CROSS_NODE]
    if binder == "plugin-binder":
        disabled.append({"name": names.DEFAULT_BINDER})
    plugin = FAULTY_BINDER if binder == "plugin-binder" else FAULTY
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": PROFILE,
                "plugins": {"multiPoint": {"enabled": [{"name": plugin}], "disabled": disabled}},
            }
        ],
    }


@pytest.fixture(params=["local", "ray"])
def executor(request: pytest.FixtureRequest) -> str:
    if request.param == "ray":
        request.getfixturevalue("ray_session")
    return str(request.param)


@pytest.fixture
def harness(make_harness: Any, executor: str, redis_url: str, tmp_path: Path) -> Any:
    """``harness(binder)``: a coordinator whose profile binds as ``binder`` says."""

    def make(binder: str) -> Harness:
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config_document(binder)), encoding="utf-8")
        cfg = load_config(str(path))
        if executor == "local":
            return make_harness(cfg)  # type: ignore[no-any-return]
        factory = ray_binding_executor(redis_url=redis_url, config_path=str(path))
        return make_harness(cfg, binding_executor=factory, patience=RAY_PATIENCE)  # type: ignore[no-any-return]

    return make


def faulty_pod(name: str, at: str, how: str) -> Any:
    return pod(name).label(FAIL_AT_LABEL, at).label(FAIL_HOW_LABEL, how)


def schedule_next(h: Harness, name: str) -> None:
    """The binder still works: a later pod is scheduled and bound."""
    h.apply(pod(name))
    h.cycle()
    h.settle()
    assert h.node_of(f"default/{name}") == "n1"
    assert h.cache.pod_node(f"default/{name}") == "n1"
    assert not h.cache.assumed


BINDERS = ["default-binder", "plugin-binder"]
HOW = ["raise", "error"]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("binder", BINDERS)
def test_post_bind_failure_is_ignored_the_pod_is_bound(harness: Any, binder: str, how: str) -> None:
    h = harness(binder)
    h.apply(node("n1"), faulty_pod("p", "PostBind", how))
    h.start()
    h.cycle()
    h.settle()  # every binding finished: the binder did not die
    assert h.node_of("default/p") == "n1"
    assert h.cache.pod_node("default/p") == "n1"
    assert not h.cache.assumed
    assert h.requested_cpu("n1") == 1000
    assert h.queue.location("default/p") is None, "a bound pod is never requeued"
    assert [e["reason"] for e in h.store.events(key="default/p")] == ["Scheduled"]
    schedule_next(h, "q")
    assert h.requested_cpu("n1") == 2000


FAILURES = [
    ("default-binder", "PreBind"),
    ("plugin-binder", "PreBind"),
    ("plugin-binder", "Bind"),
]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(("binder", "at"), FAILURES, ids=["-".join(f) for f in FAILURES])
def test_pre_bind_or_bind_failure_forgets_and_requeues(
    harness: Any, binder: str, at: str, how: str
) -> None:
    h = harness(binder)
    h.apply(node("n1"), faulty_pod("p", at, how))
    h.start()
    h.cycle()
    h.settle()
    assert h.node_of("default/p") is None
    assert h.cache.get_pod("default/p") is None, "forgotten"
    assert not h.cache.assumed
    assert h.requested_cpu("n1") == 0
    assert h.queue.location("default/p") is Location.BACKOFF, "an error backs off"
    (event,) = h.store.events(key="default/p", reason="FailedScheduling")
    verb = "crashed" if how == "raise" else "failed"
    assert f"sample plugin {verb} in {at}" in event["message"]
    schedule_next(h, "q")
    assert h.requested_cpu("n1") == 1000
