"""Workload files of one node pool and one pod group, for tests and benchmarks.

The Workload format generates the nodes and pods from one template each, so a
million-node file is small. ``write_basic_workload`` is scheduler_perf's SchedulingBasic
shape at any size (nodes of 4 CPU / 32Gi / 110 pods, pods of 100m / 500Mi running the
pause image, all queued at once): the one the benchmarks share.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["write_basic_workload", "write_workload"]

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def write_workload(
    path: Path,
    nodes: int,
    pods: int,
    *,
    node_cpu: str,
    node_memory: str,
    pod_cpu: str,
    pod_memory: str,
    zones: Sequence[str] = (),
    name: str = "",
) -> Path:
    """Write ``nodes`` nodes (110 pods each; ``zones``: spread over these
    topology.kubernetes.io/zone values) and ``pods`` pods requesting ``pod_cpu`` /
    ``pod_memory`` to ``path``, and return it."""
    allocatable = {"cpu": node_cpu, "memory": node_memory, "pods": "110"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node"},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }
    container = {
        "name": "pause",
        "image": PAUSE_IMAGE,
        "resources": {"requests": {"cpu": pod_cpu, "memory": pod_memory}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pod", "namespace": "default"},
        "spec": {"containers": [container]},
    }
    group: dict[str, Any] = {"count": nodes, "template": node}
    if zones:
        group["labels"] = {"topology.kubernetes.io/zone": list(zones)}
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": name or f"workload-{nodes}n-{pods}p"},
        "spec": {
            "nodeGroups": [group],
            "podGroups": [{"name": "measured", "count": pods, "template": pod}],
        },
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_basic_workload(path: Path, nodes: int, pods: int, zones: Sequence[str] = ()) -> Path:
    """SchedulingBasic's shape with ``nodes`` nodes and ``pods`` pods (module doc)."""
    return write_workload(
        path, nodes, pods, node_cpu="4", node_memory="32Gi", pod_cpu="100m",
        pod_memory="500Mi", zones=zones, name=f"scheduling-basic-{nodes}n-{pods}p",
    )  # fmt: skip
