"""A GPU-share trace replay the report tests share (issue 26, findings 2 and 3).

Three nodes offer 2,000 ``alibabacloud.com/gpu-milli`` (two GPUs) each; 24 pods arrive
evenly over a day, each asking 1,500 and running 4 hours. A node holds one such pod
at a time, so pods queue for GPUs (waiting many attempts, all bound in the end), and
every node in use keeps 500 of its 2,000 unallocated: the fragmentation on partly used
nodes is exactly a third of the allocated share, at every moment. Two service pods
without a lifetime (no GPU) run to the end of the replay.
"""

from __future__ import annotations

import json
from pathlib import Path

GPU = "alibabacloud.com/gpu-milli"
NODES = 3
NODE_GPU = 2000
POD_GPU = 1500
PODS = 24
DAY = 86400.0
SPAN_DAYS = 1
LIFETIME = 4 * 3600.0
#: pods without a lifetime: still running when the replay ends
SERVICES = 2

WORKLOAD = f"""
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {{name: gpu-trace}}
spec:
  nodeGroups:
  - count: {NODES}
    template:
      apiVersion: v1
      kind: Node
      metadata: {{name: gpu-node}}
      status:
        allocatable: {{cpu: "32", memory: 128Gi, pods: "110", {GPU}: "{NODE_GPU}"}}
  podGroups:
  - name: trace
    trace: pods.jsonl
    template:
      apiVersion: v1
      kind: Pod
      metadata: {{name: job, namespace: default}}
      spec:
        containers:
        - name: main
          image: pause
"""


def write_gpu_trace(directory: Path) -> Path:
    """The workload file and its trace in ``directory``; returns the workload."""
    lines = [
        json.dumps(
            {
                "name": f"job-{i:03d}",
                "arrival": i * SPAN_DAYS * DAY / PODS,
                "lifetime": LIFETIME,
                "requests": {"cpu": "4", "memory": "8Gi", GPU: POD_GPU},
            }
        )
        for i in range(PODS)
    ]
    lines += [
        json.dumps({"name": f"service-{i}", "arrival": 0.0, "requests": {"cpu": "1"}})
        for i in range(SERVICES)
    ]
    (directory / "pods.jsonl").write_text("\n".join(lines) + "\n")
    workload = directory / "workload.yaml"
    workload.write_text(WORKLOAD)
    return workload
