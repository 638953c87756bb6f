"""scheduler_perf workloads through the real scheduler (real Redis, the coordinator loop).

Each shipped test case runs its smallest upstream workload; the final placements are
judged by the independent checkers (tests/workload/checker.py, crossnode_checker.py),
never by the scheduler's own accounting. A custom config exercises every op at run time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.cli import main
from cluster_sched.config.load import load_config
from cluster_sched.scheduler.coordinator import DEFAULT_BATCH_SIZE, Coordinator
from cluster_sched.store.store import Store
from cluster_sched.workload.cli_args import add_executor_options
from cluster_sched.workload.perf.command import run_workload, verdict
from cluster_sched.workload.perf.config import PlannedWorkload, load_test_cases, select_workloads
from cluster_sched.workload.perf.executor import Outcome
from tests.workload.checker import Cluster
from tests.workload.crossnode_checker import (
    affinity_violations,
    anti_affinity_violations,
    spread_violations,
)

CONFIG = Path(__file__).resolve().parents[3] / "examples/scheduler_perf/performance-config.yaml"
TEMPLATES = CONFIG.parent / "templates"
CASES = [
    "SchedulingBasic",
    "PreemptionBasic",
    "SchedulingPodAntiAffinity",
    "SchedulingPodAffinity",
    "TopologySpreading",
]
PERCENTILES = {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}


def perf_args(redis_url: str, **overrides: Any) -> argparse.Namespace:
    executor = argparse.ArgumentParser()
    add_executor_options(executor)  # the command's own defaults, so new options follow
    values = {
        **vars(executor.parse_args([])),
        "redis": redis_url,
        "batch_size": DEFAULT_BATCH_SIZE,
        "seed": 1,
        "timeout": 120.0,
    }
    return argparse.Namespace(**{**values, **overrides})


class Final:
    """The store's final pods and nodes, captured before the workload's store goes."""

    def __init__(self) -> None:
        self.pods: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = []

    def __call__(self, store: Store, coord: Coordinator) -> None:
        self.pods = store.list("Pod")
        self.nodes = store.list("Node")

    def placements(self) -> dict[str, str]:
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in self.pods
            if (p.get("spec") or {}).get("nodeName")
        }


def run(planned: PlannedWorkload, redis_url: str, **overrides: Any) -> tuple[Outcome, Final]:
    final = Final()
    outcome = run_workload(planned, load_config(None), perf_args(redis_url, **overrides), final)
    return outcome, final


def smallest(case: str) -> PlannedWorkload:
    (planned,) = select_workloads(load_test_cases(CONFIG), case, "5Nodes", str(CONFIG))
    return planned


@pytest.mark.parametrize("case", CASES)
def test_shipped_case_smallest_workload_binds_every_measured_pod(case: str, redis_url: str) -> None:
    planned = smallest(case)
    outcome, final = run(planned, redis_url)
    assert outcome.failures == []
    assert verdict(planned, outcome).startswith(f"PASS {case}/5Nodes: SchedulingThroughput")

    throughput = outcome.items[0]
    assert throughput.labels["Metric"] == "SchedulingThroughput"
    assert throughput.unit == "pods/s"
    assert set(throughput.data) == PERCENTILES and throughput.data["Average"] > 0
    measured_ns = throughput.labels["Name"].rsplit("/", 1)[1]
    assert throughput.labels["Name"] == f"{case}/5Nodes/{measured_ns}"
    by_metric = {(i.labels["Metric"], i.labels.get("result")): i for i in outcome.items}
    for key in (
        ("scheduler_scheduling_attempt_duration_seconds", "scheduled"),
        ("scheduler_pod_scheduling_sli_duration_seconds", None),
    ):
        item = by_metric[key]
        assert item.unit == "ms" and set(item.data) == PERCENTILES
        assert 0 < item.data["Perc50"] <= item.data["Perc99"]

    placements = final.placements()
    measured = [p for p in final.pods if p["metadata"]["namespace"] == measured_ns]
    assert len(measured) == planned.workload.params["measurePods"]
    assert all(f"{measured_ns}/{p['metadata']['name']}" in placements for p in measured)

    pods = {p.key: p for p in map(parse_pod, final.pods)}
    nodes = {n.name: n for n in map(parse_node, final.nodes)}
    assert len(nodes) == planned.workload.params["initNodes"]
    assert Cluster(nodes, pods).check(placements) == []
    assert anti_affinity_violations(pods, placements, nodes) == []
    assert affinity_violations(pods, placements, nodes) == []
    assert spread_violations(pods, placements, nodes) == []


def test_preemption_basic_measures_preemptors_that_evicted_low_priority_pods(
    redis_url: str,
) -> None:
    outcome, final = run(smallest("PreemptionBasic"), redis_url)
    assert outcome.failures == []
    priorities = [(p["spec"].get("priority") or 0) for p in final.pods]
    # 20 low-priority pods filled the 5 nodes (4 each); each of the 5 preemptors needed 3.
    assert priorities.count(10) == 5
    assert priorities.count(0) == 5


def write_config(tmp_path: Path, case: dict[str, Any]) -> Path:
    path = tmp_path / "performance-config.yaml"
    path.write_text(yaml.safe_dump([case], sort_keys=False))
    return path


def test_every_op_runs(tmp_path: Path, redis_url: str) -> None:
    """createAny, createNamespaces, skipWaitToCompletion, barrier, churn, sleep,
    start/stopCollectingMetrics, paced deletePods and a steady state, in one workload."""
    (tmp_path / "pc.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
        "metadata: {name: high}\nvalue: 1000\n"
    )
    (tmp_path / "ns.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {team: a}}\n"
    )
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {generateName: pod-{{.Index}}-, labels: {app: x}}\n"
        "spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: 10m}}}]}\n"
    )
    case = {
        "name": "Ops",
        "defaultPodTemplatePath": "pod.yaml",
        "workloadTemplate": [
            {"opcode": "createNodes", "countParam": "$nodes", "uniqueNodeLabelStrategy": {"labelKey": "rack"}},
            {"opcode": "createAny", "templatePath": "pc.yaml"},
            {"opcode": "createNamespaces", "prefix": "init", "count": 1, "namespaceTemplatePath": "ns.yaml"},
            {"opcode": "createPods", "count": 4, "namespace": "init-0", "skipWaitToCompletion": True},
            {"opcode": "barrier", "namespaces": ["init-0"]},
            {"opcode": "churn", "mode": "create", "number": 2, "intervalMilliseconds": 50,
             "namespace": "churn", "templatePaths": [str(TEMPLATES / "pod-default.yaml")]},
            {"opcode": "sleep", "durationParam": "$nap"},
            {"opcode": "startCollectingMetrics", "name": "measure", "namespaces": ["m"]},
            {"opcode": "createPods", "countParam": "$measurePods", "namespace": "m"},
            {"opcode": "stopCollectingMetrics"},
            {"opcode": "deletePods", "namespace": "init-0", "labelSelector": {"app": "x"},
             "deletePodsPerSecond": 100},
            {"opcode": "createPods", "count": 2, "namespace": "steady", "steadyState": True,
             "duration": "300ms"},
        ],
        "workloads": [{"name": "small", "params": {"nodes": 3, "nap": "300ms", "measurePods": 5}}],
    }  # fmt: skip
    path = write_config(tmp_path, case)
    (planned,) = select_workloads(load_test_cases(path), None, None, str(path))
    outcome, final = run(planned, redis_url)
    assert outcome.failures == []
    assert {i.labels["Name"] for i in outcome.items} == {"Ops/small/measure"}
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for p in final.pods:
        by_ns.setdefault(p["metadata"]["namespace"], []).append(p)
    assert "init-0" not in by_ns  # every pod there was deleted again
    assert len(by_ns["churn"]) == 2  # mode create stops at number
    assert len(by_ns["m"]) == 5 and all(p["spec"].get("nodeName") for p in by_ns["m"])
    assert sorted(p["metadata"]["name"] for p in by_ns["m"])[0] == "pod-0-0"  # {{.Index}}
    assert len(by_ns["steady"]) == 2  # replaced one for one while the steady state ran
    racks = {n["metadata"]["labels"]["rack"] for n in final.nodes}
    assert len(racks) == 3


def test_pods_that_never_schedule_fail_the_workload_after_the_timeout(
    tmp_path: Path, redis_url: str
) -> None:
    (tmp_path / "big.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {generateName: big-}\n"
        "spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: '64'}}}]}\n"
    )
    case = {
        "name": "TooBig",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 2},
            {
                "opcode": "createPods",
                "count": 1,
                "podTemplatePath": "big.yaml",
                "collectMetrics": True,
            },
        ],
        "workloads": [{"name": "w"}],
    }
    path = write_config(tmp_path, case)
    (planned,) = select_workloads(load_test_cases(path), None, None, str(path))
    outcome, _final = run(planned, redis_url, timeout=1.0)
    (failure,) = outcome.failures
    assert failure.startswith("op 1: timed out after 1 s waiting for 1 pods to be scheduled")
    assert failure.endswith("in namespace namespace-1 (0 scheduled)")
    assert outcome.items == []
    assert verdict(planned, outcome).startswith("FAIL TooBig/w: op 1: timed out")


def test_cli_writes_data_items_and_fails_a_missed_threshold(
    tmp_path: Path, redis_url: str, capsys: Any
) -> None:
    out = tmp_path / "out"
    argv = ["perf", str(CONFIG), "--test", "SchedulingBasic", "--workload", "5Nodes"]
    rc = main([*argv, "--output", str(out), "--redis", redis_url, "--seed", "1"])
    stdout, stderr = capsys.readouterr()
    assert rc == 0, stderr
    assert stdout.splitlines() == [
        "running SchedulingBasic/5Nodes",
        stdout.splitlines()[1],
    ]
    assert stdout.splitlines()[1].startswith("PASS SchedulingBasic/5Nodes: SchedulingThroughput")
    doc = json.loads((out / "SchedulingBasic_5Nodes.json").read_text())
    assert doc["version"] == "v1"
    for item in doc["dataItems"]:
        assert set(item) == {"data", "unit", "labels"}
        assert {"Metric", "Name"} <= set(item["labels"])
        assert set(item["data"]) >= PERCENTILES

    config = yaml.safe_load(CONFIG.read_text())
    basic = next(c for c in config if c["name"] == "SchedulingBasic")
    basic["workloads"] = [{**basic["workloads"][0], "threshold": 1e9}]
    basic["defaultPodTemplatePath"] = str(TEMPLATES / "pod-default.yaml")
    path = write_config(tmp_path, basic)
    rc = main(["perf", str(path), "--output", str(out), "--redis", redis_url])
    stdout, _stderr = capsys.readouterr()
    assert rc == 1, _stderr
    assert "FAIL SchedulingBasic/5Nodes: " in stdout
    assert "expected SchedulingThroughput Average to be higher" in stdout
    doc = json.loads((out / "SchedulingBasic_5Nodes.json").read_text())
    assert doc["dataItems"][0]["data"]["AverageThreshold"] == 1e9


BATCHING_CONFIG = CONFIG.parent / "opportunistic-batching-config.yaml"


@pytest.mark.parametrize("on", [True, False], ids=["batching", "no-batching"])
def test_one_pod_per_node_workload_uses_the_batching_hint(redis_url: str, on: bool) -> None:
    """The workload's featureGates switch OpportunisticBatching for real: with it on,
    every pod after the first lands on the previous pod's list."""
    workload = "10Nodes_Batching" if on else "10Nodes_NoBatching"
    (planned,) = select_workloads(
        load_test_cases(BATCHING_CONFIG), "SchedulingOnePodPerNode", workload, str(BATCHING_CONFIG)
    )
    seen: dict[str, Any] = {}

    def inspect(store: Store, coord: Coordinator) -> None:
        seen["placements"] = [
            p["spec"].get("nodeName", "") for p in store.list("Pod") if p.get("spec")
        ]
        seen["batches"] = {k: dict(b.attempts) for k, b in coord.algorithm.batches.items()}

    config = load_config(str(planned.case.scheduler_config_path))
    outcome = run_workload(planned, config, perf_args(redis_url), inspect)
    assert outcome.failures == []
    assert len(set(seen["placements"])) == 10, "one pod per node"
    if on:
        assert seen["batches"] == {"default-scheduler": {"no_hint": 1, "hint_used": 9}}
    else:
        assert seen["batches"] == {}


