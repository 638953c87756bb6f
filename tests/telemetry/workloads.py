"""Workloads the telemetry tests run whole: SMALL_WORKLOAD, 5 nodes and 50 pods that all
fit, on several nodes each (so Score and NormalizeScore run)."""

from __future__ import annotations

SMALL_WORKLOAD = """
apiVersion: cluster-sched.io/v1alpha1
kind: Workload
metadata: {name: traced}
spec:
  nodeGroups:
  - count: 5
    template:
      apiVersion: v1
      kind: Node
      metadata: {name: node}
      status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
  podGroups:
  - name: pods
    count: 50
    template:
      apiVersion: v1
      kind: Pod
      metadata: {name: pod, namespace: default}
      spec:
        containers:
        - name: main
          image: pause
          resources: {requests: {cpu: 100m, memory: 256Mi}}
"""
#: Pods in SMALL_WORKLOAD.
SMALL_PODS = 50
