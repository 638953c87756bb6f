"""Volumes through a real coordinator (real Redis store, queue and watch): storage objects
reach the cache through the informer, their events requeue the pods the volume plugins
rejected, and a pod with a WaitForFirstConsumer claim is bound together with its claim."""

from __future__ import annotations

from cluster_sched.plugins import names
from cluster_sched.queue.types import Location
from cluster_sched.testing.storage import make_local_pv, make_pvc, make_storage_class
from tests.scheduler.coordinator_harness import Harness, node, pod

HOST = "kubernetes.io/hostname"


def test_storage_objects_reach_the_cache_through_the_watch(h: Harness) -> None:
    h.start()
    h.apply(make_storage_class("local"), make_pvc("data"))
    listers = h.cache.snapshot.volumes
    assert "local" in listers.classes and "default/data" in listers.pvcs
    h.store.delete("PersistentVolumeClaim", "default/data")
    h.coord.poll_informer()
    assert "default/data" not in listers.pvcs


def test_a_claim_created_later_requeues_the_pod(h: Harness) -> None:
    h.apply(node("n1").label(HOST, "n1"), make_storage_class("local"), make_local_pv("pv-1", "n1"))
    h.start()
    h.apply(pod("web-0").pvc("data"))
    h.cycle()
    info = h.queue.get("default/web-0")
    assert h.queue.location("default/web-0") is Location.UNSCHEDULABLE
    # VolumeRestrictions' PreFilter looks the claim up first in the default profile.
    assert info.unschedulable_plugins == {names.VOLUME_RESTRICTIONS}
    h.apply(make_pvc("data"))  # the watch delivers PersistentVolumeClaim/Add
    # Queue from the rejecting plugin's hint, 1 s of backoff still owed (fake clock at
    # T0): backoffQ, as upstream; activeQ only once the backoff is over.
    assert h.queue.location("default/web-0") is Location.BACKOFF


def test_wait_for_first_consumer_claim_is_bound_with_the_pod(h: Harness) -> None:
    h.apply(
        node("n1").label(HOST, "n1"),
        node("n2").label(HOST, "n2"),
        make_storage_class("local"),
        make_local_pv("pv-1", "n2"),
        make_pvc("data"),
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
