"""Decoding pod volumes and the storage kinds, with the API server's defaults.

Defaults: a volume with no source is an emptyDir; an RBD volume's pool is ``rbd``; a
StorageClass binds Immediate; a CSIDriver requires attach and has no capacity tracking;
a PV without status.phase is Available, or Bound when it has a claimRef (what the PV
controller would set); a PVC without one is Pending. Errors name the field; ``manifest``
adds the object and the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_sched.api import _decode as d
from cluster_sched.api import selectors
from cluster_sched.api.objects import (
    AWS_EBS_VOLUME,
    AZURE_DISK_VOLUME,
    CINDER_VOLUME,
    CSI_VOLUME,
    EPHEMERAL_VOLUME,
    GCE_PD_VOLUME,
    ISCSI_VOLUME,
    OTHER_VOLUME,
    PORTWORX_VOLUME,
    PVC_VOLUME,
    RBD_VOLUME,
    Volume,
)
from cluster_sched.api.quantity import quantity_pair
from cluster_sched.api.storage import (
    ANN_STORAGE_CLASS,
    BINDING_IMMEDIATE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSINodeDriver,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    TopologySelectorTerm,
)
from cluster_sched.errors import InvalidObjectError, QuantityError

ACCESS_MODES = frozenset({"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"})
VOLUME_MODES = frozenset({"Filesystem", "Block"})
BINDING_MODES = frozenset({BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER})
PV_PHASES = frozenset({"Pending", "Available", "Bound", "Released", "Failed"})
PVC_PHASES = frozenset({"Pending", "Bound", "Lost"})

#: Every v1 VolumeSource member (a volume may set exactly one).
_POD_SOURCES = frozenset(
    {
        "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo",
        "secret", "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume",
        "cinder", "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap",
        "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
        "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
    }
)  # fmt: skip
#: Every v1 PersistentVolumeSource member.
_PV_SOURCES = frozenset(
    {
        "gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd",
        "iscsi", "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile",
        "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume",
        "scaleIO", "local", "storageos", "csi",
    }
)  # fmt: skip
#: source -> the field holding its identity (``Volume.volume_id`` / PV volume handle)
_ID_FIELDS = {
    PVC_VOLUME: "claimName",
    GCE_PD_VOLUME: "pdName",
    AWS_EBS_VOLUME: "volumeID",
    ISCSI_VOLUME: "iqn",
    RBD_VOLUME: "image",
    AZURE_DISK_VOLUME: "diskURI",
    CINDER_VOLUME: "volumeID",
    PORTWORX_VOLUME: "volumeID",
    CSI_VOLUME: "driver",
}


def _one_of(value: str, allowed: frozenset[str], field: str) -> str:
    if value not in allowed:
        raise InvalidObjectError(
            f"unsupported value {value!r} (want one of {', '.join(sorted(allowed))})", field=field
        )
    return value


def _single_source(spec: Mapping[str, Any], allowed: frozenset[str], field: str) -> str | None:
    """The one volume source ``spec`` sets (None if none); two or more is an error."""
    present = [key for key in spec if key in allowed and spec[key] is not None]
    if len(present) > 1:
        raise InvalidObjectError(
            f"may not specify more than 1 volume type (found {', '.join(present)})", field=field
        )
    return present[0] if present else None


def _storage_bytes(value: object, field: str) -> int:
    if value is None:
        return 0
    try:
        amount, exact = quantity_pair(value, resource="storage")  # type: ignore[arg-type]
    except QuantityError as err:
        raise QuantityError(err.reason, field=field) from None
    if exact < 0:
        raise InvalidObjectError(f"must be greater than or equal to 0, got {value!r}", field=field)
    return amount


def _access_modes(value: object, field: str) -> tuple[str, ...]:
    modes = d.string_list(value, field)
    for i, mode in enumerate(modes):
        _one_of(mode, ACCESS_MODES, f"{field}[{i}]")
    return modes


# --- pod volumes ------------------------------------------------------------------------


def pod_volume(value: object, field: str) -> Volume:
    spec = d.mapping(value, field)
    name = d.required_string(spec.get("name"), f"{field}.name")
    selectors.validate_dns_label(name, f"{field}.name")
    source = _single_source(spec, _POD_SOURCES, field)
    if source is None or (source not in _ID_FIELDS and source != EPHEMERAL_VOLUME):
        return Volume(name=name, source=OTHER_VOLUME)
    path = f"{field}.{source}"
    body = d.mapping(spec.get(source), path)
    ident = ""
    id_field = _ID_FIELDS.get(source)
    if id_field is not None:
        ident = d.required_string(body.get(id_field), f"{path}.{id_field}")
    pool = ""
    monitors: tuple[str, ...] = ()
    if source == RBD_VOLUME:
        monitors = d.string_list(body.get("monitors"), f"{path}.monitors")
        if not monitors:
            raise InvalidObjectError("required value is missing", field=f"{path}.monitors")
        pool = d.string(body.get("pool"), f"{path}.pool") or "rbd"
    return Volume(
        name=name,
        source=source,
        volume_id=ident,
        read_only=d.boolean(body.get("readOnly"), f"{path}.readOnly"),
        pool=pool,
        monitors=monitors,
    )


def pod_volumes(value: object, field: str) -> tuple[Volume, ...]:
    out: list[Volume] = []
    seen: set[str] = set()
    for i, item in enumerate(d.seq(value, field)):
        vol = pod_volume(item, f"{field}[{i}]")
        if vol.name in seen:
            raise InvalidObjectError(
                f"duplicate volume name {vol.name!r}", field=f"{field}[{i}].name"
            )
        seen.add(vol.name)
        out.append(vol)
    return tuple(out)


# --- PersistentVolume / PersistentVolumeClaim -------------------------------------------


def _claim_ref(value: object, field: str) -> ClaimRef | None:
    if value is None:
        return None
    ref = d.mapping(value, field)
    return ClaimRef(
        namespace=d.string(ref.get("namespace"), f"{field}.namespace"),
        name=d.required_string(ref.get("name"), f"{field}.name"),
        uid=d.string(ref.get("uid"), f"{field}.uid"),
    )


def decode_pv(doc: Mapping[str, Any]) -> PersistentVolume:
    meta = d.object_meta(doc, namespaced=False)
    spec = d.mapping(doc.get("spec"), "spec")
    status = d.mapping(doc.get("status"), "status")
    capacity = d.mapping(spec.get("capacity"), "spec.capacity")
    affinity = d.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
    source = _single_source(spec, _PV_SOURCES, "spec") or ""
    driver = handle = ""
    if source:
        path = f"spec.{source}"
        body = d.mapping(spec.get(source), path)
        if source == CSI_VOLUME:
            driver = d.required_string(body.get("driver"), f"{path}.driver")
            handle = d.required_string(body.get("volumeHandle"), f"{path}.volumeHandle")
        elif source in _ID_FIELDS:
            id_field = _ID_FIELDS[source]
            handle = d.required_string(body.get(id_field), f"{path}.{id_field}")
    claim_ref = _claim_ref(spec.get("claimRef"), "spec.claimRef")
    phase = d.string(status.get("phase"), "status.phase")
    if phase:
        _one_of(phase, PV_PHASES, "status.phase")
    else:
        phase = "Bound" if claim_ref is not None else "Available"
    class_name = meta.annotations.get(ANN_STORAGE_CLASS)
    if class_name is None:
        class_name = d.string(spec.get("storageClassName"), "spec.storageClassName")
    return PersistentVolume(
        meta=meta,
        capacity=_storage_bytes(capacity.get("storage"), "spec.capacity.storage"),
        access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes"),
        storage_class_name=class_name,
        volume_mode=_one_of(
            d.string(spec.get("volumeMode"), "spec.volumeMode") or "Filesystem",
            VOLUME_MODES,
            "spec.volumeMode",
        ),
        node_affinity=d.node_selector(affinity.get("required"), "spec.nodeAffinity.required"),
        claim_ref=claim_ref,
        phase=phase,
        source=source,
        driver=driver,
        volume_handle=handle,
        raw=doc,
    )


def decode_pvc(doc: Mapping[str, Any]) -> PersistentVolumeClaim:
    meta = d.object_meta(doc, namespaced=True)
    spec = d.mapping(doc.get("spec"), "spec")
    status = d.mapping(doc.get("status"), "status")
    resources = d.mapping(spec.get("resources"), "spec.resources")
    requests = d.mapping(resources.get("requests"), "spec.resources.requests")
    raw_class = spec.get("storageClassName")
    phase = d.string(status.get("phase"), "status.phase") or "Pending"
    return PersistentVolumeClaim(
        meta=meta,
        storage_class=None if raw_class is None else d.string(raw_class, "spec.storageClassName"),
        access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes"),
        request=_storage_bytes(requests.get("storage"), "spec.resources.requests.storage"),
        volume_name=d.string(spec.get("volumeName"), "spec.volumeName"),
        volume_mode=_one_of(
            d.string(spec.get("volumeMode"), "spec.volumeMode") or "Filesystem",
            VOLUME_MODES,
            "spec.volumeMode",
        ),
        selector=d.label_selector(spec.get("selector"), "spec.selector"),
        phase=_one_of(phase, PVC_PHASES, "status.phase"),
        raw=doc,
    )


# --- StorageClass / CSINode / CSIDriver ------------------------------------------------


def _topology_term(value: object, field: str) -> TopologySelectorTerm:
    term = d.mapping(value, field)
    path = f"{field}.matchLabelExpressions"
    reqs = []
    for i, item in enumerate(d.seq(term.get("matchLabelExpressions"), path)):
        expr = d.mapping(item, f"{path}[{i}]")
        key = d.required_string(expr.get("key"), f"{path}[{i}].key")
        selectors.validate_label_key(key, f"{path}[{i}].key")
        values = d.string_list(expr.get("values"), f"{path}[{i}].values")
        if not values:
            raise InvalidObjectError("must specify as least one value", field=f"{path}[{i}].values")
        reqs.append((key, values))
    return TopologySelectorTerm(tuple(reqs))


def decode_storage_class(doc: Mapping[str, Any]) -> StorageClass:
    meta = d.object_meta(doc, namespaced=False)
    mode = d.string(doc.get("volumeBindingMode"), "volumeBindingMode") or BINDING_IMMEDIATE
    return StorageClass(
        meta=meta,
        provisioner=d.required_string(doc.get("provisioner"), "provisioner"),
        volume_binding_mode=_one_of(mode, BINDING_MODES, "volumeBindingMode"),
        allowed_topologies=tuple(
            _topology_term(item, f"allowedTopologies[{i}]")
            for i, item in enumerate(d.seq(doc.get("allowedTopologies"), "allowedTopologies"))
        ),
        raw=doc,
    )


def decode_csinode(doc: Mapping[str, Any]) -> CSINode:
    meta = d.object_meta(doc, namespaced=False)
    spec = d.mapping(doc.get("spec"), "spec")
    drivers: list[CSINodeDriver] = []
    for i, item in enumerate(d.seq(spec.get("drivers"), "spec.drivers")):
        path = f"spec.drivers[{i}]"
        drv = d.mapping(item, path)
        alloc = d.mapping(drv.get("allocatable"), f"{path}.allocatable")
        count = d.integer(alloc.get("count"), f"{path}.allocatable.count")
        if count is not None and count < 0:
            raise InvalidObjectError(
                f"must be greater than or equal to 0, got {count}",
                field=f"{path}.allocatable.count",
            )
        name = d.required_string(drv.get("name"), f"{path}.name")
        if any(x.name == name for x in drivers):
            raise InvalidObjectError(f"duplicate driver {name!r}", field=f"{path}.name")
        drivers.append(
            CSINodeDriver(
                name=name,
                node_id=d.string(drv.get("nodeID"), f"{path}.nodeID"),
                topology_keys=d.string_list(drv.get("topologyKeys"), f"{path}.topologyKeys"),
                allocatable_count=count,
            )
        )
    return CSINode(meta=meta, drivers=tuple(drivers), raw=doc)


def decode_csidriver(doc: Mapping[str, Any]) -> CSIDriver:
    meta = d.object_meta(doc, namespaced=False)
    spec = d.mapping(doc.get("spec"), "spec")
    return CSIDriver(
        meta=meta,
        attach_required=d.boolean(spec.get("attachRequired"), "spec.attachRequired", True),
        storage_capacity=d.boolean(spec.get("storageCapacity"), "spec.storageCapacity"),
        raw=doc,
    )
