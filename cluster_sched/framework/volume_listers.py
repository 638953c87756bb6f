"""The storage objects plugins read (upstream's PV, PVC, StorageClass, CSINode and
CSIDriver listers), kept current by the cache from the watch.

``generation`` bumps on every change, so plugins can cache what they derive from these
objects (the PVs of a class sorted for matching, the CSI identity of each volume) and
recompute only after a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cluster_sched.api.storage import (
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    StorageObject,
)

__all__ = ["VolumeListers", "storage_key"]


def storage_key(obj: StorageObject) -> str:
    """The object's key in its lister: ``namespace/name`` for PVCs, else the name."""
    if isinstance(obj, PersistentVolumeClaim):
        return obj.key
    return obj.meta.name


@dataclass(slots=True, eq=False)
class VolumeListers:
    pvs: dict[str, PersistentVolume] = field(default_factory=dict)
    #: by ``namespace/name``
    pvcs: dict[str, PersistentVolumeClaim] = field(default_factory=dict)
    classes: dict[str, StorageClass] = field(default_factory=dict)
    csinodes: dict[str, CSINode] = field(default_factory=dict)
    csidrivers: dict[str, CSIDriver] = field(default_factory=dict)
    generation: int = 0
    #: bumps only when a CSINode changes (attach limits are cached on it)
    csinode_generation: int = 0
    _by_class: dict[str, tuple[PersistentVolume, ...]] = field(default_factory=dict)
    _by_class_gen: int = -1

    def _table(self, kind: str) -> dict[str, object]:
        return {  # type: ignore[return-value]
            "PersistentVolume": self.pvs,
            "PersistentVolumeClaim": self.pvcs,
            "StorageClass": self.classes,
            "CSINode": self.csinodes,
            "CSIDriver": self.csidrivers,
        }[kind]

    def set(self, kind: str, obj: StorageObject) -> None:
        self._table(kind)[storage_key(obj)] = obj
        self._changed(kind)

    def remove(self, kind: str, key: str) -> None:
        if self._table(kind).pop(key, None) is not None:
            self._changed(kind)

    def _changed(self, kind: str) -> None:
        self.generation += 1
        if kind == "CSINode":
            self.csinode_generation += 1

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.pvcs.get(f"{namespace}/{name}")

    def pv(self, name: str) -> PersistentVolume | None:
        return self.pvs.get(name)

    def storage_class(self, name: str) -> StorageClass | None:
        return self.classes.get(name)

    def csinode(self, name: str) -> CSINode | None:
        return self.csinodes.get(name)

    def csidriver(self, name: str) -> CSIDriver | None:
        return self.csidrivers.get(name)

    def pvs_of_class(self, class_name: str) -> tuple[PersistentVolume, ...]:
        """The PVs of a storage class, smallest first (ties by name).

        Upstream lists them from an index in no fixed order; FindMatchingVolume keeps the
        first of equally small matches, so a fixed order makes that choice reproducible.
        """
        if self._by_class_gen != self.generation:
            groups: dict[str, list[PersistentVolume]] = {}
            for pv in self.pvs.values():
                groups.setdefault(pv.storage_class_name, []).append(pv)
            self._by_class = {
                name: tuple(sorted(pvs, key=lambda p: (p.capacity, p.name)))
                for name, pvs in groups.items()
            }
            self._by_class_gen = self.generation
        return self._by_class.get(class_name, ())
