"""Resource pools as the allocator sees them for one node (upstream structured
``GatherPools``).

A pool is ``(driver, pool name)``. Which slices a node sees: those published for it
(``nodeName``), those whose ``nodeSelector`` matches it, and those for ``allNodes``.
Of those, only the newest generation counts. A pool may span nodes (each node
publishing its own slices of it): when the node sees fewer slices than
``resourceSliceCount`` says, the pool's slices on every node decide: a newer
generation elsewhere makes the node's slices obsolete (the pool is left out), all of
this generation present makes it complete, else it is *incomplete* (its devices are
not handed out). A complete pool is *invalid* when two of its slices the node sees
list the same device name.

With DRAPartitionableDevices off (v1.35's default), a slice using that gate's fields
(``ResourceSlice.partitionable``) is in no node's view, as upstream GatherPools skips
it before node selection; it still counts when the pool's slices on every node are
looked at (completeness, a newer generation), as upstream's checkSlicesInPool does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cluster_sched.api.objects import Node
from cluster_sched.api.selectors import node_selector_matches
from cluster_sched.dra.objects import Device, ResourceSlice

__all__ = [
    "Pool",
    "PoolDevice",
    "PoolSlices",
    "gather_pools",
    "group_by_pool",
    "node_pool",
    "node_pool_view",
]

#: (driver, pool name) -> every slice of that pool, whichever node it is for
PoolSlices = Callable[[str, str], Iterable[ResourceSlice]]


@dataclass(frozen=True, slots=True)
class PoolDevice:
    """A device with the slice it came from (its node selection decides the
    allocation's node selector)."""

    driver: str
    pool: str
    device: Device
    slice: ResourceSlice

    @property
    def id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device.name)


@dataclass(frozen=True, slots=True)
class Pool:
    driver: str
    name: str
    devices: tuple[PoolDevice, ...]
    incomplete: bool = False
    invalid: bool = False


def slice_matches_node(s: ResourceSlice, node: Node) -> bool:
    if s.node_name:
        return s.node_name == node.name
    if s.all_nodes:
        return True
    return s.node_selector is not None and node_selector_matches(
        s.node_selector, node.name, node.labels
    )


def _scan(slices: list[ResourceSlice]) -> PoolSlices:
    return lambda driver, pool: [s for s in slices if (s.driver, s.pool) == (driver, pool)]


def node_pool_view(
    members: list[ResourceSlice], pool_slices: PoolSlices
) -> tuple[list[ResourceSlice], bool] | None:
    """upstream GatherPools for one pool: ``members`` are the pool's slices the node
    sees; ``pool_slices`` is asked for all of the pool's slices only when the node sees
    too few. (The newest generation's slices the node sees, incomplete?), or None when
    a newer generation elsewhere makes them obsolete."""
    newest = max(s.pool_generation for s in members)
    current = [s for s in members if s.pool_generation == newest]
    want = current[0].resource_slice_count
    if len(current) == want:
        return current, False
    seen = 0
    for s in pool_slices(current[0].driver, current[0].pool):
        if s.pool_generation > newest:
            return None
        seen += s.pool_generation == newest
    return current, seen != want


def group_by_pool(slices: Iterable[ResourceSlice]) -> dict[tuple[str, str], list[ResourceSlice]]:
    """``slices`` a node sees, by pool; a slice with partitionable devices' fields is
    left out (upstream GatherPools with DRAPartitionableDevices off)."""
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        if not s.partitionable:
            grouped.setdefault((s.driver, s.pool), []).append(s)
    return grouped


def node_pool(
    driver: str, name: str, members: list[ResourceSlice], pool_slices: PoolSlices
) -> Pool | None:
    """The pool as a node sees it from ``members`` (its slices of the pool the node
    sees), or None when they are obsolete."""
    view = node_pool_view(members, pool_slices)
    if view is None:
        return None
    current, incomplete = view
    current.sort(key=lambda s: s.name)
    devices = tuple(PoolDevice(driver, name, dev, s) for s in current for dev in s.devices)
    names = [d.device.name for d in devices]
    return Pool(
        driver=driver,
        name=name,
        devices=devices,
        incomplete=incomplete,
        invalid=not incomplete and len(set(names)) != len(names),
    )


def gather_pools(
    slices: Iterable[ResourceSlice], node: Node, pool_slices: PoolSlices | None = None
) -> list[Pool]:
    """The pools ``node`` sees, sorted by (driver, pool name). ``pool_slices`` finds a
    pool's slices on every node (None: ``slices`` holds them all)."""
    slices = list(slices)
    grouped = group_by_pool(s for s in slices if slice_matches_node(s, node))
    every = pool_slices or _scan(slices)
    pools = []
    for (driver, name), members in sorted(grouped.items()):
        pool = node_pool(driver, name, members, every)
        if pool is not None:
            pools.append(pool)
    return pools
