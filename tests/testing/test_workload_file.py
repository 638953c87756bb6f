"""The workload files tests and benchmarks write load as the nodes and pods they name."""

from __future__ import annotations

from pathlib import Path

from cluster_sched.api.manifest import parse_node, parse_pod
from cluster_sched.api.objects import CPU, MEMORY
from cluster_sched.testing.workload_file import write_basic_workload, write_workload
from cluster_sched.workload.spec import load_workload


def test_basic_workload_is_scheduling_basics_shape(tmp_path: Path) -> None:
    wl = load_workload(write_basic_workload(tmp_path / "w.yaml", 7, 5))
    assert wl.name == "scheduling-basic-7n-5p"
    assert len(wl.node_docs) == 7
    node = parse_node(wl.node_docs[0])
    assert node.allocatable[CPU] == 4000 and node.allocatable[MEMORY] == 32 << 30
    [group] = wl.pod_groups
    assert group.count == 5
    assert group.template is not None
    pod = parse_pod(group.template)
    assert pod.requests[CPU] == 100 and pod.requests[MEMORY] == 500 << 20


def test_zones_spread_the_nodes(tmp_path: Path) -> None:
    path = write_workload(
        tmp_path / "w.yaml", 6, 1, node_cpu="2", node_memory="8Gi", pod_cpu="300m",
        pod_memory="1Gi", zones=("a", "b", "c"), name="topology",
    )  # fmt: skip
    wl = load_workload(path)
    zones = [d["metadata"]["labels"]["topology.kubernetes.io/zone"] for d in wl.node_docs]
    assert sorted(zones) == ["a", "a", "b", "b", "c", "c"]
    assert parse_node(wl.node_docs[0]).allocatable[MEMORY] == 8 << 30
