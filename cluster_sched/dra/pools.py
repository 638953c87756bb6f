"""Resource pools as the allocator sees them for one node (upstream structured
``GatherPools``).

A pool is ``(driver, pool name)``. Only the slices of its newest generation count;
the pool is *incomplete* while fewer of them are known than ``resourceSliceCount``
says (its devices are not handed out) and *invalid* when two of them list the same
device name. Which slices a node sees: those published for it (``nodeName``), those
whose ``nodeSelector`` matches it, and those for ``allNodes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cluster_sched.api.objects import Node
from cluster_sched.api.selectors import node_selector_matches
from cluster_sched.dra.objects import Device, ResourceSlice

__all__ = ["Pool", "PoolDevice", "gather_pools"]


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


def gather_pools(slices: Iterable[ResourceSlice], node: Node) -> list[Pool]:
    """The pools ``node`` sees, sorted by (driver, pool name)."""
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        if slice_matches_node(s, node):
            grouped.setdefault((s.driver, s.pool), []).append(s)
    pools = []
    for (driver, name), members in sorted(grouped.items()):
        newest = max(s.pool_generation for s in members)
        current = sorted((s for s in members if s.pool_generation == newest), key=lambda s: s.name)
        devices = tuple(PoolDevice(driver, name, dev, s) for s in current for dev in s.devices)
        names = [d.device.name for d in devices]
        pools.append(
            Pool(
                driver=driver,
                name=name,
                devices=devices,
                incomplete=len(current) < current[0].resource_slice_count,
                invalid=len(set(names)) != len(names),
            )
        )
    return pools
