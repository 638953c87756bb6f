"""The DRA objects plugins read (upstream's SharedDRAManager: DeviceClasses,
ResourceSlices, ResourceClaims with their assume cache), kept current by the cache
from the watch.

Allocations in flight (Reserve done, PreBind not yet seen in the store) live here
too, so that every pod of a batch, and the next cycles, see those devices as taken:
``allocated_devices`` is the store's allocations plus the in-flight ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cluster_sched.dra.objects import (
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

__all__ = ["DRA_KINDS", "DraListers", "dra_key"]

#: The kinds this module lists, by class name.
DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")

DraObject = DeviceClass | ResourceSlice | ResourceClaim | ResourceClaimTemplate


def dra_key(obj: DraObject) -> str:
    """``namespace/name`` for claims and templates, the name otherwise."""
    if isinstance(obj, ResourceClaim | ResourceClaimTemplate):
        return f"{obj.meta.namespace}/{obj.meta.name}"
    return obj.meta.name


@dataclass(slots=True, eq=False)
class DraListers:
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    slices: dict[str, ResourceSlice] = field(default_factory=dict)
    #: by ``namespace/name``
    claims: dict[str, ResourceClaim] = field(default_factory=dict)
    templates: dict[str, ResourceClaimTemplate] = field(default_factory=dict)
    #: claim uid -> (claim key, allocation) decided by Reserve, not yet in the store
    in_flight: dict[str, tuple[str, AllocationResult]] = field(default_factory=dict)
    generation: int = 0
    _allocated: frozenset[tuple[str, str, str]] = frozenset()
    _allocated_gen: int = -1

    def _table(self, kind: str) -> dict[str, object]:
        return {  # type: ignore[return-value]
            "DeviceClass": self.classes,
            "ResourceSlice": self.slices,
            "ResourceClaim": self.claims,
            "ResourceClaimTemplate": self.templates,
        }[kind]

    def set(self, obj: DraObject) -> None:
        kind = type(obj).__name__
        self._table(kind)[dra_key(obj)] = obj
        if isinstance(obj, ResourceClaim) and obj.allocation is not None:
            self.in_flight.pop(obj.meta.uid, None)  # the store caught up
        self.generation += 1

    def remove(self, kind: str, key: str) -> None:
        old = self._table(kind).pop(key, None)
        if old is not None:
            if isinstance(old, ResourceClaim):
                self.in_flight.pop(old.meta.uid, None)
            self.generation += 1

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get(f"{namespace}/{name}")

    def signal_pending(self, claim: ResourceClaim, allocation: AllocationResult) -> None:
        """Reserve: the claim's allocation is in flight (upstream
        SignalClaimPendingAllocation)."""
        self.in_flight[claim.meta.uid] = (claim.key, allocation)
        self.generation += 1

    def remove_pending(self, uid: str) -> bool:
        """Unreserve / a failed PreBind: forget the in-flight allocation."""
        if self.in_flight.pop(uid, None) is None:
            return False
        self.generation += 1
        return True

    def has_pending(self, uid: str) -> bool:
        return uid in self.in_flight

    def allocated_devices(self) -> frozenset[tuple[str, str, str]]:
        """(driver, pool, device) of every allocation in the store or in flight; devices
        allocated with admin access do not count (upstream ListAllAllocatedDevices)."""
        if self._allocated_gen != self.generation:
            out: set[tuple[str, str, str]] = set()
            for claim in self.claims.values():
                if claim.allocation is not None and claim.meta.uid not in self.in_flight:
                    out.update(
                        (r.driver, r.pool, r.device)
                        for r in claim.allocation.devices
                        if not r.admin_access
                    )
            for _, allocation in self.in_flight.values():
                out.update(
                    (r.driver, r.pool, r.device) for r in allocation.devices if not r.admin_access
                )
            self._allocated = frozenset(out)
            self._allocated_gen = self.generation
        return self._allocated
