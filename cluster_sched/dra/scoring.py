"""DynamicResources' Score: prioritized lists (upstream ``computeScore`` in
pkg/scheduler/framework/plugins/dynamicresources, v1.35).

A claim request with ``firstAvailable`` lists its alternatives best first; a node whose
allocation took the subrequest at index ``i`` earns ``FirstAvailableDeviceRequestMaxSize
- i`` for it (8 for the first, 1 for the eighth), summed over every such request of every
claim the pod has to allocate. Requests with ``exactly`` and claims already allocated
earn nothing. NormalizeScore is the default one (highest node 100).

Kept apart from the plugin so that upstream's own table for it (``Test_computesScore``)
runs against this function alone, with upstream's inputs (claims, one node's allocation
results) and expected sums, and so that the plugin module stays within its size limit;
``DynamicResources.score`` only hands it the cycle's claims and per-node allocations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from cluster_sched.dra.objects import FIRST_AVAILABLE_MAX_SIZE, AllocationResult, ResourceClaim
from cluster_sched.errors import SchedulerError

__all__ = ["ScoreError", "compute_score", "node_scores", "subrequest_ranks"]


class ScoreError(SchedulerError):
    """A node's allocation results do not cover the claims to allocate (upstream's Score
    returns an Error status: the attempt fails)."""


def subrequest_ranks(claim: ResourceClaim) -> dict[str, int]:
    """What each of the claim's subrequests earns when allocated: ``req/sub`` ->
    FirstAvailableDeviceRequestMaxSize - its index in ``req``'s firstAvailable."""
    return {
        f"{req.name}/{sub.name}": FIRST_AVAILABLE_MAX_SIZE - i
        for req in claim.spec.requests
        if req.exactly is None
        for i, sub in enumerate(req.first_available)
    }


def _pending_ranks(claims: Sequence[ResourceClaim]) -> list[dict[str, int]]:
    """The ranks of the claims still to allocate, in order: the ones Filter's
    allocation results pair with."""
    return [subrequest_ranks(c) for c in claims if c.allocation is None]


def _ranked_score(
    ranks: Sequence[Mapping[str, int]], allocations: Sequence[AllocationResult]
) -> int:
    if len(allocations) < len(ranks):
        raise ScoreError(
            f"number of allocations {len(allocations)} is smaller than number of claims"
        )
    score = 0
    for claim_ranks, allocation in zip(ranks, allocations, strict=False):
        if not claim_ranks:
            continue
        # a subrequest counts once however many devices it took
        allocated = {r.request for r in allocation.devices if "/" in r.request}
        score += sum(claim_ranks.get(ref, 0) for ref in allocated)
    return score


def compute_score(claims: Sequence[ResourceClaim], allocations: Sequence[AllocationResult]) -> int:
    """One node's score: ``allocations`` are that node's results for the claims still to
    allocate, in the order of ``claims`` (claims already allocated take no result and
    earn nothing: upstream #139017, on release-1.35, after v1.35.0 had paired results
    with every claim and failed Score for a pod with both kinds). Raises ScoreError when
    there are fewer results than claims to allocate."""
    return _ranked_score(_pending_ranks(claims), allocations)


def node_scores(
    claims: Sequence[ResourceClaim],
    node_allocations: Mapping[str, Sequence[AllocationResult]],
    names: Sequence[str],
) -> np.ndarray:
    """``compute_score`` for each node of ``names`` (int64): ``claims`` are the pod's
    claims, ``node_allocations`` Filter's results per node; 0 where Filter kept no
    allocation (nothing to allocate there, or the node was not filtered here). The ranks
    are taken once per pod, and nothing is visited when no claim has a prioritized list;
    otherwise one dict look-up per node (Filter ran the allocator on each of them)."""
    out = np.zeros(len(names), dtype=np.int64)
    ranks = _pending_ranks(claims)
    if not node_allocations or not any(ranks):
        return out
    for i, name in enumerate(names):
        allocations = node_allocations.get(name)
        if allocations is not None:
            out[i] = _ranked_score(ranks, allocations)
    return out
