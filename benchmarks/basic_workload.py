"""SchedulingBasic's shape at any size, as a Workload file: the one the benchmarks share.

Nodes of 4 CPU / 32Gi / 110 pods, pods of 100m / 500Mi (the pause image), all pods
queued at once (scheduler_perf's SchedulingBasic templates). The Workload format
generates the nodes and pods from one template each, so a million-node file is small.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["NODE_TEMPLATE", "POD_TEMPLATE", "write_basic_workload"]

NODE_TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node"},
    "status": {
        "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
        "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
    },
}
POD_TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "pod", "namespace": "default"},
    "spec": {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
            }
        ]
    },
}


def write_basic_workload(path: Path, nodes: int, pods: int, zones: Sequence[str] = ()) -> Path:
    """Write the workload to ``path`` (``zones``: spread the nodes over these
    topology.kubernetes.io/zone values) and return it."""
    group: dict[str, Any] = {"count": nodes, "template": NODE_TEMPLATE}
    if zones:
        group["labels"] = {"topology.kubernetes.io/zone": list(zones)}
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": f"scheduling-basic-{nodes}n-{pods}p"},
        "spec": {
            "nodeGroups": [group],
            "podGroups": [{"name": "measured", "count": pods, "template": POD_TEMPLATE}],
        },
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
