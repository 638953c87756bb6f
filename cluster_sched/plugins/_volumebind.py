"""VolumeBinding's PreBind: the binding writes, done in the store.

Upstream's PreBind writes the scheduler's half (a PV's claimRef, or a claim's
selected-node annotation) and waits, up to bindTimeoutSeconds, for the PV controller
and the external provisioner to finish. cluster-sched runs neither controller, so this
writes their result too, the way they would:

- a statically matched PV gets the claimRef and phase Bound; the claim gets
  ``spec.volumeName``, the bind-completed / bound-by-controller annotations and Bound;
- a claim to provision gets the selected-node annotation, then a new PV ``pvc-<uid>``
  is created for it (capacity = the request, the class's provisioner as CSI driver) with
  the node affinity a CSI provisioner gives it: the node's values for the driver's
  CSINode topology keys, else for the class's allowedTopologies keys; and both are bound.

Then it waits until the store shows every claim bound (immediately, normally), failing
with upstream's error after the timeout. Each write is an ``apply`` of the whole object,
so the watch delivers PV/PVC updates and pods waiting on them are requeued.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from cluster_sched.api.objects import Pod
from cluster_sched.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
)
from cluster_sched.framework.status import SUCCESS, Status, error

__all__ = ["ObjectStore", "bind_volumes"]

_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


class ObjectStore(Protocol):
    """What PreBind needs of the store (``cluster_sched.store.Store`` has it)."""

    def get(self, kind: str, key: str) -> dict[str, Any] | None: ...

    def apply(self, doc: Mapping[str, Any], *, source: str = "") -> Any: ...


def _annotate(doc: dict[str, Any], **values: str) -> None:
    meta = doc.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **values}


def _claim_ref(pvc: Mapping[str, Any]) -> dict[str, Any]:
    meta = pvc.get("metadata") or {}
    ref = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": meta.get("namespace", "default"),
        "name": meta.get("name"),
    }
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    return ref


def _bind_pair(store: ObjectStore, pv: dict[str, Any], pvc: dict[str, Any]) -> None:
    """The PV controller's bind: both objects point at each other and are Bound."""
    pv = copy.deepcopy(pv)
    spec = pv.setdefault("spec", {})
    ref = spec.get("claimRef") or {}
    want = _claim_ref(pvc)
    if ref.get("name") != want["name"] or ref.get("namespace") != want["namespace"]:
        _annotate(pv, **{ANN_BOUND_BY_CONTROLLER: "yes"})
    spec["claimRef"] = want
    pv["status"] = {**(pv.get("status") or {}), "phase": "Bound"}
    store.apply(pv, source="VolumeBinding")
    pvc = copy.deepcopy(pvc)
    pvc.setdefault("spec", {})["volumeName"] = pv["metadata"]["name"]
    _annotate(pvc, **{ANN_BIND_COMPLETED: "yes", ANN_BOUND_BY_CONTROLLER: "yes"})
    status = dict(pvc.get("status") or {})
    status["phase"] = "Bound"
    if spec.get("accessModes"):
        status["accessModes"] = list(spec["accessModes"])
    if spec.get("capacity"):
        status["capacity"] = dict(spec["capacity"])
    pvc["status"] = status
    store.apply(pvc, source="VolumeBinding")


def _topology(
    store: ObjectStore, node: str, provisioner: str, allowed: Sequence[Any]
) -> dict[str, Any] | None:
    """The provisioned PV's nodeAffinity: the node's values for the topology keys."""
    keys: list[str] = []
    csinode = store.get("CSINode", node) or {}
    for drv in (csinode.get("spec") or {}).get("drivers") or []:
        if drv.get("name") == provisioner:
            keys = list(drv.get("topologyKeys") or [])
    if not keys:
        for term in allowed:
            for expr in term.get("matchLabelExpressions") or []:
                if expr.get("key") not in keys:
                    keys.append(expr["key"])
    labels = ((store.get("Node", node) or {}).get("metadata") or {}).get("labels") or {}
    exprs = [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys if k in labels]
    if not exprs:
        return None
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}


def _provision(store: ObjectStore, pvc: dict[str, Any], node: str) -> str | None:
    """The external provisioner's part: a PV for ``pvc`` on ``node``; its error, if any."""
    meta = pvc.get("metadata") or {}
    spec = pvc.get("spec") or {}
    class_name = (meta.get("annotations") or {}).get(
        "volume.beta.kubernetes.io/storage-class", spec.get("storageClassName")
    )
    sc = store.get("StorageClass", class_name or "")
    if sc is None:
        return f'storageclass.storage.k8s.io "{class_name}" not found'
    provisioner = sc.get("provisioner", "")
    name = (
        f"pvc-{meta['uid']}" if meta.get("uid") else f"pvc-{meta.get('namespace')}-{meta['name']}"
    )
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
    pv: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {_PROVISIONED_BY: provisioner}},
        "spec": {
            "capacity": {"storage": storage},
            "accessModes": list(spec.get("accessModes") or []),
            "storageClassName": class_name,
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "csi": {"driver": provisioner, "volumeHandle": name},
        },
    }
    affinity = _topology(store, node, provisioner, sc.get("allowedTopologies") or [])
    if affinity is not None:
        pv["spec"]["nodeAffinity"] = affinity
    _bind_pair(store, pv, pvc)
    return None


def _all_bound(store: ObjectStore, claims: Sequence[str]) -> bool:
    for key in claims:
        doc = store.get("PersistentVolumeClaim", key) or {}
        annotations = (doc.get("metadata") or {}).get("annotations") or {}
        if not (doc.get("spec") or {}).get("volumeName") or ANN_BIND_COMPLETED not in annotations:
            return False
    return True


def bind_volumes(
    store: ObjectStore,
    pod: Pod,
    node: str,
    static: Sequence[tuple[str, str]],
    provisions: Sequence[str],
    timeout: float,
) -> Status:
    """BindPodVolumes: ``static`` (PV name, claim key) pairs, ``provisions`` claim keys."""
    for pv_name, claim in static:
        pv, pvc = store.get("PersistentVolume", pv_name), store.get("PersistentVolumeClaim", claim)
        if pv is None or pvc is None:
            missing = f'persistentvolume "{pv_name}"' if pv is None else f'claim "{claim}"'
            return error(f"binding volumes: {missing} not found")
        _bind_pair(store, pv, pvc)
    for claim in provisions:
        pvc = store.get("PersistentVolumeClaim", claim)
        if pvc is None:
            return error(f'binding volumes: claim "{claim}" not found')
        pvc = copy.deepcopy(pvc)
        _annotate(pvc, **{ANN_SELECTED_NODE: node})
        store.apply(pvc, source="VolumeBinding")
        problem = _provision(store, pvc, node)
        if problem is not None:
            return error(f"provisioning failed for PVC {claim!r}: {problem}")
    claims = [c for _, c in static] + list(provisions)
    deadline = time.monotonic() + max(timeout, 0.0)
    while not _all_bound(store, claims):
        if time.monotonic() >= deadline:
            return error(f"binding volumes: timed out waiting for the claims of pod {pod.key}")
        time.sleep(min(0.1, max(deadline - time.monotonic(), 0.0)))
    return SUCCESS
