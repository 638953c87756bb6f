"""Which volumes the pods on each node use: one count column per volume reference.

The volume plugins' per-node questions are all "does a pod on this node use volume X"
(VolumeRestrictions' disk conflicts, NodeVolumeLimits' attached volumes, ReadWriteOncePod
claims in use). Each volume a pod names becomes a *reference* string, and the index
keeps, per reference, int32[cap] counting the pods of each row that use it; a Filter
reads a handful of columns, never a row's pods. Pods without volumes never touch it.

References (``volume_refs``):

- ``pvc:<namespace>/<claim>``: a PersistentVolumeClaim, or the claim of a generic
  ephemeral volume (``<pod>-<volume>``);
- ``<source>:<id>`` for inline volumes: ``awsElasticBlockStore:<volumeID>``,
  ``azureDisk:<diskURI>``, ``cinder:<volumeID>``, ``portworxVolume:<volumeID>``;
- with the access appended (``:ro``/``:rw``) where read-only mounts may share:
  ``gcePersistentDisk:<pdName>:rw``, ``iscsi:<iqn>:ro``, and one
  ``rbd:<pool>/<image>@<monitor>:rw`` per Ceph monitor.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cluster_sched.api.objects import (
    AWS_EBS_VOLUME,
    AZURE_DISK_VOLUME,
    CINDER_VOLUME,
    EPHEMERAL_VOLUME,
    GCE_PD_VOLUME,
    ISCSI_VOLUME,
    PORTWORX_VOLUME,
    PVC_VOLUME,
    RBD_VOLUME,
    Pod,
    Volume,
)

__all__ = ["VolumeIndex", "claim_ref", "inline_refs", "volume_refs"]

_PLAIN = frozenset({AWS_EBS_VOLUME, AZURE_DISK_VOLUME, CINDER_VOLUME, PORTWORX_VOLUME})
_SHARED_READ_ONLY = frozenset({GCE_PD_VOLUME, ISCSI_VOLUME})


def claim_ref(namespace: str, claim: str) -> str:
    return f"pvc:{namespace}/{claim}"


def _access(vol: Volume) -> str:
    return "ro" if vol.read_only else "rw"


def inline_refs(vol: Volume) -> Iterator[str]:
    """The references of one inline (non-claim) volume; none for other sources."""
    if vol.source in _PLAIN:
        yield f"{vol.source}:{vol.volume_id}"
    elif vol.source in _SHARED_READ_ONLY:
        yield f"{vol.source}:{vol.volume_id}:{_access(vol)}"
    elif vol.source == RBD_VOLUME:
        for mon in vol.monitors:
            yield f"rbd:{vol.pool}/{vol.volume_id}@{mon}:{_access(vol)}"


def volume_refs(pod: Pod) -> tuple[str, ...]:
    """Every reference ``pod`` holds (see the module docstring), duplicates dropped."""
    out: dict[str, None] = {}
    for vol in pod.volumes:
        if vol.source == PVC_VOLUME:
            out[claim_ref(pod.namespace, vol.volume_id)] = None
        elif vol.source == EPHEMERAL_VOLUME:
            out[claim_ref(pod.namespace, f"{pod.name}-{vol.name}")] = None
        else:
            out.update(dict.fromkeys(inline_refs(vol)))
    return tuple(out)


class VolumeIndex:
    """Reference -> int32[cap]: pods per row using it. ``version`` bumps on every change."""

    __slots__ = ("_cap", "cols", "version")

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self.cols: dict[str, np.ndarray] = {}
        self.version = 0

    def grow(self, cap: int) -> None:
        for ref, col in self.cols.items():
            self.cols[ref] = np.concatenate([col, np.zeros(cap - len(col), dtype=np.int32)])
        self._cap = cap

    def clear_row(self, row: int) -> None:
        for col in self.cols.values():
            col[row] = 0
        if self.cols:
            self.version += 1

    def add(self, row: int, pod: Pod, sign: int = 1) -> None:
        for ref in volume_refs(pod):
            col = self.cols.get(ref)
            if col is None:
                if sign < 0:
                    continue
                col = self.cols[ref] = np.zeros(self._cap, dtype=np.int32)
            col[row] += sign
        self.version += 1

    def column(self, ref: str) -> np.ndarray | None:
        """int32[cap] for ``ref``, or None when no pod of this table ever used it."""
        return self.cols.get(ref)

    def used_anywhere(self, ref: str) -> bool:
        col = self.cols.get(ref)
        return col is not None and bool((col > 0).any())

    def copy_rows(self, rows: np.ndarray) -> VolumeIndex:
        """The index of a ``NodeTable.subset`` holding ``rows`` (as rows 0..k-1)."""
        out = VolumeIndex(max(len(rows), 1))
        for ref, col in self.cols.items():
            taken = col[rows]
            out.cols[ref] = taken if len(rows) else np.zeros(1, dtype=np.int32)
        out.version = self.version
        return out
