"""The coordinator feeds upstream's metric names while it schedules."""

from __future__ import annotations

import re

from cluster_sched.config.load import default_config
from cluster_sched.scheduler.assembly import new_scheduler
from cluster_sched.store.store import Store
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.testing import make_node, make_pod
from cluster_sched.workload.runner import run_workload
from cluster_sched.workload.spec import PodGroup, Workload


def _value(text: str, pattern: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if re.match(pattern, line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_count_attempts_extension_points_queue_and_preemption(redis_client):
    nodes = [
        make_node(f"n{i}").capacity(cpu="2", memory="8Gi", pods=110).manifest() for i in range(2)
    ]
    low = [make_pod(f"low{i}").req(cpu="1").priority(0).manifest() for i in range(4)]
    high = [make_pod("high").req(cpu="2").priority(100).manifest()]
    too_big = [make_pod("huge").req(cpu="64").manifest()]
    workload = Workload(
        name="metrics",
        node_docs=nodes,
        pod_groups=[
            PodGroup(name="low", count=len(low), docs=low),
            PodGroup(name="high", count=2, docs=high + too_big),
        ],
    )
    metrics = Metrics()
    store = Store(redis_client)
    coord = new_scheduler(store, redis_client, default_config(), seed=1, metrics=metrics)
    try:
        run_workload(workload, coord, store, quiet=True, group_timeout=30)
        coord.update_pending_gauges()
    finally:
        coord.close()
    text = metrics.exposition().decode()
    scheduled = _value(text, r'scheduler_schedule_attempts_total\{.*result="scheduled"')
    unschedulable = _value(text, r'scheduler_schedule_attempts_total\{.*result="unschedulable"')
    assert scheduled == 5  # 4 low pods, then the high one after preemption
    assert unschedulable >= 2  # the high pod's first attempt, and the huge pod
    assert _value(text, r"scheduler_preemption_attempts_total ") >= 1
    assert _value(text, r"scheduler_preemption_victims_count ") >= 1
    assert (
        _value(
            text,
            r'scheduler_framework_extension_point_duration_seconds_count\{extension_point="Filter"',
        )
        > 0
    )
    assert (
        _value(
            text,
            r'scheduler_framework_extension_point_duration_seconds_count\{extension_point="PostFilter"',
        )
        >= 1
    )
    assert (
        _value(
            text,
            r'scheduler_queue_incoming_pods_total\{event="UnschedulablePodAdd",queue="active"\}',
        )
        == 6
    )
    assert _value(text, r'scheduler_pending_pods\{queue="unschedulable"\}') >= 1
    assert "scheduler_scheduling_attempt_duration_seconds_bucket" in text
