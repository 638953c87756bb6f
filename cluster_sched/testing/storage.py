"""Manifests of storage objects for tests: StorageClass, PersistentVolumeClaim, a local
PersistentVolume pinned to one node, CSINode. Plain dicts, as a user's YAML would be."""

from __future__ import annotations

from typing import Any

from cluster_sched.testing.manifests import HOSTNAME_LABEL, ZONE_LABEL

__all__ = ["make_csinode", "make_local_pv", "make_pvc", "make_storage_class"]

NO_PROVISIONER = "kubernetes.io/no-provisioner"


def make_storage_class(
    name: str, provisioner: str = NO_PROVISIONER, **extra: Any
) -> dict[str, Any]:
    """A WaitForFirstConsumer class unless ``extra`` says otherwise."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
        **extra,
    }


def make_pvc(name: str, cls: str = "local", size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    """A ReadWriteOnce claim in ``default``."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "storageClassName": cls,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            **spec,
        },
    }


def make_local_pv(name: str, node: str, cls: str = "local", size: str = "10Gi") -> dict[str, Any]:
    """A local volume whose node affinity pins it to ``node``."""
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "local": {"path": "/mnt/disk"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def make_csinode(node: str, count: int | None, driver: str = "ebs.csi.aws.com") -> dict[str, Any]:
    """One CSI driver on ``node`` with zone topology; ``count`` its attach limit (None: none)."""
    entry: dict[str, Any] = {"name": driver, "nodeID": node, "topologyKeys": [ZONE_LABEL]}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": [entry]},
    }
