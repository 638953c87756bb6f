"""The DRA objects plugins read (upstream's SharedDRAManager: DeviceClasses,
ResourceSlices, ResourceClaims with their assume cache), kept current by the cache
from the watch.

Allocations in flight (Reserve done, PreBind not yet seen in the store) live here
too, so that every pod of a batch, and the next cycles, see those devices as taken:
``allocated_devices`` is the store's allocations plus the in-flight ones.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from cluster_sched.dra.objects import (
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from cluster_sched.dra.pools import group_by_pool, node_pool

__all__ = ["DRA_KINDS", "DraListers", "dra_key"]

#: The kinds this module lists, by class name.
DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")

DeviceID = tuple[str, str, str]
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
    #: bumps only when a ResourceSlice or DeviceClass changes
    slices_generation: int = 0
    _index: tuple[dict[str, list[ResourceSlice]], list[ResourceSlice]] = ({}, [])
    _index_gen: int = -1
    _by_pool: dict[tuple[str, str], list[ResourceSlice]] = field(default_factory=dict)
    _by_pool_gen: int = -1
    _class_devices: dict[str, dict[str, tuple[tuple[str, str, str], ...]]] = field(
        default_factory=dict
    )
    _class_gen: int = -1
    _class_sets: dict[str, set[DeviceID]] = field(default_factory=dict)
    #: classes whose selectors failed at run time on some device
    _class_broken: set[str] = field(default_factory=set)
    _free: dict[str, dict[str, int]] = field(default_factory=dict)
    _device_node: dict[DeviceID, str] = field(default_factory=dict)
    _store_counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    _flight_counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    _allocated: frozenset[tuple[str, str, str]] = frozenset()
    _allocated_gen: int = -1

    def _table(self, kind: str) -> dict[str, object]:
        return {  # type: ignore[return-value]
            "DeviceClass": self.classes,
            "ResourceSlice": self.slices,
            "ResourceClaim": self.claims,
            "ResourceClaimTemplate": self.templates,
        }[kind]

    def _count(self, claim: object, sign: int) -> None:
        if isinstance(claim, ResourceClaim) and claim.allocation is not None:
            for r in claim.allocation.devices:
                if not r.admin_access:
                    self._bump(self._store_counts, (r.driver, r.pool, r.device), sign)

    def set(self, obj: DraObject) -> None:
        kind = type(obj).__name__
        table = self._table(kind)
        key = dra_key(obj)
        self._count(table.get(key), -1)
        self._count(obj, 1)
        table[key] = obj
        if isinstance(obj, ResourceClaim) and obj.allocation is not None:
            self.remove_pending(obj.meta.uid)  # the store caught up
        self.generation += 1
        if kind in ("ResourceSlice", "DeviceClass"):
            self.slices_generation += 1

    def remove(self, kind: str, key: str) -> None:
        old = self._table(kind).pop(key, None)
        if old is not None:
            self._count(old, -1)
            if isinstance(old, ResourceClaim):
                self.remove_pending(old.meta.uid)
            self.generation += 1
            if kind in ("ResourceSlice", "DeviceClass"):
                self.slices_generation += 1

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.claims.get(f"{namespace}/{name}")

    def signal_pending(self, claim: ResourceClaim, allocation: AllocationResult) -> None:
        """Reserve: the claim's allocation is in flight (upstream
        SignalClaimPendingAllocation)."""
        self.remove_pending(claim.meta.uid)
        self.in_flight[claim.meta.uid] = (claim.key, allocation)
        for r in allocation.devices:
            if not r.admin_access:
                self._bump(self._flight_counts, (r.driver, r.pool, r.device), 1)
        self.generation += 1

    def remove_pending(self, uid: str) -> bool:
        """Unreserve / a failed PreBind: forget the in-flight allocation."""
        entry = self.in_flight.pop(uid, None)
        if entry is None:
            return False
        for r in entry[1].devices:
            if not r.admin_access:
                self._bump(self._flight_counts, (r.driver, r.pool, r.device), -1)
        self.generation += 1
        return True

    def _bump(self, counts: Counter[DeviceID], device: DeviceID, sign: int) -> None:
        """Change one allocation count; keep the cached free counts in step when the
        device turns taken or free."""
        before = self.is_allocated(device)
        counts[device] += sign
        after = self.is_allocated(device)
        if before == after or not self._free:
            return
        node = self._device_node.get(device)
        if node is None:
            return
        for class_name, free in self._free.items():
            if device in self._class_sets[class_name]:
                free[node] = free.get(node, 0) + (-1 if after else 1)

    def free_count(self, class_name: str, node: str) -> int:
        """Node-local devices of ``node`` the class accepts that nobody holds (the
        pre-check's column), kept current as allocations come and go."""
        self.class_devices(class_name)  # (re)builds the caches on a slice change
        free = self._free.get(class_name)
        if free is None:
            free = {
                n: sum(1 for d in ids if not self.is_allocated(d))
                for n, ids in self._class_devices[class_name].items()
            }
            self._free[class_name] = free
        return free.get(node, 0)

    def free_counts(self, class_name: str) -> dict[str, int]:
        """``free_count`` of every node that has node-local devices of the class, as
        a new dict (one copy of the kept column, not a lookup per node)."""
        self.free_count(class_name, "")
        return dict(self._free[class_name])

    def is_allocated(self, device: tuple[str, str, str]) -> bool:
        """Is the device allocated in the store or in flight (admin access aside)?"""
        return self._store_counts[device] > 0 or self._flight_counts[device] > 0

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

    def slice_index(self) -> tuple[dict[str, list[ResourceSlice]], list[ResourceSlice]]:
        """(node name -> its node-local slices, slices for a selector or all nodes): the
        slices the allocator may draw from. A slice with partitionable devices' fields
        is in neither (no node's pools hold it; ``pool_slices`` still lists it), so a
        perDeviceNodeSelection slice does not turn the device-count pre-check off."""
        if self._index_gen != self.slices_generation:
            local: dict[str, list[ResourceSlice]] = {}
            shared: list[ResourceSlice] = []
            for s in self.slices.values():
                if s.partitionable:
                    continue
                if s.node_name:
                    local.setdefault(s.node_name, []).append(s)
                else:
                    shared.append(s)
            self._index = (local, shared)
            self._index_gen = self.slices_generation
        return self._index

    def pool_slices(self, driver: str, pool: str) -> list[ResourceSlice]:
        """Every slice of a pool, whichever node it is for (a pool may span nodes)."""
        if self._by_pool_gen != self.slices_generation:
            by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
            for s in self.slices.values():
                by_pool.setdefault((s.driver, s.pool), []).append(s)
            self._by_pool = by_pool
            self._by_pool_gen = self.slices_generation
        return self._by_pool.get((driver, pool), [])

    def class_selector_failed(self, class_name: str) -> bool:
        """Whether a class selector failed at run time on some node-local device (then
        only the allocator, in Filter, may decide: it reports the error upstream's way)."""
        self.class_devices(class_name)
        return class_name in self._class_broken

    def class_devices(self, class_name: str) -> dict[str, tuple[tuple[str, str, str], ...]]:
        """node -> the node-local devices (newest generation of complete, valid pools) a class's
        selectors accept: the column pre-check's counts. A selector that fails on a
        device counts it (the allocator then reports the error). Never a device the
        allocator skips: none from a slice with partitionable devices' fields, none
        with binding conditions (no selector runs on it), none that consumes counters
        (its selectors run: they may fail)."""
        from cluster_sched.dra.cel import (
            CelError,
            CelRuntimeError,
            compile_selector,
            device_matches,
        )

        if self._class_gen != self.slices_generation:
            self._class_devices = {}
            self._class_broken = set()
            self._class_sets = {}
            self._free = {}
            self._device_node = {}
            self._class_gen = self.slices_generation
        hit = self._class_devices.get(class_name)
        if hit is not None:
            return hit
        cls = self.classes.get(class_name)
        out: dict[str, tuple[tuple[str, str, str], ...]] = {}
        try:
            sels = [compile_selector(e) for e in cls.selectors] if cls is not None else []
        except CelError:
            sels = []
        local, _ = self.slice_index()
        for node, slices in local.items():
            ids = []
            for (driver, name), members in group_by_pool(slices).items():
                pool = node_pool(driver, name, members, self.pool_slices)
                if pool is None or pool.incomplete or pool.invalid:
                    continue
                for pd in pool.devices:
                    dev = pd.device
                    if not dev.selectable:
                        continue
                    ok = True
                    for sel in sels:
                        try:
                            if not device_matches(sel, driver, dev):
                                ok = False
                                break
                        except CelRuntimeError:
                            self._class_broken.add(class_name)
                            break
                    if ok and not dev.consumes_counters:
                        ids.append(pd.id)
            out[node] = tuple(ids)
            for d in ids:
                self._device_node[d] = node
        self._class_devices[class_name] = out
        self._class_sets[class_name] = {d for ids in out.values() for d in ids}
        return out
