"""Prometheus metrics: upstream names, labels and buckets; a private registry; /metrics served."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cluster_sched.telemetry.metrics import (
    EXTENSION_POINT_BUCKETS,
    LATENCY_BUCKETS,
    POD_ATTEMPTS_BUCKETS,
    VICTIM_BUCKETS,
    Metrics,
    exponential_buckets,
)


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def families(metrics: Metrics) -> dict[str, str]:
    return {f.name: f.type for f in text_string_to_metric_families(metrics.exposition().decode())}


def test_metric_names_and_types_match_upstream() -> None:
    assert families(Metrics()) == {
        "scheduler_schedule_attempts": "counter",
        "scheduler_scheduling_attempt_duration_seconds": "histogram",
        "scheduler_scheduling_algorithm_duration_seconds": "histogram",
        "scheduler_pending_pods": "gauge",
        "scheduler_framework_extension_point_duration_seconds": "histogram",
        "scheduler_preemption_attempts": "counter",
        "scheduler_preemption_victims": "histogram",
        "scheduler_queue_incoming_pods": "counter",
        "scheduler_pod_scheduling_attempts": "histogram",
        "scheduler_pod_scheduling_sli_duration_seconds": "histogram",
        "scheduler_plugin_execution_duration_seconds": "histogram",
        "scheduler_plugin_evaluation": "counter",
        "scheduler_permit_wait_duration_seconds": "histogram",
        "scheduler_event_handling_duration_seconds": "histogram",
        "scheduler_unschedulable_pods": "gauge",
        "scheduler_scheduler_cache_size": "gauge",
        "scheduler_inflight_events": "gauge",
        "scheduler_batch_attempts": "counter",
        "scheduler_batch_cache_flushed": "counter",
        # ours, not upstream's: 1 while serve waits for an unreachable Redis
        "cluster_sched_store_unavailable": "gauge",
    }


def test_batching_counters_carry_upstreams_labels() -> None:
    m = Metrics()
    m.inc_batch("attempt", "default-scheduler", "hint_used")
    m.inc_batch("flush", "default-scheduler", "node_not_full")
    got = samples(m)
    key = (("profile", "default-scheduler"), ("result", "hint_used"))
    assert got[("scheduler_batch_attempts_total", key)] == 1
    key = (("profile", "default-scheduler"), ("reason", "node_not_full"))
    assert got[("scheduler_batch_cache_flushed_total", key)] == 1


@pytest.mark.parametrize(
    ("buckets", "first", "last", "count"),
    [
        (LATENCY_BUCKETS, 0.001, 16.384, 15),
        (EXTENSION_POINT_BUCKETS, 0.0001, 0.2048, 12),
        (VICTIM_BUCKETS, 1, 64, 7),
        (POD_ATTEMPTS_BUCKETS, 1, 16, 5),
    ],
    ids=["attempt-latency", "extension-point", "victims", "pod-attempts"],
)
def test_buckets_are_upstreams(
    buckets: tuple[float, ...], first: float, last: float, count: int
) -> None:
    assert len(buckets) == count
    assert buckets[0] == pytest.approx(first)
    assert buckets[-1] == pytest.approx(last)


def test_exponential_buckets_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        exponential_buckets(0, 2, 3)


def test_observations_land_under_upstream_labels() -> None:
    m = Metrics()
    m.observe_attempt("scheduled", "default-scheduler", 0.003)
    m.observe_attempt("unschedulable", "default-scheduler", 0.5)
    m.observe_extension_point("Filter", "Success", "default-scheduler", 0.00015)
    m.observe_preemption(3)
    m.inc_incoming("active", "PodAdd", 2)
    m.set_pending_all(active=4, backoff=1, unschedulable=2, gated=0)
    m.observe_pod_scheduled(2)
    m.observe_algorithm(0.002)
    got = samples(m)

    profile = ("profile", "default-scheduler")
    assert got[("scheduler_schedule_attempts_total", (profile, ("result", "scheduled")))] == 1
    assert got[("scheduler_schedule_attempts_total", (profile, ("result", "unschedulable")))] == 1
    le_4ms = (
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        (("le", "0.004"), profile, ("result", "scheduled")),
    )
    assert got[le_4ms] == 1
    ep = (("extension_point", "Filter"), ("le", "0.0002"), profile, ("status", "Success"))
    assert got[("scheduler_framework_extension_point_duration_seconds_bucket", ep)] == 1
    assert got[("scheduler_preemption_attempts_total", ())] == 1
    assert got[("scheduler_preemption_victims_bucket", (("le", "4.0"),))] == 1
    assert got[("scheduler_preemption_victims_bucket", (("le", "2.0"),))] == 0
    assert (
        got[("scheduler_queue_incoming_pods_total", (("event", "PodAdd"), ("queue", "active")))]
        == 2
    )
    assert {
        q: got[("scheduler_pending_pods", (("queue", q),))]
        for q in ("active", "backoff", "unschedulable", "gated")
    } == {
        "active": 4,
        "backoff": 1,
        "unschedulable": 2,
        "gated": 0,
    }
    assert got[("scheduler_pod_scheduling_attempts_count", ())] == 1
    assert not any(name.endswith("_created") for name, _ in got)


def test_registries_are_private() -> None:
    a, b = Metrics(), Metrics()
    a.observe_preemption(1)
    assert samples(b)[("scheduler_preemption_attempts_total", ())] == 0


def test_disabled_metrics_do_nothing() -> None:
    m = Metrics.disabled()
    assert m is Metrics.disabled()
    assert not m.enabled
    m.observe_attempt("scheduled", "p", 1.0)
    m.observe_extension_point("Filter", "Success", "p", 1.0)
    m.observe_preemption(2)
    m.inc_incoming("active", "PodAdd")
    m.set_pending("active", 3)
    m.set_pending_all(1, 2, 3, 4)
    m.observe_pod_scheduled(1)
    m.observe_algorithm(1.0)
    assert m.exposition() == b""


def test_http_server_serves_metrics() -> None:
    m = Metrics()
    m.observe_attempt("error", "p", 0.01)
    server, port = m.start_http_server(0, addr="127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            body = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'scheduler_schedule_attempts_total{profile="p",result="error"} 1.0' in body
