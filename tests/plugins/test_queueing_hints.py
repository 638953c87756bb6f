"""Every default plugin's QueueingHintFns (upstream v1.35, SchedulerQueueingHints on):
for each hint, one change that answers Queue and one that answers QueueSkip.

A hint sees the waiting pod the plugin rejected and the changed object before / after
(None for an add / a delete); the queue calls it through the plugin's
``events_to_register``, which these tests also read the functions from, so a hint that
is not registered fails here too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
    QueueingHintFn,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.plugins import (
    nodeaffinity,
    nodename,
    nodeports,
    nodeunschedulable,
    nodevolumelimits,
    schedulinggates,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)
from cluster_sched.plugins.interpodaffinity import plugin as interpodaffinity
from cluster_sched.plugins.noderesources import fit
from cluster_sched.plugins.podtopologyspread import plugin as podtopologyspread
from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.testing.storage import make_csinode, make_pvc, make_storage_class

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
POD, NODE = EventResource.POD, EventResource.NODE


def hint_for(plugin: Any, resource: EventResource, action: ActionType) -> QueueingHintFn:
    """The hint the plugin registered for an incoming ``resource``/``action`` event."""
    incoming = ClusterEvent(resource, action)
    for registered in plugin.events_to_register():
        if registered.event.matches(incoming):
            assert registered.queueing_hint_fn is not None, (plugin.name, incoming)
            return registered.queueing_hint_fn  # type: ignore[no-any-return]
    raise AssertionError(f"{plugin.name} registered nothing matching {incoming}")


def node(name: str = "n1", cpu: str = "4", **labels: str) -> Any:
    b = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110)
    for key, value in labels.items():
        b = b.label(key, value)
    return b


def relabel(obj: Any, **labels: str) -> Any:
    return replace(obj, meta=replace(obj.meta, labels={**obj.meta.labels, **labels}))


def bound(p: Any, node_name: str = "n1") -> Pod:
    return replace(p.obj() if hasattr(p, "obj") else p, node_name=node_name)


# --- NodeResourcesFit ----------------------------------------------------------------


def test_fit_node_change() -> None:
    pl = fit.new(None, Handle())
    h = hint_for(pl, NODE, ActionType.ADD)
    pod = make_pod("big").req(cpu="6", memory="1Gi").obj()
    assert h(pod, None, node(cpu="8").obj()) is Q
    assert h(pod, None, node(cpu="2").obj()) is SKIP  # too small even empty
    grown = hint_for(pl, NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
    assert grown(pod, node(cpu="4").obj(), node(cpu="8").obj()) is Q
    assert grown(pod, node(cpu="8").obj(), node(cpu="8").label("x", "y").obj()) is SKIP


def test_fit_pod_event() -> None:
    pl = fit.new(None, Handle())
    h = hint_for(pl, POD, ActionType.DELETE)
    pod = make_pod("big").req(cpu="6", memory="1Gi").obj()
    assert h(pod, bound(make_pod("old").req(cpu="1")), None) is Q
    assert h(pod, make_pod("pending").req(cpu="1").obj(), None) is SKIP  # held nothing
    down = hint_for(pl, EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    old = bound(make_pod("o").req(cpu="2", memory="1Gi"))
    assert down(pod, old, bound(make_pod("o").req(cpu="1", memory="1Gi"))) is Q
    mem_only = make_pod("cpu-only").req(cpu="1").obj()
    shrunk = bound(make_pod("o").req(cpu="2", memory="512Mi"))
    assert down(mem_only, old, shrunk) is SKIP  # freed memory it does not request


# --- NodeAffinity, NodeName, NodeUnschedulable, TaintToleration, NodePorts ---------


def test_node_affinity_node_change() -> None:
    pl = nodeaffinity.new(None, Handle())
    h = hint_for(pl, NODE, ActionType.UPDATE_NODE_LABEL)
    pod = make_pod("p").node_selector("disk", "ssd").obj()
    assert h(pod, node().obj(), node(disk="ssd").obj()) is Q
    assert h(pod, node(disk="ssd").obj(), node(disk="ssd", other="x").obj()) is SKIP
    assert h(pod, None, node(disk="hdd").obj()) is SKIP


def test_node_name_node_add() -> None:
    h = hint_for(nodename.new(None, Handle()), NODE, ActionType.ADD)
    pod = make_pod("p").node("n2").obj()
    assert h(pod, None, node("n2").obj()) is Q
    assert h(pod, None, node("n3").obj()) is SKIP


def test_node_unschedulable_hints() -> None:
    pl = nodeunschedulable.new(None, Handle())
    h = hint_for(pl, NODE, ActionType.UPDATE_NODE_TAINT)
    pod = make_pod("p").obj()
    assert h(pod, node().unschedulable().obj(), node().obj()) is Q
    assert h(pod, node().obj(), node().taint("a", "b").obj()) is SKIP
    tol = hint_for(pl, EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE_POD_TOLERATION)
    tolerant = make_pod("p").tolerate("node.kubernetes.io/unschedulable", operator="Exists").obj()
    assert tol(pod, pod, tolerant) is Q
    other = make_pod("q").tolerate("node.kubernetes.io/unschedulable", operator="Exists").obj()
    assert tol(pod, make_pod("q").obj(), other) is SKIP


def test_taint_toleration_hints() -> None:
    pl = tainttoleration.new(None, Handle())
    h = hint_for(pl, NODE, ActionType.UPDATE_NODE_TAINT)
    pod = make_pod("p").obj()
    assert h(pod, node().taint("a", "b").obj(), node().obj()) is Q
    assert h(pod, node().taint("a", "b").obj(), node().taint("c", "d").obj()) is SKIP
    tol = hint_for(pl, EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE_POD_TOLERATION)
    assert tol(pod, pod, make_pod("p").tolerate("a", value="b").obj()) is Q
    assert tol(pod, make_pod("q").obj(), make_pod("q").tolerate("a", value="b").obj()) is SKIP


def test_node_ports_pod_deleted() -> None:
    h = hint_for(nodeports.new(None, Handle()), POD, ActionType.DELETE)
    pod = make_pod("p").host_port(8080).obj()
    assert h(pod, bound(make_pod("o").host_port(8080)), None) is Q
    assert h(pod, bound(make_pod("o").host_port(9090)), None) is SKIP


# --- InterPodAffinity, PodTopologySpread, SchedulingGates ---------------------------


def test_inter_pod_affinity_pod_change() -> None:
    h = hint_for(interpodaffinity.new(None, Handle()), POD, ActionType.ADD)
    pod = make_pod("p").pod_affinity("zone", {"app": "db"}).obj()
    assert h(pod, None, bound(make_pod("db").label("app", "db"))) is Q
    assert h(pod, None, bound(make_pod("web").label("app", "web"))) is SKIP
    assert h(pod, None, make_pod("db").label("app", "db").obj()) is SKIP  # not bound
    anti = make_pod("p").pod_anti_affinity("zone", {"app": "db"}).obj()
    gone = hint_for(interpodaffinity.new(None, Handle()), POD, ActionType.DELETE)
    assert gone(anti, bound(make_pod("db").label("app", "db")), None) is Q
    assert gone(anti, bound(make_pod("web").label("app", "web")), None) is SKIP


def test_inter_pod_affinity_node_change() -> None:
    h = hint_for(interpodaffinity.new(None, Handle()), NODE, ActionType.ADD)
    pod = make_pod("p").pod_affinity("zone", {"app": "db"}).obj()
    assert h(pod, None, node(zone="a").obj()) is Q
    assert h(pod, None, node().obj()) is SKIP  # no topology key


def test_pod_topology_spread_pod_change() -> None:
    h = hint_for(podtopologyspread.new(None, Handle()), POD, ActionType.ADD)
    pod = make_pod("p").label("app", "web").spread(1, "zone", match_labels={"app": "web"}).obj()
    assert h(pod, None, bound(make_pod("w").label("app", "web"))) is Q
    assert h(pod, None, bound(make_pod("x").label("app", "other"))) is SKIP
    other_ns = bound(make_pod("w", namespace="elsewhere").label("app", "web"))
    assert h(pod, None, other_ns) is SKIP


def test_pod_topology_spread_node_change() -> None:
    h = hint_for(podtopologyspread.new(None, Handle()), NODE, ActionType.ADD)
    pod = make_pod("p").label("app", "web").spread(1, "zone", match_labels={"app": "web"}).obj()
    assert h(pod, None, node(zone="a").obj()) is Q
    assert h(pod, None, node().obj()) is SKIP  # lacks the topology key


def test_scheduling_gates_eliminated() -> None:
    pl = schedulinggates.new(None, Handle())
    h = hint_for(
        pl, EventResource.UNSCHEDULABLE_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    )
    pod = make_pod("p").scheduling_gates("g").obj()
    assert h(pod, pod, make_pod("p").obj()) is Q
    assert h(pod, make_pod("q").scheduling_gates("g").obj(), make_pod("q").obj()) is SKIP


# --- volume plugins ------------------------------------------------------------------


def _storage(doc: dict[str, Any]) -> Any:
    return parse_object(doc)


CLAIMER = make_pod("p").pvc("data").obj()
MINE = _storage(make_pvc("data"))
OTHERS = _storage(make_pvc("unrelated"))


@pytest.mark.parametrize(
    "module",
    [volumebinding, volumezone, volumerestrictions, nodevolumelimits],
    ids=lambda m: m.__name__.rsplit(".", 1)[-1],
)
def test_volume_plugins_pvc_added(module: Any) -> None:
    pl = module.new(None, Handle())
    h = hint_for(pl, EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)
    assert h(CLAIMER, None, MINE) is Q
    assert h(CLAIMER, None, OTHERS) is SKIP


def test_volume_binding_storage_class_and_csi_node() -> None:
    pl = volumebinding.new(None, Handle())
    sc = hint_for(pl, EventResource.STORAGE_CLASS, ActionType.UPDATE)
    old = _storage(make_storage_class("local"))
    zoned = _storage(
        make_storage_class(
            "local",
            allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
        )
    )
    assert sc(CLAIMER, old, zoned) is Q
    assert sc(CLAIMER, old, old) is SKIP
    csi = hint_for(pl, EventResource.CSI_NODE, ActionType.UPDATE)
    before = _storage(make_csinode("n1", 5))
    migrated = make_csinode("n1", 5)
    migrated["metadata"]["annotations"] = {
        "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"
    }
    assert csi(CLAIMER, before, _storage(migrated)) is Q
    assert csi(CLAIMER, before, _storage(make_csinode("n1", 7))) is SKIP


def test_volume_zone_storage_class_and_pv() -> None:
    pl = volumezone.new(None, Handle())
    sc = hint_for(pl, EventResource.STORAGE_CLASS, ActionType.ADD)
    assert sc(CLAIMER, None, _storage(make_storage_class("wait"))) is Q
    immediate = make_storage_class("now", volumeBindingMode="Immediate")
    assert sc(CLAIMER, None, _storage(immediate)) is SKIP
    pv = hint_for(pl, EventResource.PERSISTENT_VOLUME, ActionType.UPDATE)
    base = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv", "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]},
    }
    moved = {**base, "metadata": {"name": "pv", "labels": {"topology.kubernetes.io/zone": "b"}}}
    other = {
        **base,
        "metadata": {"name": "pv", "labels": {"topology.kubernetes.io/zone": "a", "x": "y"}},
    }
    assert pv(CLAIMER, _storage(base), _storage(moved)) is Q
    assert pv(CLAIMER, _storage(base), _storage(other)) is SKIP


def test_volume_restrictions_pod_deleted() -> None:
    h = hint_for(volumerestrictions.new(None, Handle()), POD, ActionType.DELETE)
    disk = {"gcePersistentDisk": {"pdName": "d1"}}
    pod = make_pod("p").volume("v", **disk).obj()
    assert h(pod, bound(make_pod("o").volume("v", **disk)), None) is Q
    other = {"gcePersistentDisk": {"pdName": "d2"}}
    assert h(pod, bound(make_pod("o").volume("v", **other)), None) is SKIP


def test_node_volume_limits_pod_deleted_and_csi_node() -> None:
    pl = nodevolumelimits.new(None, Handle())
    h = hint_for(pl, POD, ActionType.DELETE)
    assert h(CLAIMER, bound(make_pod("o").pvc("x")), None) is Q
    assert h(CLAIMER, bound(make_pod("o")), None) is SKIP  # held no volume
    csi = hint_for(pl, EventResource.CSI_NODE, ActionType.UPDATE)
    assert csi(CLAIMER, _storage(make_csinode("n1", 1)), _storage(make_csinode("n1", 4))) is Q
    assert csi(CLAIMER, _storage(make_csinode("n1", 4)), _storage(make_csinode("n1", 2))) is SKIP