def test_perf_times_sampled_attempts_and_keeps_whole_batches_for_the_rest(
    redis_url: str,
) -> None:
    """perf times every plugin in the attempts upstream samples (10 %,
    pluginMetricsSamplePercent); the others take the shared PreFilter and whole-batch
    runs, and still record every extension point, as the compiled path does."""
    cases = load_test_cases(CONFIG)
    (case,) = [c for name, c in cases if name == "SchedulingBasic"]
    assert not isinstance(case, Exception)
    (workload,) = [w for w in case.workloads if w.name == "5Nodes"]
    workload.params.update(initNodes=50, initPods=50, measurePods=400)
    (planned,) = select_workloads(cases, "SchedulingBasic", "5Nodes", str(CONFIG))
    seen: dict[str, Any] = {}

    def inspect(_store: Store, coord: Coordinator) -> None:
        assert coord.algorithm.fast is not None
        seen["paths"] = coord.algorithm.fast.counters()
        seen["text"] = coord.metrics.exposition().decode()

    outcome = run_workload(planned, load_config(None), perf_args(redis_url), inspect)
    assert outcome.failures == []
    paths = seen["paths"]
    assert paths["whole_batch_runs"] > 0 and paths["whole_batch_pods"] > 100, paths
    assert paths["pre_cycle_hits"] > 100, paths

    def count(metric: str, **labels: str) -> float:
        return sum(
            s.value
            for family in text_string_to_metric_families(seen["text"])
            for s in family.samples
            if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())
        )

    attempts = count("scheduler_schedule_attempts_total", result="scheduled")
    assert attempts == 450
    points = "scheduler_framework_extension_point_duration_seconds_count"
    for point in ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit"):
        assert count(points, extension_point=point) == attempts, point
    evaluations = "scheduler_plugin_evaluation_total"
    assert count(evaluations, plugin="NodeResourcesFit", extension_point="PreFilter") == attempts
    # each attempt drawn once: about 45 of 450 timed (binomial sd ~6.4)
    timed = count(
        "scheduler_plugin_execution_duration_seconds_count",
        plugin="NodeResourcesFit",
        extension_point="PreFilter",
    )
    assert 15 <= timed <= 90, timed
    assert (
        count(
            "scheduler_plugin_execution_duration_seconds_count",
            plugin="NodeResourcesFit",
            extension_point="Filter",
        )
        == timed
    )
    items = [
        i
        for i in outcome.items
        if i.labels["Metric"] == "scheduler_plugin_execution_duration_seconds"
        and i.labels.get("plugin") == "NodeResourcesFit"
    ]
    assert items, "perf reports plugin durations"
