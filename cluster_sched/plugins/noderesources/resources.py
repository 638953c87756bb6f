"""Resource-name classes and the per-resource (allocatable, requested) gathering shared by
the resource plugins."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cluster_sched.api.objects import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Pod
from cluster_sched.config.plugin_args import ResourceSpec
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.nodetable.overflow import saturating_add
from cluster_sched.nodetable.table import R_CPU, R_MEMORY

NATIVE = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, PODS})


def is_scalar_resource(name: str) -> bool:
    """Anything but cpu, memory, ephemeral-storage and pods (extended, hugepages...)."""
    return name not in NATIVE


def is_extended_resource(name: str) -> bool:
    """Upstream IsExtendedResourceName: domain-prefixed, not ``kubernetes.io/``, not ``requests.``."""
    if "/" not in name or "kubernetes.io/" in name:
        return False
    return not name.startswith("requests.")


def pod_request_list(pod: Pod, resources: Sequence[ResourceSpec], *, nonzero: bool) -> np.ndarray:
    """int64[m]: the pod's request per configured resource. ``nonzero`` applies the
    scoring defaults to cpu/memory (upstream NonMissingContainerRequests)."""
    out = np.zeros(len(resources), dtype=np.int64)
    for i, spec in enumerate(resources):
        if nonzero and spec.name == CPU:
            out[i] = pod.nonzero_cpu
        elif nonzero and spec.name == MEMORY:
            out[i] = pod.nonzero_memory
        else:
            out[i] = pod.requests.get(spec.name, 0)
    return out


def allocatable_and_requested(
    nodes: NodeSlice,
    resources: Sequence[ResourceSpec],
    pod_requests: np.ndarray,
    *,
    use_requested: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """(allocatable, requested) int64[m, k] per configured resource, including the pod.

    Upstream calculateResourceAllocatableRequest: cpu/memory use the non-zero
    accounting unless ``use_requested``; a scalar resource the pod does not request, or
    one the node lacks, yields allocatable 0, which every scorer skips. ``requested``
    saturates at int64 (see nodetable/overflow.py): past allocatable either way.
    """
    table, rows = nodes.table, nodes.rows
    k, m = len(rows), len(resources)
    alloc = np.zeros((m, k), dtype=np.int64)
    req = np.zeros((m, k), dtype=np.int64)
    for i, spec in enumerate(resources):
        name = spec.name
        if is_scalar_resource(name) and pod_requests[i] == 0:
            continue
        col = table.resources.get(name)
        if col < 0 or name == PODS:
            continue
        alloc[i] = nodes.take(table.allocatable[col])
        if not use_requested and name == CPU:
            used = nodes.take(table.nonzero[R_CPU])
        elif not use_requested and name == MEMORY:
            used = nodes.take(table.nonzero[R_MEMORY])
        else:
            used = nodes.take(table.requested[col])
        req[i] = saturating_add(used, int(pod_requests[i]))
    return alloc, req
