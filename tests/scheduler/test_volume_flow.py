"""Volumes through a real coordinator (real Redis store, queue and watch): storage objects
reach the cache through the informer, their events requeue the pods the volume plugins
rejected, and a pod with a WaitForFirstConsumer claim is bound together with its claim."""

from __future__ import annotations

from typing import Any

from cluster_sched.plugins import names
from cluster_sched.queue.types import Location
from tests.scheduler.coordinator_harness import Harness, node, pod

HOST = "kubernetes.io/hostname"


def _sc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def _pvc(name: str, cls: str = "local") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "storageClassName": cls,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def _local_pv(name: str, node_name: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [node_name]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": "/mnt/disk"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def test_storage_objects_reach_the_cache_through_the_watch(h: Harness) -> None:
    h.start()
    h.apply(_sc("local"), _pvc("data"))
    listers = h.cache.snapshot.volumes
    assert "local" in listers.classes and "default/data" in listers.pvcs
    h.store.delete("PersistentVolumeClaim", "default/data")
    h.coord.poll_informer()
    assert "default/data" not in listers.pvcs


def test_a_claim_created_later_requeues_the_pod(h: Harness) -> None:
    h.apply(node("n1").label(HOST, "n1"), _sc("local"), _local_pv("pv-1", "n1"))
    h.start()
    h.apply(pod("web-0").pvc("data"))
    h.cycle()
    info = h.queue.get("default/web-0")
    assert h.queue.location("default/web-0") is Location.UNSCHEDULABLE
    # VolumeRestrictions' PreFilter looks the claim up first in the default profile.
    assert info.unschedulable_plugins == {names.VOLUME_RESTRICTIONS}
    h.apply(_pvc("data"))  # the watch delivers PersistentVolumeClaim/Add
    assert h.queue.location("default/web-0") in (Location.BACKOFF, Location.ACTIVE)


def test_wait_for_first_consumer_claim_is_bound_with_the_pod(h: Harness) -> None:
    h.apply(
        node("n1").label(HOST, "n1"),
        node("n2").label(HOST, "n2"),
        _sc("local"),
        _local_pv("pv-1", "n2"),
        _pvc("data"),
    )
    h.start()
    h.apply(pod("web-0").pvc("data"))
    h.cycle()
    h.settle()
    assert h.node_of("default/web-0") == "n2", "the only node with the local PV"
    pvc = h.store.get("PersistentVolumeClaim", "default/data")
    pv = h.store.get("PersistentVolume", "pv-1")
    assert pvc is not None and pv is not None
    assert pvc["spec"]["volumeName"] == "pv-1"
    assert pv["spec"]["claimRef"]["name"] == "data"
    # The watch brought the bound claim back to the cache.
    assert h.cache.snapshot.volumes.pvcs["default/data"].fully_bound
