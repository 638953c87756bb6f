"""The cluster as a scheduling cycle sees it (upstream internalcache.Snapshot, read by
plugins through framework.SharedLister).

Upstream copies the cache into a Snapshot at the start of every cycle (UpdateSnapshot,
by generation). Here node state lives in incrementally updated columns (``NodeTable``), so
a copy per cycle would cost O(nodes) for nothing: a Snapshot is a bundle of live
references that its owner keeps current. The coordinator's Cache owns one (every cycle
reads it between two events, which is what upstream's per-cycle copy guarantees); a
shard owns one over its partition, with the cluster-wide facts (``num_nodes``,
``images``) the coordinator sends with each request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cluster_sched.api.objects import Namespace, Node, PodDisruptionBudget, WorkloadController
from cluster_sched.dra.listers import DraListers
from cluster_sched.framework.volume_listers import VolumeListers
from cluster_sched.nodetable.table import NodeTable

__all__ = ["Snapshot"]


@dataclass(slots=True, eq=False)
class Snapshot:
    """What plugins may read about the cluster during a cycle.

    ``tables`` are the node columns PreFilter/PreScore map over (one in-process, a
    shard's own partition in a shard); ``num_nodes`` and ``images`` are cluster-wide even
    in a shard (ImageLocality scales by the fraction of all nodes holding an image).
    """

    tables: Sequence[NodeTable] = ()
    nodes: Mapping[str, Node] = field(default_factory=dict)
    namespaces: Mapping[str, Namespace] = field(default_factory=dict)
    pdbs: Mapping[str, PodDisruptionBudget] = field(default_factory=dict)
    controllers: Mapping[tuple[str, str], WorkloadController] = field(default_factory=dict)
    #: image name -> (size in bytes as first reported, number of nodes holding it)
    images: dict[str, tuple[int, int]] = field(default_factory=dict)
    num_nodes: int = 0
    #: PVs, PVCs, StorageClasses, CSINodes and CSIDrivers (the volume plugins' listers;
    #: their PreFilter reads them on the coordinator and hands Filter what it needs)
    volumes: VolumeListers = field(default_factory=VolumeListers)
    #: DeviceClasses, ResourceSlices, ResourceClaims and their templates (DRA)
    dra: DraListers = field(default_factory=DraListers)
    #: bumped by the owner whenever namespaces, PDBs, controllers or storage objects
    #: change (caches of answers that read them key on it)
    objects_version: int = 0

    @classmethod
    def of_table(cls, table: NodeTable) -> Snapshot:
        """A snapshot over one bare table (tests, explain-like tools)."""
        return cls(tables=(table,), num_nodes=table.size)

    def image_state(self, name: str) -> tuple[int, int] | None:
        return self.images.get(name)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """Labels of ``namespace`` (empty when unknown, as upstream assumes)."""
        ns = self.namespaces.get(namespace)
        return dict(ns.meta.labels) if ns is not None else {}

    def node(self, name: str) -> Node | None:
        """The Node object named ``name`` (from ``nodes``, else from the table holding it)."""
        node = self.nodes.get(name)
        if node is not None:
            return node
        for table in self.tables:
            row = table.index.get(name)
            if row is not None:
                return table.nodes[row]
        return None
