"""What the volume plugins share: claim lookups with upstream's messages, label masks for
PV node affinity and StorageClass topologies, and the in-tree → CSI migration tables.

Error texts are the API server's NotFound messages as the informer listers produce them
(``persistentvolumeclaim "x" not found``), which upstream's plugins pass on verbatim.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import (
    AWS_EBS_VOLUME,
    AZURE_DISK_VOLUME,
    AZURE_FILE_VOLUME,
    CINDER_VOLUME,
    EPHEMERAL_VOLUME,
    GCE_PD_VOLUME,
    PORTWORX_VOLUME,
    PVC_VOLUME,
    VSPHERE_VOLUME,
    NodeSelector,
    Pod,
    Volume,
)
from cluster_sched.api.selectors import _field_requirement_matches
from cluster_sched.api.storage import PersistentVolumeClaim, TopologySelectorTerm
from cluster_sched.framework.volume_listers import VolumeListers
from cluster_sched.nodetable.selectors import requirement_mask
from cluster_sched.nodetable.table import NodeTable

__all__ = [
    "INTREE_PLUGINS",
    "ClaimUse",
    "csi_attach_limit_key",
    "ebs_volume_id",
    "inline_csi_handle",
    "lookup_claim",
    "not_found",
    "pod_claims",
    "pod_uses_claim",
    "pv_affinity_mask",
    "topology_mask",
    "volume_is_for_pod",
]

#: In-tree volume source -> (in-tree plugin name, CSI driver it migrates to).
INTREE_PLUGINS: dict[str, tuple[str, str]] = {
    AWS_EBS_VOLUME: ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    GCE_PD_VOLUME: ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    AZURE_DISK_VOLUME: ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    AZURE_FILE_VOLUME: ("kubernetes.io/azure-file", "file.csi.azure.com"),
    CINDER_VOLUME: ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    PORTWORX_VOLUME: ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
    VSPHERE_VOLUME: ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
}

_RESOURCE = {
    "PersistentVolumeClaim": "persistentvolumeclaim",
    "PersistentVolume": "persistentvolume",
    "StorageClass": "storageclass.storage.k8s.io",
}
_CSI_LIMIT_PREFIX = "attachable-volumes-csi-"
_RESOURCE_NAME_LIMIT = 63


def not_found(kind: str, name: str) -> str:
    """The API's NotFound text for ``kind``/``name`` (``persistentvolumeclaim "a" not found``)."""
    return f'{_RESOURCE[kind]} "{name}" not found'


@dataclass(frozen=True, slots=True)
class ClaimUse:
    """A pod volume backed by a claim: the claim's name and whether it is ephemeral."""

    claim: str
    ephemeral: bool


def pod_claims(pod: Pod) -> Iterator[ClaimUse]:
    """The claims of ``pod``'s PVC and generic ephemeral volumes, in volume order
    (ephemeral claims are named ``<pod>-<volume>``, ephemeral.VolumeClaimName)."""
    for vol in pod.volumes:
        if vol.source == PVC_VOLUME:
            yield ClaimUse(vol.volume_id, False)
        elif vol.source == EPHEMERAL_VOLUME:
            yield ClaimUse(f"{pod.name}-{vol.name}", True)


def pod_uses_claim(pod: Pod, pvc: PersistentVolumeClaim | None) -> bool:
    """``pvc`` backs one of ``pod``'s PVC or ephemeral volumes (the volume plugins'
    PVC hints: only a claim the pod uses can change its verdict)."""
    if pvc is None or pvc.namespace != pod.namespace:
        return False
    return any(use.claim == pvc.name for use in pod_claims(pod))


def volume_is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: None if the pod controls the claim, else the error."""
    for ref in pvc.meta.owner_references:
        if ref.controller and ref.uid == pod.uid:
            return None
    return (
        f"PVC {pvc.namespace}/{pvc.name} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )


def lookup_claim(
    listers: VolumeListers, pod: Pod, use: ClaimUse
) -> tuple[PersistentVolumeClaim | None, str]:
    """The claim or, when missing, the NotFound message."""
    pvc = listers.pvc(pod.namespace, use.claim)
    if pvc is None:
        return None, not_found("PersistentVolumeClaim", use.claim)
    return pvc, ""


def csi_attach_limit_key(driver: str) -> str:
    """volumeutil.GetCSIAttachLimitKey: the resource name of a driver's attach limit."""
    if len(_CSI_LIMIT_PREFIX) + len(driver) >= _RESOURCE_NAME_LIMIT:
        digest = hashlib.sha1(driver.encode(), usedforsecurity=False).hexdigest()[:16]
        return _CSI_LIMIT_PREFIX + driver[:23] + digest
    return _CSI_LIMIT_PREFIX + driver


def ebs_volume_id(volume_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: ``aws://zone/vol-1`` -> ``vol-1``; bare ids stay."""
    if not volume_id.startswith("aws://"):
        return volume_id
    return volume_id[len("aws://") :].split("/", 1)[-1].strip("/")


def inline_csi_handle(vol: Volume) -> str:
    """The CSI volume handle csi-translation-lib gives an inline in-tree volume."""
    if vol.source == AWS_EBS_VOLUME:
        return ebs_volume_id(vol.volume_id)
    if vol.source == GCE_PD_VOLUME:
        return f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{vol.volume_id}"
    return vol.volume_id


# --- label masks -------------------------------------------------------------------------


def pv_affinity_mask(table: NodeTable, selector: NodeSelector | None) -> np.ndarray:
    """bool[cap]: volume.CheckNodeAffinity. Upstream matches a node built from the labels
    alone, so ``metadata.name`` fields see an empty name; no selector matches every node."""
    if selector is None:
        return np.ones(table._cap, dtype=bool)

    def compute() -> np.ndarray:
        mask = np.zeros(table._cap, dtype=bool)
        for term in selector.terms:
            if not term.match_expressions and not term.match_fields:
                continue  # an empty term matches nothing
            if not all(_field_requirement_matches(r, "") for r in term.match_fields):
                continue
            part = np.ones(table._cap, dtype=bool)
            for req in term.match_expressions:
                part &= requirement_mask(table, req)
            mask |= part
        return mask

    return table.memo(("pv-affinity", selector), compute)


def topology_mask(table: NodeTable, terms: tuple[TopologySelectorTerm, ...]) -> np.ndarray:
    """bool[cap]: v1helper.MatchTopologySelectorTerms (no terms: every node; terms ORed,
    each term's requirements ANDed as ``key in values``)."""
    if not terms:
        return np.ones(table._cap, dtype=bool)

    def compute() -> np.ndarray:
        mask = np.zeros(table._cap, dtype=bool)
        for term in terms:
            if not term.requirements:
                continue  # an empty term selects no node
            part = np.ones(table._cap, dtype=bool)
            for key, values in term.requirements:
                col = table.labels.get(key)
                codes = [c for c in (table.label_code(key, v) for v in values) if c >= 0]
                if col is None or not codes:
                    part[:] = False
                    break
                part &= np.isin(col, np.asarray(codes, dtype=col.dtype))
            mask |= part
        return mask

    return table.memo(("topology", terms), compute)
