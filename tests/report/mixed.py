"""The small evaluation the report tests share: its workload, config and outputs.

The workload is built so every figure has something to show: two node shapes in three
zones plus a node with no pod slot (its free capacity is stranded by construction), a
spread group (zone, DoNotSchedule), a batch group spread by hostname (ScheduleAnyway),
and a group no node can take (a nodeSelector nothing matches), which ends unschedulable.
Scoring is MostAllocated, to show the configuration in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_sched.workload.runner import RunResult


def _node_group(name: str, count: int, cpu: str, memory: str, pods: str, zones: str) -> str:
    return f"""
  - count: {count}
    template:
      apiVersion: v1
      kind: Node
      metadata: {{name: {name}}}
      status: {{allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}"}}}}
    labels:
      topology.kubernetes.io/zone: [{zones}]"""


def _pod_group(name: str, count: int, cpu: str, memory: str, extra: str = "") -> str:
    return f"""
  - name: {name}
    count: {count}
    template:
      apiVersion: v1
      kind: Pod
      metadata: {{name: {name}, namespace: default, labels: {{app: {name}}}}}
      spec:{extra}
        containers:
        - name: c
          image: pause
          resources: {{requests: {{cpu: {cpu}, memory: {memory}}}}}"""


WEB_SPREAD = """
        topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}"""
BATCH_SPREAD = """
        topologySpreadConstraints:
        - maxSkew: 2
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector: {matchLabels: {app: batch}}"""
PINNED = """
        nodeSelector: {disk: ssd}"""

MIXED_WORKLOAD = (
    """\
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {name: report-mix}
spec:
  nodeGroups:"""
    + _node_group("big", 4, "4", "8Gi", "10", "zone-a, zone-b")
    + _node_group("small", 3, "2", "4Gi", "4", "zone-c")
    + _node_group("full", 1, "2", "4Gi", "0", "zone-c")
    + "\n  podGroups:"
    + _pod_group("web", 6, "500m", "1Gi", WEB_SPREAD)
    + _pod_group("batch", 10, '"1"', "512Mi", BATCH_SPREAD)
    + _pod_group("pinned", 2, "1500m", "1Gi", PINNED)
    + "\n"
)

MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""


@dataclass(frozen=True, slots=True)
class MixedRun:
    workload: Path
    config: Path
    out: Path
    result: RunResult
    placements: dict[str, str]
    summary: dict[str, Any]
    #: the store's FailedScheduling events (pod key -> messages, oldest first)
    failed_scheduling: dict[str, list[str]]
