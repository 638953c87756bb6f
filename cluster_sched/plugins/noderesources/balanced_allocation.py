"""NodeResourcesBalancedAllocation: favours nodes whose resource fractions stay close."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.config.plugin_args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import SUCCESS, Status, skip
from cluster_sched.plugins.names import NODE_RESOURCES_BALANCED_ALLOCATION
from cluster_sched.plugins.noderesources.resources import (
    allocatable_and_requested,
    pod_request_list,
)
from cluster_sched.plugins.noderesources.scorers import balanced_allocation

NAME = NODE_RESOURCES_BALANCED_ALLOCATION
SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: np.ndarray


class BalancedAllocation:
    name = NAME

    def __init__(self, args: NodeResourcesBalancedAllocationArgs) -> None:
        self.resources = args.resources

    def pre_score(self, state: CycleState, pod: Pod, snapshot: Any, feasible: Any) -> Status:
        requests = pod_request_list(pod, self.resources, nonzero=False)
        if not requests.any():
            # Best-effort pods would all pile onto one node (kubernetes#129138): skip.
            return skip()
        state.write(SCORE_STATE_KEY, _PreScoreState(requests))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        s: _PreScoreState | None = state.get(SCORE_STATE_KEY)
        if s is None:
            requests = pod_request_list(pod, self.resources, nonzero=False)
            if not requests.any():
                return np.zeros(len(nodes), dtype=np.int64)
        else:
            requests = s.pod_requests
        return balanced_scores(nodes, self.resources, requests)


def balanced_scores(
    nodes: NodeSlice, resources: Sequence[ResourceSpec], pod_requests: np.ndarray
) -> np.ndarray:
    """int64[k]: Score of ``nodes`` for PreScore's ``pod_requests`` (int64[m], no
    non-zero defaults: upstream scores BalancedAllocation on the plain requests)."""
    alloc, req = allocatable_and_requested(nodes, resources, pod_requests, use_requested=True)
    return balanced_allocation(alloc, req)


def new(args: NodeResourcesBalancedAllocationArgs | None, handle: Handle) -> BalancedAllocation:
    return BalancedAllocation(args or NodeResourcesBalancedAllocationArgs())
