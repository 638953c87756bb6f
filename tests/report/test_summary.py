"""summary.json's report keys against an independent computation.

Every expected figure is computed here from placements.json and the workload file's own
nodes and pods, with this module's arithmetic (its own quantity parser, loops over
nodes), never with cluster_sched.report; the two must agree.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

import numpy as np
import pytest
import yaml

from tests.report.mixed import MixedRun

RESOURCES = ("cpu", "memory", "pods")
SUFFIXES = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def quantity(text: object, resource: str) -> int:
    """Enough of Kubernetes quantities for this workload: cpu in milli-cores."""
    s = str(text)
    scale = 1.0
    for suffix, factor in SUFFIXES.items():
        if s.endswith(suffix):
            s, scale = s[: -len(suffix)], factor
            break
    value = float(s) * scale
    return round(value * 1000) if resource == "cpu" else round(value)


class Expected:
    """The workload expanded by hand: node names, allocatable, labels, pod requests."""

    def __init__(self, workload: dict[str, Any]) -> None:
        spec = workload["spec"]
        self.alloc: dict[str, tuple[int, int, int]] = {}
        self.zone: dict[str, str] = {}
        for group in spec["nodeGroups"]:
            tpl = group["template"]
            zones = group["labels"]["topology.kubernetes.io/zone"]
            a = tpl["status"]["allocatable"]
            for i in range(group["count"]):
                name = f"{tpl['metadata']['name']}-{i}"
                self.alloc[name] = (
                    quantity(a["cpu"], "cpu"),
                    quantity(a["memory"], "memory"),
                    int(a["pods"]),
                )
                self.zone[name] = zones[i % len(zones)]
        self.req: dict[str, tuple[int, int]] = {}
        self.group: dict[str, str] = {}
        for group in spec["podGroups"]:
            tpl = group["template"]
            r = tpl["spec"]["containers"][0]["resources"]["requests"]
            for i in range(group["count"]):
                key = f"default/{tpl['metadata']['name']}-{i}"
                self.req[key] = (quantity(r["cpu"], "cpu"), quantity(r["memory"], "memory"))
                self.group[key] = group["name"]

    def requested(self, placements: dict[str, str]) -> dict[str, list[int]]:
        out = {n: [0, 0, 0] for n in self.alloc}
        for key, node in placements.items():
            cpu, mem = self.req[key]
            out[node][0] += cpu
            out[node][1] += mem
            out[node][2] += 1
        return out


@pytest.fixture(scope="module")
def expected(mixed_run: MixedRun) -> Expected:
    return Expected(yaml.safe_load(mixed_run.workload.read_text()))


def test_run_keys_kept_and_provenance_added(mixed_run: MixedRun) -> None:
    s = mixed_run.summary
    for key in ("scheduled", "unschedulable", "preempted", "throughput", "latency_ms"):
        assert key in s
    for key in ("attempt_latency_ms", "attempts_per_pod", "duration_s", "invalid", "workload"):
        assert key in s
    assert s["seed"] == 7
    assert s["version"] == "0.1.0"
    assert s["config_file"] == str(mixed_run.config)
    (profile,) = s["config"]["profiles"]
    assert profile["scheduler_name"] == "default-scheduler"
    fit = profile["plugin_config"]["NodeResourcesFit"]
    assert fit["scoring_strategy"]["type"] == "MostAllocated"


def test_groups_match_placements(mixed_run: MixedRun, expected: Expected) -> None:
    placed = Counter(expected.group[k] for k in mixed_run.placements)
    pods = Counter(expected.group.values())
    groups = mixed_run.summary["groups"]
    assert list(groups) == ["web", "batch", "pinned"]
    for name, g in groups.items():
        assert g["pods"] == pods[name]
        assert g["scheduled"] == placed[name]
        assert g["unschedulable"] == pods[name] - placed[name]
        assert g["deleted"] == 0
    assert groups["pinned"]["scheduled"] == 0
    assert groups["web"]["scheduled"] == 6 and groups["batch"]["scheduled"] == 10
    lat = groups["web"]["latency_ms"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"]


def test_utilisation_imbalance_nodes_used(mixed_run: MixedRun, expected: Expected) -> None:
    requested = expected.requested(mixed_run.placements)
    util = {
        n: [requested[n][j] / a if a else 0.0 for j, a in enumerate(expected.alloc[n])]
        for n in expected.alloc
    }
    used = [n for n in expected.alloc if requested[n][2] > 0]
    p = mixed_run.summary["placement"]
    assert p["nodes_total"] == 8
    assert p["nodes_used"] == len(used)
    assert "full-0" not in used
    for j, resource in enumerate(RESOURCES):
        for key, nodes in (("utilisation", list(util)), ("utilisation_used_nodes", used)):
            values = [util[n][j] for n in nodes]
            figures = p[key][resource]
            assert figures["mean"] == pytest.approx(statistics.fmean(values), abs=1e-4)
            assert figures["p50"] == pytest.approx(np.percentile(values, 50), abs=1e-4)
            assert figures["p90"] == pytest.approx(np.percentile(values, 90), abs=1e-4)
        used_values = [util[n][j] for n in used]
        cv = statistics.pstdev(used_values) / statistics.fmean(used_values)
        assert p["imbalance"][resource] == pytest.approx(cv, abs=1e-4)


def test_fragmentation(mixed_run: MixedRun, expected: Expected) -> None:
    requested = expected.requested(mixed_run.placements)
    pending = [k for k in expected.req if k not in mixed_run.placements]
    assert len(pending) == 2
    shapes = {expected.req[k] for k in pending}
    frag = mixed_run.summary["placement"]["fragmentation"]
    assert frag["shapes_from"] == "pending pods"
    assert frag["shapes"] == len(shapes)
    for j, resource in enumerate(("cpu", "memory")):
        free_total = stranded = 0
        for node, alloc in expected.alloc.items():
            free = [max(alloc[i] - requested[node][i], 0) for i in range(3)]
            usable = any(
                s[j] > 0 and free[0] >= s[0] and free[1] >= s[1] and free[2] >= 1 for s in shapes
            )
            free_total += free[j]
            stranded += 0 if usable else free[j]
        assert frag[resource]["free"] == free_total
        assert frag[resource]["stranded"] == stranded
        assert frag[resource]["fraction"] == pytest.approx(stranded / free_total, abs=1e-4)
    # the node without a pod slot strands its whole (empty) capacity
    assert frag["cpu"]["stranded"] >= 2000


def test_topology_spread_skew(mixed_run: MixedRun, expected: Expected) -> None:
    rows = {r["topology_key"]: r for r in mixed_run.summary["placement"]["topology_spread"]}
    assert set(rows) == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}

    zone = rows["topology.kubernetes.io/zone"]
    per_zone = dict.fromkeys(set(expected.zone.values()), 0)
    for key, node in mixed_run.placements.items():
        if expected.group[key] == "web":
            per_zone[expected.zone[node]] += 1
    assert zone["selector"] == "app=web"
    assert (zone["max_skew"], zone["when_unsatisfiable"]) == (1, "DoNotSchedule")
    assert zone["pods"] == 6
    assert zone["domains"] == 3
    assert zone["counts"] == dict(sorted(per_zone.items()))
    assert zone["skew"] == max(per_zone.values()) - min(per_zone.values())

    host = rows["kubernetes.io/hostname"]
    per_node = dict.fromkeys(expected.alloc, 0)
    for key, node in mixed_run.placements.items():
        if expected.group[key] == "batch":
            per_node[node] += 1
    assert host["when_unsatisfiable"] == "ScheduleAnyway"
    assert host["domains"] == 8
    assert host["skew"] == max(per_node.values()) - min(per_node.values())
    assert host["skew"] > 0, "the slotless node holds no batch pod"


def test_unschedulable_pods_with_reasons(mixed_run: MixedRun, expected: Expected) -> None:
    s = mixed_run.summary
    pending = sorted(k for k in expected.req if k not in mixed_run.placements)
    assert s["unschedulable"] == 2
    assert [p["pod"] for p in s["unschedulable_pods"]] == pending
    selector_reason = "node(s) didn't match Pod's node affinity/selector"
    for pod in s["unschedulable_pods"]:
        assert pod["group"] == "pinned"
        assert pod["message"].startswith("0/8 nodes are available: ")
        # NodeAffinity filters before NodeResourcesFit: all 8 nodes give its reason
        assert pod["reasons"] == {selector_reason: 8}
    assert s["unschedulable_reasons"][selector_reason] == 2


def test_reasons_are_the_recorded_failed_scheduling_events(mixed_run: MixedRun) -> None:
    """The summary's message is each pod's last FailedScheduling event in the store."""
    assert mixed_run.summary["unschedulable_pods"]
    for pod in mixed_run.summary["unschedulable_pods"]:
        assert pod["message"] == mixed_run.failed_scheduling[pod["pod"]][-1]
