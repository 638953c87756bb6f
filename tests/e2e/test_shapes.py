"""The scheduler_perf shapes of issue 4, scaled down, through `cluster-sched run`, each
checked by independent checks over placements.json, the workload and the event stream.
Full-size runs and their figures: benchmarks/shapes_bench.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.cli import main
from cluster_sched.store.store import Store
from cluster_sched.workload.spec import load_workload
from tests.workload.checker import Cluster
from tests.workload.crossnode_checker import (
    affinity_violations,
    anti_affinity_violations,
    read_stream,
    replay_overcommit,
    spread_violations,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: shape -> (nodes, pod counts per group)
SCALED = {
    "scheduling-pod-anti-affinity": (200, (40, 80)),
    "scheduling-pod-affinity": (200, (100, 100)),
    "topology-spreading": (150, (150, 300)),
    "preemption-basic": (40, (160, 40)),
}


def _scaled(name: str, tmp_path: Path) -> Path:
    doc = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    nodes, counts = SCALED[name]
    doc["spec"]["nodeGroups"][0]["count"] = nodes
    for group, count in zip(doc["spec"]["podGroups"], counts, strict=True):
        group["count"] = count
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("shape", sorted(SCALED), ids=sorted(SCALED))
def test_shape_respects_every_constraint(shape, tmp_path, redis_url, redis_client, capsys):
    path = _scaled(shape, tmp_path)
    out = tmp_path / "out"
    assert (
        main(
            ["run", str(path), "--quiet", "--seed", "3", "--output", str(out), "--redis", redis_url]
        )
        == 0
    )
    placements = json.loads((out / "placements.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    workload = load_workload(path)
    nodes = {n.name: n for n in (parse_node(d) for d in workload.node_docs)}
    pods = {p.key: p for g in workload.pod_groups for p in (parse_pod(d) for d in g.manifests())}

    assert Cluster.from_workload(workload).check(placements) == []
    assert anti_affinity_violations(pods, placements, nodes) == []
    assert affinity_violations(pods, placements, nodes) == []
    assert spread_violations(pods, placements, nodes) == []
    violations, checked = replay_overcommit(read_stream(Store(redis_client)), nodes, parse_pod)
    assert violations == []
    assert checked >= len(placements)

    _, (first, second) = SCALED[shape]
    if shape == "scheduling-pod-anti-affinity":
        assert len(placements) == first + second  # one pod per node, every pod fits
    elif shape == "preemption-basic":
        high = [k for k in placements if k.startswith("default/high-")]
        assert len(high) == second  # every high-priority pod bound
        assert summary["preempted"] >= second * 3  # 4 x 900m leave room only after 3 go
        assert len(placements) == first + second - summary["preempted"]
    else:
        assert len(placements) == first + second
    if shape == "scheduling-pod-affinity":
        zones = {nodes[n].labels.get("topology.kubernetes.io/zone") for n in placements.values()}
        assert zones == {"zone1"}
