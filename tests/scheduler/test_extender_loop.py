"""Extenders in the coordinator's loop (a real Redis and Store, the cycle driven by hand):
an extender's rejection is filed under the ``Extender`` pseudo-plugin, a filter error is
an Error (backoff), and binding goes to the extender binder, falling back to the Bind
plugins only past an ignorable binder's failure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cluster_sched.config.load import parse_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.framework.extender import EXTENDER_NAME
from cluster_sched.queue.types import Location
from cluster_sched.testing.extender_server import ExtenderServer, FakeExtender, only
from tests.scheduler.coordinator_harness import CROSS_NODE, Harness, node, pod


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[ExtenderServer] = []

    def start(fake: FakeExtender) -> str:
        server = ExtenderServer(fake).__enter__()
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.__exit__(None, None, None)


def _config(*extenders: dict[str, Any]) -> SchedulerConfiguration:
    disabled = [{"name": n} for n in CROSS_NODE]
    return parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {"multiPoint": {"disabled": disabled}}}],
            "extenders": list(extenders),
        }
    )


def test_extender_rejection_files_the_extender_pseudo_plugin(make_harness: Any, serve: Any) -> None:
    url = serve(FakeExtender(predicates=[only("elsewhere")]))
    h: Harness = make_harness(_config({"urlPrefix": url, "filterVerb": "filter"}))
    h.apply(node("n1"), node("n2"), pod("p"))
    h.start()
    h.cycle()
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE
    assert EXTENDER_NAME in h.queue.get("default/p").unschedulable_plugins
    cond = h.condition("default/p")
    assert cond is not None and cond["reason"] == "Unschedulable"
    assert 'FakeExtender: node "n1" failed' in cond["message"]


def test_extender_filter_error_is_a_scheduler_error(make_harness: Any, serve: Any) -> None:
    url = serve(FakeExtender(filter_error="extender down"))
    h: Harness = make_harness(_config({"urlPrefix": url, "filterVerb": "filter"}))
    h.apply(node("n1"), node("n2"), pod("p"))
    h.start()
    h.cycle()
    assert h.queue.location("default/p") is Location.BACKOFF
    cond = h.condition("default/p")
    assert cond is not None and cond["reason"] == "SchedulerError"
    assert cond["message"] == "extender down"


def test_bind_extender_error_forgets_the_pod(make_harness: Any, serve: Any) -> None:
    binder = FakeExtender(bind_error="cannot bind")
    url = serve(binder)
    h: Harness = make_harness(_config({"urlPrefix": url, "bindVerb": "bind"}))
    h.apply(node("n1"), pod("p"))
    h.start()
    h.cycle()
    h.settle()
    assert binder.verbs() == ["bind"]
    assert h.node_of("default/p") is None, "the Bind plugins did not bind it either"
    assert not h.cache.is_assumed("default/p") and h.requested_cpu("n1") == 0
    assert h.queue.location("default/p") is Location.BACKOFF


def test_ignorable_bind_extender_error_falls_back_to_default_binder(
    make_harness: Any, serve: Any
) -> None:
    binder = FakeExtender(bind_error="cannot bind")
    url = serve(binder)
    h: Harness = make_harness(_config({"urlPrefix": url, "bindVerb": "bind", "ignorable": True}))
    h.apply(node("n1"), pod("p"))
    h.start()
    h.cycle()
    h.settle()
    assert binder.verbs() == ["bind"]
    assert h.node_of("default/p") == "n1"


def test_uninterested_bind_extender_leaves_binding_to_the_plugins(
    make_harness: Any, serve: Any
) -> None:
    binder = FakeExtender(bind_error="must not be called")
    url = serve(binder)
    managed = [{"name": "example.com/gpu"}]
    h: Harness = make_harness(
        _config({"urlPrefix": url, "bindVerb": "bind", "managedResources": managed})
    )
    h.apply(node("n1"), pod("p"))
    h.start()
    h.cycle()
    h.settle()
    assert binder.calls == []
    assert h.node_of("default/p") == "n1"


def test_pod_rejected_by_an_extender_is_requeued_by_any_event(
    make_harness: Any, serve: Any
) -> None:
    """upstream: extenders register no events, so the Extender pseudo-plugin admits all."""
    fake = FakeExtender(predicates=[only("n3")])
    url = serve(fake)
    h: Harness = make_harness(_config({"urlPrefix": url, "filterVerb": "filter"}))
    h.apply(node("n1"), pod("p"))
    h.start()
    h.cycle()
    assert h.queue.location("default/p") is Location.UNSCHEDULABLE
    h.apply(node("n3"))  # a node the extender accepts
    # Queue (the Extender admits every event) while the pod still owes its first backoff
    # (failed at T0, 1 s; the fake clock has not moved): upstream's backoffQ.
    assert h.queue.location("default/p") is Location.BACKOFF
