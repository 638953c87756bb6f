"""A cluster snapshot as ``kubectl get -A -o json`` prints it, for tests and benchmarks.

A ``v1 List`` whose items carry what a live cluster's objects do: uid, resourceVersion,
creationTimestamp, generation, managedFields (with their free-form fieldsV1), status.

``demo_snapshot()`` holds one of each thing a snapshot loader must get right (see
``DEMO_EXPECTED``); ``scaled_snapshot(n)`` repeats a realistic mix to ``n`` objects.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

__all__ = ["DEMO_EXPECTED", "demo_snapshot", "scaled_snapshot"]

_uid = itertools.count(1)
_TIME = "2026-11-20T10:00:00Z"


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    n = next(_uid)
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"00000000-0000-4000-8000-{n:012d}",
        "resourceVersion": str(1000 + n),
        "creationTimestamp": _TIME,
        "managedFields": [
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {}},
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "time": _TIME,
            }
        ],
    }
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta


def _container(cpu: str, memory: str = "64Mi", name: str = "main") -> dict[str, Any]:
    return {
        "name": name,
        "image": f"registry.example/{name}:1.0",
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def _pod_spec(cpu: str, **extra: Any) -> dict[str, Any]:
    return {
        "containers": [_container(cpu)],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
        **extra,
    }


def _template(labels: dict[str, str], cpu: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"labels": dict(labels)}, "spec": _pod_spec(cpu, **extra)}


def _owner(kind: str, obj: dict[str, Any], api_version: str = "apps/v1") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _node(name: str, taints: list[dict[str, str]] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(
            name, labels={"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        ),
        "spec": {"podCIDR": "10.0.0.0/24", **({"taints": taints} if taints else {}), **spec},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": _TIME,
                    "reason": "KubeletReady",
                }
            ],
            "nodeInfo": {"kubeletVersion": "v1.35.0", "architecture": "amd64"},
        },
    }


def _pod(
    name: str,
    namespace: str,
    cpu: str,
    *,
    node: str = "",
    phase: str = "Pending",
    labels: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    meta = _meta(name, namespace, labels=labels or {"app": name})
    if owner is not None:
        meta["ownerReferences"] = [owner]
    pod_spec = _pod_spec(cpu, **spec)
    if node:
        pod_spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": pod_spec,
        "status": {"phase": phase, "qosClass": "Burstable", "podIP": "10.0.0.9" if node else None},
    }


def _namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _meta(name, labels={"kubernetes.io/metadata.name": name}),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


#: What ``demo_snapshot()`` must turn into: pods each controller creates, and more.
DEMO_EXPECTED: dict[str, Any] = {
    # DaemonSet kube-system/node-agent: already on node-0; node-2's dedicated taint is
    # not tolerated; node-3 (cordoned) and node-4 (disk pressure) are, by the daemon
    # tolerations.
    "node-agent": ["node-1", "node-3", "node-4"],
    # DaemonSet kube-system/gpu-driver: nodeSelector gpu=true and tolerates dedicated.
    "gpu-driver": ["node-2"],
    "created": {
        "ReplicaSet team/web-7d9f8b6c5d": 1,  # Deployment web: 3 replicas, 2 running
        "StatefulSet default/db": 3,
        "Job default/batch": 1,  # completions 4, 2 succeeded, 1 running, parallelism 3
        "DaemonSet kube-system/node-agent": 3,
        "DaemonSet kube-system/gpu-driver": 1,
    },
    # Deployment api has no ReplicaSet yet: one is created with 2 pods.
    "api_pods": 2,
    "terminal": [
        "default/batch-done-1",
        "default/batch-done-2",
        "default/crashed",
        "default/old-report",
    ],
    "gated": ["default/gated"],
    "skipped_kinds": {"ConfigMap": 2, "Secret": 1, "Widget": 1},
    "claims_created": ["data-db-1", "data-db-2"],
}


def demo_snapshot(*, typo: bool = False) -> dict[str, Any]:
    """The snapshot ``DEMO_EXPECTED`` describes. ``typo``: ``solo``'s nodeSelector is
    spelled ``nodeSelecter``."""
    items: list[dict[str, Any]] = [_namespace(n) for n in ("default", "kube-system", "team")]
    nodes = [
        _node("node-0"),
        _node("node-1"),
        _node("node-2", [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        _node(
            "node-3",
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "effect": "NoSchedule",
                    "timeAdded": _TIME,
                }
            ],
            unschedulable=True,
        ),
        _node("node-4", [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]),
    ]
    nodes[2]["metadata"]["labels"]["gpu"] = "true"
    items += nodes

    agent = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta("node-agent", "kube-system", generation=1),
        "spec": {
            "selector": {"matchLabels": {"app": "node-agent"}},
            "template": _template({"app": "node-agent"}, "100m"),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        },
        "status": {"currentNumberScheduled": 1, "desiredNumberScheduled": 4, "numberReady": 1},
    }
    gpu = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta("gpu-driver", "kube-system", generation=2),
        "spec": {
            "selector": {"matchLabels": {"app": "gpu-driver"}},
            "template": _template(
                {"app": "gpu-driver"},
                "200m",
                nodeSelector={"gpu": "true"},
                tolerations=[
                    {
                        "key": "dedicated",
                        "operator": "Equal",
                        "value": "gpu",
                        "effect": "NoSchedule",
                    }
                ],
                hostNetwork=True,
            ),
        },
    }
    items += [agent, gpu]
    items.append(
        _pod(
            "node-agent-x2b4k",
            "kube-system",
            "100m",
            node="node-0",
            phase="Running",
            labels={"app": "node-agent"},
            owner=_owner("DaemonSet", agent),
        )
    )

    web_labels = {"app": "web"}
    web = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta("web", "team", generation=1),
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": web_labels},
            "template": _template(web_labels, "500m"),
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
        },
        "status": {"replicas": 2, "readyReplicas": 2},
    }
    rs_labels = {**web_labels, "pod-template-hash": "7d9f8b6c5d"}
    web_rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": _meta(
            "web-7d9f8b6c5d", "team", labels=rs_labels, ownerReferences=[_owner("Deployment", web)]
        ),
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": rs_labels},
            "template": _template(rs_labels, "500m"),
        },
        "status": {"replicas": 2},
    }
    items += [web, web_rs]
    for i, node in enumerate(("node-0", "node-1")):
        items.append(
            _pod(
                f"web-7d9f8b6c5d-{'qwrtz'[i:] + 'bcdfg'[:i]}",
                "team",
                "500m",
                node=node,
                phase="Running",
                labels=rs_labels,
                owner=_owner("ReplicaSet", web_rs),
            )
        )
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta("api", "team", generation=1),
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "api"}},
                "template": _template({"app": "api"}, "250m"),
            },
        }
    )

    items.append(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": _meta("standard"),
            "provisioner": "example.com/disk",
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete",
        }
    )
    claim_template = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "standard",
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeMode": "Filesystem",
        },
    }
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": _meta("db", "default", generation=1),
            "spec": {
                "replicas": 3,
                "serviceName": "db",
                "podManagementPolicy": "OrderedReady",
                "selector": {"matchLabels": {"app": "db"}},
                "template": _template({"app": "db"}, "300m"),
                "volumeClaimTemplates": [claim_template],
            },
            "status": {"replicas": 0, "updateRevision": "db-6c8f9d7b5"},
        }
    )
    existing_claim = copy.deepcopy(claim_template)
    existing_claim["metadata"] = _meta("data-db-0", "default", labels={"app": "db"})
    existing_claim["status"] = {"phase": "Pending"}
    items.append(existing_claim)

    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta("batch", "default", generation=1),
        "spec": {
            "parallelism": 3,
            "completions": 4,
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "template": _template({"job-name": "batch"}, "200m", restartPolicy="Never"),
        },
        "status": {"active": 1, "succeeded": 2},
    }
    items.append(job)
    job_owner = _owner("Job", job, "batch/v1")
    job_labels = {"job-name": "batch"}
    # Finished pods hold nothing: if they did, node-1 could not take any more pods.
    for name in ("batch-done-1", "batch-done-2"):
        items.append(
            _pod(
                name,
                "default",
                "3500m",
                node="node-1",
                phase="Succeeded",
                labels=job_labels,
                owner=job_owner,
            )
        )
    items.append(
        _pod(
            "batch-run-1",
            "default",
            "200m",
            node="node-0",
            phase="Running",
            labels=job_labels,
            owner=job_owner,
        )
    )
    items.append(_pod("crashed", "default", "3", node="node-0", phase="Failed"))
    items.append(_pod("old-report", "default", "1", phase="Succeeded"))  # never scheduled

    gated = _pod("gated", "default", "100m", schedulingGates=[{"name": "example.com/quota"}])
    items.append(gated)
    solo_spec: dict[str, Any] = {
        "nodeSelecter" if typo else "nodeSelector": {"kubernetes.io/os": "linux"}
    }
    items.append(_pod("solo", "default", "1", **solo_spec))

    for name in ("app-config", "feature-flags"):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta(name, "default"),
                "data": {"k": "v"},
            }
        )
    items.append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _meta("token", "default"),
            "type": "Opaque",
            "data": {},
        }
    )
    items.append(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": _meta("w", "default"),
            "spec": {"anything": {"goes": True}},
        }
    )
    items.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("db", "default"),
            "spec": {
                "clusterIP": "None",
                "selector": {"app": "db"},
                "ports": [{"port": 5432, "protocol": "TCP"}],
            },
            "status": {"loadBalancer": {}},
        }
    )
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def scaled_snapshot(objects: int) -> dict[str, Any]:
    """About ``objects`` items: nodes, Running pods spread over them, ConfigMaps, and a
    few Deployments with ReplicaSets, as a mid-size cluster dump looks."""
    items: list[dict[str, Any]] = [_namespace("default")]
    n_nodes = max(1, objects // 20)
    items += [_node(f"node-{i}") for i in range(n_nodes)]
    n_config = objects // 10
    items += [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(f"cm-{i}", "default"),
            "data": {"k": "v"},
        }
        for i in range(n_config)
    ]
    i = 0
    while len(items) < objects:
        items.append(
            _pod(
                f"pod-{i}",
                "default",
                "10m",
                node=f"node-{i % n_nodes}",
                phase="Running",
                labels={"app": f"a{i % 50}"},
            )
        )
        i += 1
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
