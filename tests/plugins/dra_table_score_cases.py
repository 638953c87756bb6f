"""Upstream's TestPlugin scoring and gate-off cases, shared by the plugin-table test modules."""

from __future__ import annotations

from tests.dra.dra_fixtures import UP_CLAIM, device, st_slice, sub_request
from tests.plugins.dra_table_cases import (
    ADMIN_PENDING,
    CANNOT,
    CLASS,
    NO_NEW,
    OTHER_ALLOCATED,
    PENDING,
    PRIORITIZED,
    PRIORITIZED_4321,
    PRIORITIZED_SELECTOR,
    PRIORITIZED_TWO,
    UNRESOLVABLE,
    WORKER_SLICE,
    Case,
    pod_two_claims,
    prioritized_claim,
)

THREE = ("worker", "worker-2", "worker-3")


def _devices(node_name: str, n: int) -> dict[str, object]:
    return st_slice(node_name, *(device(f"instance-{i}") for i in range(1, n + 1)))


SCORING: dict[str, Case] = {
    # subreq-1 wants a healthy device: worker's is, worker-2's is not (subreq-2 there)
    "single-claim-prioritized-list-scoring": Case(
        (
            PRIORITIZED_SELECTOR,
            CLASS,
            st_slice("worker", device("instance-1", healthy=True)),
            st_slice("worker-2", device("instance-1", healthy=False)),
        ),
        nodes=("worker", "worker-2"),
        scores={"worker": (8, 100), "worker-2": (7, 87)},
    ),
    # claim 1: one device; claim 2: 4, 3, 2 or 1 devices of what is left
    "multiple-claims-prioritized-list-scoring": Case(
        (
            PRIORITIZED,
            PRIORITIZED_4321,
            CLASS,
            _devices("worker", 4),
            _devices("worker-2", 2),
            _devices("worker-3", 1),
        ),
        pod=pod_two_claims(),
        nodes=THREE,
        filter={"worker-3": CANNOT},
        scores={"worker": (15, 100), "worker-2": (13, 86)},
    ),
    # two requests of 2 (else 1) devices each on 4, 3 and 2 devices
    "multiple-requests-prioritized-list-scoring": Case(
        (
            PRIORITIZED_TWO,
            CLASS,
            _devices("worker", 4),
            _devices("worker-2", 3),
            _devices("worker-3", 2),
        ),
        nodes=THREE,
        scores={"worker": (16, 100), "worker-2": (15, 93), "worker-3": (14, 87)},
    ),
}


GATES_OFF: dict[str, Case] = {
    "request-admin-access-without-DRAAdminAccess-featuregate": Case(
        (ADMIN_PENDING, OTHER_ALLOCATED, CLASS, WORKER_SLICE),
        error=f"claim default/{UP_CLAIM}, request req-1: admin access is requested, but the "
        "feature is disabled",
        gates="DRAAdminAccess=false",
    ),
    "claim-with-prioritized-list-feature-disabled": Case(
        (prioritized_claim(UP_CLAIM, ("req-1", [sub_request("subreq-1")]), owned=False), CLASS),
        prefilter=(
            UNRESOLVABLE,
            f"resource claim default/{UP_CLAIM}, request req-1: has subrequests, but the "
            "DRAPrioritizedList feature is disabled",
        ),
        postfilter=NO_NEW,
        gates="DRAPrioritizedList=false",
    ),
    "timeout_disabled": Case(
        (PENDING, CLASS, WORKER_SLICE), filter_timeout="0", gates="DRASchedulerFilterTimeout=false"
    ),
}
