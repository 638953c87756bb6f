"""The independent placement checker catches what it claims to (it guards the e2e tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.workload.spec import PodGroup, Workload, load_workload
from tests.workload.checker import Cluster, pod_requests


def cluster() -> Cluster:
    nodes = [
        make_node("small").capacity(cpu="2", memory="4Gi", pods=3).label("disk", "ssd").manifest(),
        make_node("gpu")
        .capacity(cpu="8", memory="4Gi", pods=10)
        .taint("dedicated", "gpu")
        .manifest(),
        make_node("cordoned").capacity(cpu="8", memory="4Gi", pods=10).unschedulable().manifest(),
        make_node("soft")
        .capacity(cpu="8", memory="4Gi", pods=10)
        .taint("x", "y", "PreferNoSchedule")
        .manifest(),
    ]
    pods = [
        make_pod("a").req(cpu="1").manifest(),
        make_pod("b").req(cpu="1500m").manifest(),
        make_pod("ssd").req(cpu="100m").node_selector("disk", "ssd").manifest(),
        make_pod("gpu-ok")
        .req(cpu="1")
        .tolerate("dedicated", value="gpu", effect="NoSchedule")
        .manifest(),
        make_pod("cordon-ok")
        .tolerate("node.kubernetes.io/unschedulable", effect="NoSchedule")
        .manifest(),
        make_pod("zone").node_affinity_in("disk", "ssd").manifest(),
        make_pod("running").req(cpu="500m").node("soft").manifest(),
    ]
    w = Workload("t", node_docs=nodes, pod_groups=[PodGroup("all", len(pods), docs=pods)])
    return Cluster.from_workload(w)


LEGAL = {
    "default/a": "small",
    "default/ssd": "small",
    "default/gpu-ok": "gpu",
    "default/cordon-ok": "cordoned",
    "default/zone": "small",
    "default/b": "soft",
}

VIOLATIONS: dict[str, tuple[dict[str, str], str]] = {
    "cpu-over-commit": (
        {"default/a": "small", "default/b": "small"},
        "node small over-committed: cpu 2500 > 2000",
    ),
    "pod-count": (
        {
            "default/ssd": "small",
            "default/zone": "small",
            "default/cordon-ok": "small",
            "default/gpu-ok": "small",
        },
        "node small over-committed: 4 pods > 3",
    ),
    "taint": ({"default/a": "gpu"}, "default/a on gpu: untolerated taint dedicated=gpu:NoSchedule"),
    "cordon": ({"default/a": "cordoned"}, "default/a on cordoned: node is cordoned"),
    "selector": ({"default/ssd": "gpu"}, "nodeSelector disk=ssd not matched"),
    "affinity": (
        {"default/zone": "soft"},
        "default/zone on soft: required node affinity not matched",
    ),
    "unknown-node": ({"default/a": "nowhere"}, "default/a: placed on unknown node nowhere"),
    "unknown-pod": ({"default/ghost": "small"}, "default/ghost: placed but not in the workload"),
}


def test_legal_placements_pass() -> None:
    assert cluster().check(LEGAL) == []


@pytest.mark.parametrize("case", list(VIOLATIONS.values()), ids=list(VIOLATIONS))
def test_violations_are_found(case: tuple[dict[str, str], str]) -> None:
    placements, expected = case
    problems = cluster().check(placements)
    assert any(expected in p for p in problems), problems


def test_prebound_pods_count_against_their_node() -> None:
    c = cluster()
    assert c.prebound == {"default/running": "soft"}
    big = make_pod("big").req(cpu="7600m")
    c.pods["default/big"] = big.obj()
    assert "soft" not in c.candidate_nodes("default/big")
    assert c.check({"default/big": "soft"}) == ["node soft over-committed: cpu 8100 > 8000"]


def test_candidates_and_contention() -> None:
    c = cluster()
    assert c.candidate_nodes("default/gpu-ok") == ["gpu", "small", "soft"]
    assert c.candidate_nodes("default/ssd") == ["small"]
    assert c.candidate_nodes("default/cordon-ok") == ["cordoned", "small", "soft"]
    assert c.uncontested(["default/ssd", "default/zone"]) == []
    assert c.uncontested(["default/a", "default/b"]) == ["small"]


def test_requests_arithmetic() -> None:
    pod = (
        make_pod("p")
        .req(cpu="1", memory="1Gi")
        .req(cpu="500m")
        .init_req(cpu="2")
        .sidecar_req(cpu="250m")
        .overhead(cpu="100m")
        .obj()
    )
    # app 1500m + sidecar 250m = 1750m vs init 2000m (+ sidecars started before it: none)
    assert pod_requests(pod)["cpu"] == 2000 + 100
    assert pod_requests(pod)["memory"] == 1024**3


def test_checker_reads_workload_files() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    c = Cluster.from_workload(load_workload(examples / "small-basic.yaml"))
    assert len(c.nodes) == 100 and len(c.pods) == 1000
    assert c.check({f"default/pod-{i}": f"node-{i % 100}" for i in range(1000)}) == []
