"""Pod volumes and the storage kinds (PV, PVC, StorageClass, CSINode, CSIDriver): the
fields the volume plugins read, the API server's defaults, and one-line errors that name
the file, the object and the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.api.manifest import load_file, parse_object, parse_pod
from cluster_sched.api.objects import PVC_VOLUME, RBD_VOLUME, Volume
from cluster_sched.api.storage import (
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from cluster_sched.errors import InvalidObjectError, QuantityError

PV: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv-a", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
    "spec": {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "fast",
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": ["zone-a"],
                            }
                        ]
                    }
                ]
            }
        },
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
    },
}
PVC: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data", "namespace": "db"},
    "spec": {
        "storageClassName": "fast",
        "accessModes": ["ReadWriteOncePod"],
        "resources": {"requests": {"storage": "1Gi"}},
    },
}
SC: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "fast"},
    "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [
        {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}
    ],
}
CSINODE: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSINode",
    "metadata": {"name": "n1"},
    "spec": {
        "drivers": [
            {
                "name": "ebs.csi.aws.com",
                "nodeID": "i-1",
                "topologyKeys": ["topology.kubernetes.io/zone"],
                "allocatable": {"count": 25},
            }
        ]
    },
}
CSIDRIVER: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSIDriver",
    "metadata": {"name": "ebs.csi.aws.com"},
    "spec": {"storageCapacity": True},
}


def _pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "db"},
        "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)},
    }


def _with(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    cur = out
    parts = path.split(".")
    for part in parts[:-1]:
        cur = cur.setdefault(part, {}) if not part.isdigit() else cur[int(part)]
    if value is _DROP:
        cur.pop(parts[-1], None)
    else:
        cur[parts[-1]] = value
    return out


_DROP = object()


def test_persistent_volume_fields() -> None:
    pv = parse_object(PV)
    assert isinstance(pv, PersistentVolume)
    assert pv.capacity == 10 * 2**30
    assert pv.access_modes == ("ReadWriteOnce",)
    assert pv.storage_class_name == "fast"
    assert pv.node_affinity is not None and len(pv.node_affinity.terms) == 1
    assert (pv.source, pv.driver, pv.volume_handle) == ("csi", "ebs.csi.aws.com", "vol-1")
    # No status: what the PV controller would set for a PV without a claim.
    assert pv.phase == "Available" and pv.volume_mode == "Filesystem"
    bound = parse_object(_with(PV, "spec.claimRef", {"namespace": "db", "name": "data"}))
    assert isinstance(bound, PersistentVolume) and bound.phase == "Bound"
    assert bound.claim_ref is not None and bound.claim_ref.name == "data"


def test_claim_class_and_binding_state() -> None:
    pvc = parse_object(PVC)
    assert isinstance(pvc, PersistentVolumeClaim)
    assert (pvc.key, pvc.request, pvc.class_name, pvc.phase) == (
        "db/data",
        2**30,
        "fast",
        "Pending",
    )
    assert not pvc.fully_bound
    beta = _with(PVC, "metadata.annotations", {"volume.beta.kubernetes.io/storage-class": "old"})
    assert parse_object(beta).class_name == "old"  # type: ignore[union-attr]
    no_class = parse_object(_with(PVC, "spec.storageClassName", _DROP))
    assert isinstance(no_class, PersistentVolumeClaim)
    assert no_class.storage_class is None and no_class.class_name == ""
    bound = _with(PVC, "spec.volumeName", "pv-a")
    bound["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    assert parse_object(bound).fully_bound  # type: ignore[union-attr]


def test_storage_class_csinode_csidriver() -> None:
    sc = parse_object(SC)
    assert isinstance(sc, StorageClass)
    assert sc.volume_binding_mode == "WaitForFirstConsumer"
    assert sc.allowed_topologies[0].requirements == (("topology.kubernetes.io/zone", ("a", "b")),)
    plain = parse_object(_with(SC, "volumeBindingMode", _DROP))
    assert isinstance(plain, StorageClass) and plain.volume_binding_mode == "Immediate"
    node = parse_object(CSINODE)
    assert isinstance(node, CSINode)
    assert node.drivers[0].allocatable_count == 25
    assert node.drivers[0].topology_keys == ("topology.kubernetes.io/zone",)
    driver = parse_object(CSIDRIVER)
    assert isinstance(driver, CSIDriver) and driver.storage_capacity and driver.attach_required


def test_pod_volumes() -> None:
    pod = parse_pod(
        _pod(
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "scratch"},
            {"name": "cfg", "configMap": {"name": "cfg"}},
            {"name": "ceph", "rbd": {"monitors": ["m1"], "image": "img", "readOnly": True}},
        )
    )
    assert pod.volumes == (
        Volume("data", PVC_VOLUME, "data"),
        Volume("scratch"),
        Volume("cfg"),
        Volume("ceph", RBD_VOLUME, "img", True, "rbd", ("m1",)),
    )


STORAGE_ERRORS = [
    ("pv-capacity", PV, "spec.capacity.storage", "ten", "PersistentVolume pv-a"),
    ("pv-access-mode", PV, "spec.accessModes", ["ReadWriteSometimes"], "PersistentVolume pv-a"),
    ("pv-volume-mode", PV, "spec.volumeMode", "Tape", "PersistentVolume pv-a"),
    ("pv-phase", PV, "status.phase", "Gone", "PersistentVolume pv-a"),
    ("pv-two-sources", PV, "spec.hostPath", {"path": "/x"}, "PersistentVolume pv-a"),
    (
        "pvc-request",
        PVC,
        "spec.resources.requests.storage",
        "-1Gi",
        "PersistentVolumeClaim db/data",
    ),
    (
        "pvc-selector",
        PVC,
        "spec.selector",
        {"matchLabels": {"a": "!"}},
        "PersistentVolumeClaim db/data",
    ),
    ("sc-mode", SC, "volumeBindingMode", "Later", "StorageClass fast"),
    ("sc-provisioner", SC, "provisioner", _DROP, "StorageClass fast"),
    (
        "sc-topology",
        SC,
        "allowedTopologies",
        [{"matchLabelExpressions": [{"key": "k"}]}],
        "StorageClass fast",
    ),
    (
        "csinode-count",
        CSINODE,
        "spec.drivers",
        [{"name": "d", "allocatable": {"count": -1}}],
        "CSINode n1",
    ),
    ("csidriver-flag", CSIDRIVER, "spec.storageCapacity", "yes", "CSIDriver ebs.csi.aws.com"),
]
FIELDS = {
    "pv-access-mode": "spec.accessModes[0]",
    "pv-two-sources": "spec",
    "pvc-selector": "spec.selector.matchLabels.a",
    "sc-topology": "allowedTopologies[0].matchLabelExpressions[0].values",
    "csinode-count": "spec.drivers[0].allocatable.count",
}


@pytest.mark.parametrize(
    ("case", "doc", "path", "value", "obj"), STORAGE_ERRORS, ids=[c[0] for c in STORAGE_ERRORS]
)
def test_storage_errors_name_file_object_and_field(
    tmp_path: Path, case: str, doc: dict[str, Any], path: str, value: Any, obj: str
) -> None:
    file = tmp_path / "storage.yaml"
    file.write_text(yaml.safe_dump(_with(doc, path, value)))
    with pytest.raises(InvalidObjectError) as info:
        load_file(file)
    err = info.value
    field = FIELDS.get(case, path)
    assert "\n" not in str(err)
    assert (err.obj, err.field, err.source) == (obj, field, str(file))
    assert str(err).startswith(f"{file}: {obj}: field {field}: ")


def test_storage_quantity_errors_stay_quantity_errors() -> None:
    with pytest.raises(QuantityError, match=r"spec\.capacity\.storage"):
        parse_object(_with(PV, "spec.capacity.storage", "1Qi"))


POD_VOLUME_ERRORS = [
    (
        "two-sources",
        {"name": "v", "emptyDir": {}, "secret": {"secretName": "s"}},
        "spec.volumes[0]",
    ),
    (
        "no-claim-name",
        {"name": "v", "persistentVolumeClaim": {}},
        "spec.volumes[0].persistentVolumeClaim.claimName",
    ),
    ("bad-name", {"name": "Data_1"}, "spec.volumes[0].name"),
    ("no-name", {"emptyDir": {}}, "spec.volumes[0].name"),
    ("rbd-no-monitors", {"name": "v", "rbd": {"image": "i"}}, "spec.volumes[0].rbd.monitors"),
    (
        "ebs-no-id",
        {"name": "v", "awsElasticBlockStore": {}},
        "spec.volumes[0].awsElasticBlockStore.volumeID",
    ),
]


@pytest.mark.parametrize(
    ("volume", "field"), [c[1:] for c in POD_VOLUME_ERRORS], ids=[c[0] for c in POD_VOLUME_ERRORS]
)
def test_pod_volume_errors(volume: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObjectError) as info:
        parse_pod(_pod(volume), source="p.yaml")
    assert info.value.field == field
    assert str(info.value).startswith(f"p.yaml: Pod db/web-0: field {field}: ")


def test_duplicate_pod_volume_names() -> None:
    vol = {"name": "v", "emptyDir": {}}
    with pytest.raises(InvalidObjectError, match="duplicate volume name 'v'") as info:
        parse_pod(_pod(vol, vol))
    assert info.value.field == "spec.volumes[1].name"
