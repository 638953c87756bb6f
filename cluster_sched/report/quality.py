"""Placement quality at the end of a run: utilisation, imbalance, fragmentation.

Definitions (the README repeats them):

- The resources covered are cpu, memory and pods, then every extended resource
  (``vendor/name``: ``nvidia.com/gpu``, ``alibabacloud.com/gpu-milli``) some pod requests
  and some node offers (``resources_of``).
- A node's **utilisation** of a resource is the sum of the requests of the pods bound to it
  at the end of the run (their effective requests, as NodeResourcesFit counts them; for
  ``pods``, their number) divided by its allocatable amount (0 when it has none).
- A node is **used** when at least one pod is bound to it.
- **Imbalance** of a resource is the coefficient of variation of that utilisation across
  the used nodes: population standard deviation / mean (0 with no used node or a zero
  mean). 0 means every used node is equally full.
- **Fragmentation** of cpu (memory): the share of the cluster's free cpu (memory) that
  sits on nodes where no *pending shape* with a non-zero cpu (memory) request fits. A
  shape is the (cpu, memory) request of a pod; it fits a node when both fit the node's
  free amounts and the node has a free pod slot. Pending shapes are those of the pods
  still unbound at the end of the run; when every pod was placed, the shapes of all the
  run's pods (how much free capacity the workload's own pod sizes cannot use). Only
  resources count: taints, affinity and ports are not considered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import CPU, MEMORY, PODS
from cluster_sched.report.record import RunRecord, zone_of
from cluster_sched.report.replay import allocatable_matrix, distinct_rows

__all__ = [
    "RESOURCES",
    "NodeUsage",
    "extended_resources",
    "fragmentation",
    "imbalance",
    "node_usage",
    "pending_shapes",
    "resources_of",
    "utilisation_stats",
]

#: The resources every quality figure covers, in column order (extended ones follow).
RESOURCES = (CPU, MEMORY, PODS)


def extended_resources(record: RunRecord) -> tuple[str, ...]:
    """Extended resources (``vendor/name``) some pod of the run requested and some node
    offers, sorted: the bound pods' (``RunStats.extended_requests``, which keeps those
    that completed) and the pods still in the store. Each distinct resource map is read
    once (a pool's nodes share theirs: ``replay.distinct_rows``)."""
    offered = {
        r for a in _distinct(n.allocatable for n in record.nodes) for r, v in a.items()
        if "/" in r and v > 0
    }  # fmt: skip
    asked = {r for req in record.stats.extended_requests.values() for r in req}
    asked.update(r for req in _distinct(p.requests for p in record.pods) for r in req if "/" in r)
    return tuple(sorted(asked & offered))


def _distinct(maps: Iterable[Mapping[str, int]]) -> Iterable[Mapping[str, int]]:
    """The distinct mapping objects among ``maps`` (by identity)."""
    return {id(m): m for m in maps}.values()


def resources_of(record: RunRecord) -> tuple[str, ...]:
    """The columns of the run's figures: RESOURCES, then its extended resources."""
    return RESOURCES + extended_resources(record)


#: Decimal places kept in the summary's ratios.
DIGITS = 4


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """Per-node requested and allocatable amounts at the end of a run."""

    names: tuple[str, ...]
    zones: tuple[str, ...]
    #: int64[n_nodes, n_resources]: cpu (milli-cores), memory (bytes), pods, then the
    #: extended resources, in ``resources`` order
    allocatable: np.ndarray
    #: int64[n_nodes, n_resources]: the same for the bound pods' requests (pods: count)
    requested: np.ndarray
    #: the columns' resources: RESOURCES, then the run's extended resources
    resources: tuple[str, ...] = RESOURCES

    @property
    def utilisation(self) -> np.ndarray:
        """float64[n_nodes, 3]: requested / allocatable, 0 where nothing is allocatable."""
        alloc = self.allocatable.astype(np.float64)
        out = np.zeros_like(alloc)
        np.divide(self.requested, alloc, out=out, where=alloc > 0)
        return out

    @property
    def used(self) -> np.ndarray:
        """bool[n_nodes]: nodes holding at least one pod."""
        return self.requested[:, 2] > 0

    @property
    def free(self) -> np.ndarray:
        """int64[n_nodes, 3]: allocatable minus requested, never below zero."""
        return np.maximum(self.allocatable - self.requested, 0)


def node_usage(record: RunRecord) -> NodeUsage:
    """Sum the bound pods' requests per node (pods bound to unknown nodes are ignored)."""
    resources = resources_of(record)
    names = tuple(n.name for n in record.nodes)
    allocatable = allocatable_matrix(record.nodes, resources)
    index = dict(zip(names, range(len(names)), strict=True))
    bound = [p for p in record.bound if p.node_name in index]
    table, which = distinct_rows([p.requests for p in bound], resources)
    if PODS in resources:
        table[:, resources.index(PODS)] = 1
    requested = np.zeros_like(allocatable)
    if bound:
        rows = np.fromiter((index[p.node_name] for p in bound), dtype=np.int64, count=len(bound))
        np.add.at(requested, rows, table[which])
    return NodeUsage(
        names=names,
        zones=tuple(zone_of(n) for n in record.nodes),
        allocatable=allocatable,
        requested=requested,
        resources=resources,
    )


def _dist(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {"mean": 0.0, "p50": 0.0, "p90": 0.0}
    return {
        "mean": round(float(values.mean()), DIGITS),
        "p50": round(float(np.percentile(values, 50)), DIGITS),
        "p90": round(float(np.percentile(values, 90)), DIGITS),
    }


def utilisation_stats(usage: NodeUsage, only_used: bool) -> dict[str, dict[str, float]]:
    """Mean, p50 and p90 of each resource's node utilisation (numpy's linear percentile),
    over every node or over the used ones."""
    util = usage.utilisation
    if only_used:
        util = util[usage.used]
    return {r: _dist(util[:, j]) for j, r in enumerate(usage.resources)}


def imbalance(usage: NodeUsage) -> dict[str, float]:
    """Coefficient of variation of each resource's utilisation across used nodes."""
    util = usage.utilisation[usage.used]
    out: dict[str, float] = {}
    for j, r in enumerate(usage.resources):
        col = util[:, j]
        mean = float(col.mean()) if len(col) else 0.0
        out[r] = round(float(col.std()) / mean, DIGITS) if mean > 0 else 0.0
    return out


def pending_shapes(record: RunRecord) -> tuple[np.ndarray, str]:
    """int64[k, 2] distinct (cpu, memory) requests of the pending pods, or of every pod
    when none is pending; and which of the two it is ("pending pods" / "all pods")."""
    pending = record.pending
    source, pods = ("pending pods", pending) if pending else ("all pods", list(record.pods))
    shapes = {(p.requests.get(CPU, 0), p.requests.get(MEMORY, 0)) for p in pods}
    if not pending:
        # pods that completed (virtual time) are gone from the store: their shapes are
        # in the placement log
        shapes.update(
            (cpu, memory) for _, _, node, cpu, memory in record.stats.placement_log if node
        )
    arr = np.array(sorted(shapes), dtype=np.int64).reshape(len(shapes), 2)
    return arr, source


def _minimal(shapes: np.ndarray) -> np.ndarray:
    """The Pareto-minimal shapes: a node that fits any shape fits one of these."""
    if len(shapes) == 0:
        return shapes
    order = np.lexsort((shapes[:, 1], shapes[:, 0]))
    keep: list[int] = []
    best_memory: int | None = None
    for i in order.tolist():
        memory = int(shapes[i, 1])
        if best_memory is None or memory < best_memory:
            keep.append(i)
            best_memory = memory
    return shapes[keep]


def fragmentation(usage: NodeUsage, shapes: np.ndarray, source: str) -> dict[str, object]:
    """Stranded free cpu and memory (see the module docstring), absolute and as a share
    of all free capacity of that resource."""
    free = usage.free
    slot = free[:, 2] >= 1
    out: dict[str, object] = {"shapes_from": source, "shapes": len(shapes)}
    for j, r in enumerate((CPU, MEMORY)):
        candidates = _minimal(shapes[shapes[:, j] > 0]) if len(shapes) else shapes
        if len(candidates):
            fits = (
                (free[:, None, 0] >= candidates[None, :, 0])
                & (free[:, None, 1] >= candidates[None, :, 1])
                & slot[:, None]
            ).any(axis=1)
        else:
            fits = np.zeros(len(free), dtype=bool)
        total = int(free[:, j].sum())
        stranded = int(free[~fits, j].sum())
        out[r] = {
            "free": total,
            "stranded": stranded,
            "fraction": round(stranded / total, DIGITS) if total > 0 else 0.0,
        }
    return out


def partly_used(usage: NodeUsage) -> dict[str, dict[str, float]]:
    """Per extended resource (GPUs, GPU shares): the share of the cluster's capacity
    allocated, and the share unallocated on partly allocated nodes (some of it in use,
    some free): the fragmentation GPU-sharing trace studies report, as a share of
    capacity, with the number of such nodes."""
    out: dict[str, dict[str, float]] = {}
    for j in range(len(RESOURCES), len(usage.resources)):
        alloc = usage.allocatable[:, j]
        req = np.minimum(usage.requested[:, j], alloc)
        total = int(alloc.sum())
        partly = (req > 0) & (req < alloc)
        out[usage.resources[j]] = {
            "capacity": total,
            "allocated": round(int(req.sum()) / total, DIGITS) if total else 0.0,
            "unallocated_on_partly_used_nodes": (
                round(int((alloc - req)[partly].sum()) / total, DIGITS) if total else 0.0
            ),
            "partly_used_nodes": int(partly.sum()),
        }
    return out
