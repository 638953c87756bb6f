"""DefaultBinder's batched write is still each pod's Bind extension point: a ``bind``
span under every binding cycle and ``extension_point="Bind"`` per pod, with its status."""

from __future__ import annotations

from dataclasses import replace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cluster_sched.api.manifest import parse_pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.queue.types import QueuedPodInfo
from cluster_sched.scheduler.binding import BindingJob
from cluster_sched.scheduler.binding_cycle import bind_jobs, store_binder
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.store.store import Store
from cluster_sched.telemetry import spans as S
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import setup_tracing
from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.testing.otlp_receiver import OtlpReceiver
from tests.scheduler.coordinator_harness import PROFILE, config


def _job(store: Store, name: str) -> BindingJob:
    result = store.apply(make_pod(name).req(cpu="100m").manifest())
    pod = replace(parse_pod(result.obj), node_name="n1")
    return BindingJob(pod, "n1", PROFILE, CycleState(), QueuedPodInfo(pod.key), 1)


@pytest.fixture
def nodes(store: Store) -> None:
    store.apply_many([make_node("n1").capacity(cpu="4", pods=110).manifest()])


def test_batched_bind_is_each_pods_bind_extension_point(store: Store, nodes: None) -> None:
    metrics = Metrics()
    fwk = new_framework(
        config().profiles[0], Handle(profile_name=PROFILE, binder=store_binder(store))
    )
    with OtlpReceiver() as receiver:
        tracing = setup_tracing(receiver.endpoint, "test-binding")
        fwk.instrument(tracing, metrics)
        try:
            jobs = [_job(store, f"p{i}") for i in range(3)]
            assert store.bind("default/p1", "n1").ok  # p1's Bind fails: a conflict
            statuses = bind_jobs(store, {PROFILE: fwk}, jobs, tracing)
            assert tracing.force_flush()
        finally:
            tracing.shutdown()
        spans = receiver.wait_for(lambda got: sum(s.name == "bind" for s in got) >= 3)
    assert [s.is_success for s in statuses] == [True, False, True]
    cycles = {s.span_id for s in spans if s.name == S.BINDING_CYCLE}
    binds = [s for s in spans if s.name == "bind"]
    assert len(binds) == 3 and {b.parent_span_id for b in binds} == cycles
    counts = {
        sample.labels["status"]: sample.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for sample in family.samples
        if sample.name == "scheduler_framework_extension_point_duration_seconds_count"
        and sample.labels["extension_point"] == "Bind"
    }
    assert counts == {"Success": 2, "Error": 1}
