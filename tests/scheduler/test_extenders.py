"""scheduler.extenders inside one attempt (``Scheduler.schedule_pod`` on a Cache):
spans per extender call, prioritize errors ignored, the search width."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.extenders import ATTR_EXTENDER_URL
from cluster_sched.scheduler.profile import new_frameworks
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import setup_tracing
from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.testing.extender_server import ExtenderServer, FakeExtender, only, prefer
from cluster_sched.testing.otlp_receiver import OtlpReceiver


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


def _setup(extenders: list[dict[str, Any]], n: int = 3) -> tuple[Cache, Framework]:
    cache = Cache()
    cache.load(
        [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10).obj() for i in range(n)]
    )
    cfg = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": extenders,
        }
    )
    frameworks = new_frameworks(
        cfg,
        lambda p: Handle(
            profile_name=p.scheduler_name, snapshot=cache.snapshot, rng=random.Random(1)
        ),
    )
    return cache, frameworks["default-scheduler"]


def _attempt(cache: Cache, fwk: Framework) -> Any:
    table = cache.sink.table  # type: ignore[attr-defined]
    return Scheduler(0, random.Random(1)).schedule_pod(
        fwk, CycleState(), make_pod("p").req(cpu="1").obj(), table, cache.snapshot
    )


def test_each_extender_call_is_a_span(serve: Any) -> None:
    url = serve(FakeExtender(predicates=[only("n0", "n1")], prioritizers=[(prefer("n1"), 1)]))
    cache, fwk = _setup(
        [{"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1}]
    )
    with OtlpReceiver() as rx:
        tracing = setup_tracing(rx.endpoint)
        try:
            fwk.instrument(tracing, Metrics.disabled())
            _attempt(cache, fwk)
            assert tracing.force_flush()
        finally:
            tracing.shutdown()
        spans = rx.wait_for(lambda got: any(s.name == "extender: prioritize" for s in got))
    named = {s.name: s for s in spans}
    assert named["extender: filter"].attributes[ATTR_EXTENDER_URL] == url
    assert named["extender: prioritize"].attributes[ATTR_EXTENDER_URL] == url


def test_prioritize_errors_are_ignored(serve: Any) -> None:
    """upstream prioritizeNodes: a failing prioritizer gives no score, nothing fails."""
    good = serve(FakeExtender(prioritizers=[(prefer("n2"), 10)]))
    bad = serve(FakeExtender(status=500))
    cache, fwk = _setup(
        [
            {"urlPrefix": bad, "prioritizeVerb": "prioritize", "weight": 100},
            {"urlPrefix": good, "prioritizeVerb": "prioritize", "weight": 10},
        ]
    )
    result = _attempt(cache, fwk)
    assert result.suggested_host == "n2"


def test_extender_filter_sees_every_feasible_node(serve: Any) -> None:
    """numFeasibleNodesToFind applies before the extenders: with 3 nodes, all of them."""
    fake = FakeExtender(predicates=[only("n2")])
    cache, fwk = _setup([{"urlPrefix": serve(fake), "filterVerb": "filter"}])
    result = _attempt(cache, fwk)
    assert result.suggested_host == "n2"
    sent = fake.calls[0][1]["Nodes"]["items"]
    assert sorted(n["metadata"]["name"] for n in sent) == ["n0", "n1", "n2"]
