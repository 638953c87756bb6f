"""Upstream's ``Test_computesScore`` (pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources_test.go, v1.35, plus the case #139017 added on release-1.35), ported
case by case against ``dra.scoring.compute_score``: one node's allocation results for a
pod's claims, and the score upstream expects (or its error).

Every case needs only the default gates (DRAPrioritizedList is on in v1.35); all 8 are
ported:

================================================  =======================================
more-claims-than-allocations                      ported: error (2 claims, no result)
single-request-only-subrequest-allocated          ported: 8
single-request-last-subrequest-allocated          ported: 1
multiple-requests-with-middle-subrequests-        ported: 9 (5 + 4)
allocated
multiple-requests-with-top-subrequests-allocated  ported: 9 (1 + 8)
multiple-claims-with-last-subrequests-allocated   ported: 2
multiple-claims-with-top-subrequests-allocated    ported: 16
mix-of-allocated-and-unallocated-claims           ported: 0, no error (#139017 on
                                                  release-1.35: v1.35.0 paired the one
                                                  result with the allocated claim and
                                                  failed Score)
================================================  =======================================

Upstream issue #139016's scenario (the reason for the 8th case) also runs through the
plugin and ``explain``. The table's neighbour ``TestNormalizeScore`` (7 cases, default gates) is ported at the
end, against the plugin's ``normalize_score``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cluster_sched.config.plugin_args import DynamicResourcesArgs
from cluster_sched.dra.objects import AllocationResult, DeviceResult
from cluster_sched.dra.scoring import ScoreError, compute_score, node_scores
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.plugins.dynamicresources import DynamicResources
from tests.dra.dra_fixtures import (
    UP_CLAIM2,
    allocated,
    device,
    parse,
    st_slice,
    sub_request,
    up_claim,
)
from tests.plugins.dra_table_cases import (
    CLASS,
    PENDING,
    Case,
    check,
    pod_two_claims,
    prioritized_claim,
)

INT32_MAX = 2**31 - 1


def _claim(*requests: tuple[str, int]) -> Any:
    """st.MakeResourceClaim().NamedRequestWithPrioritizedList(name, subreq-1..n)..."""
    return parse(
        up_claim(
            "my-claim",
            *(
                {
                    "name": name,
                    "firstAvailable": [sub_request(f"subreq-{i}") for i in range(1, n + 1)],
                }
                for name, n in requests
            ),
            owned=False,
        )
    )


def _result(*requests: str) -> AllocationResult:
    """An allocation result whose devices were taken for ``requests`` (``req/sub``)."""
    return AllocationResult(
        tuple(
            DeviceResult(r, "some-driver", "worker", f"instance-{i}")
            for i, r in enumerate(requests)
        )
    )


#: upstream's allocatedClaim (pendingClaim, allocated: req-1 -> instance-1), pendingClaim2
ALLOCATED = parse(allocated(up_claim()))
PENDING2 = parse(up_claim(UP_CLAIM2))

#: name -> (claims, one node's allocation results, expected score; None: an error)
CASES: dict[str, tuple[list[Any], list[AllocationResult], int | None]] = {
    "more-claims-than-allocations": ([_claim(("req-1", 1)), _claim(("req-2", 1))], [], None),
    "single-request-only-subrequest-allocated": (
        [_claim(("req-1", 1))],
        [_result("req-1/subreq-1")],
        8,
    ),
    "single-request-last-subrequest-allocated": (
        [_claim(("req-1", 8))],
        [_result("req-1/subreq-8")],
        1,
    ),
    "multiple-requests-with-middle-subrequests-allocated": (
        [_claim(("req-1", 4), ("req-2", 5))],
        [_result("req-1/subreq-4", "req-2/subreq-5")],
        9,
    ),
    "multiple-requests-with-top-subrequests-allocated": (
        [_claim(("req-1", 8), ("req-2", 1))],
        [_result("req-1/subreq-8", "req-2/subreq-1")],
        9,
    ),
    "multiple-claims-with-last-subrequests-allocated": (
        [_claim(("req-1", 8)), _claim(("req-2", 8))],
        [_result("req-1/subreq-8"), _result("req-2/subreq-8")],
        2,
    ),
    "multiple-claims-with-top-subrequests-allocated": (
        [_claim(("req-1", 1)), _claim(("req-2", 1))],
        [_result("req-1/subreq-1"), _result("req-2/subreq-1")],
        16,
    ),
    "mix-of-allocated-and-unallocated-claims": (
        [ALLOCATED, PENDING2],
        [_result("req-1")],
        0,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_compute_score_upstream(name: str) -> None:
    claims, allocations, want = CASES[name]
    if want is None:
        with pytest.raises(ScoreError, match="number of allocations 0 is smaller than number"):
            compute_score(claims, allocations)
        return
    assert compute_score(claims, allocations) == want


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[2] is not None])
def test_node_scores_take_each_nodes_results(name: str) -> None:
    """The plugin's per-node column gives each node upstream's score for its own results,
    and 0 to a node without results (upstream: not in nodeAllocations)."""
    claims, allocations, want = CASES[name]
    got = node_scores(claims, {"worker": allocations}, ["worker-2", "worker"])
    assert got.tolist() == [0, want]


def test_node_scores_fail_like_compute_score() -> None:
    claims, allocations, _ = CASES["more-claims-than-allocations"]
    with pytest.raises(ScoreError):
        node_scores(claims, {"worker": allocations}, ["worker"])


def _shared(doc: dict[str, Any]) -> dict[str, Any]:
    """The claim allocated on every node (no node selector): a shared multi-node claim."""
    del doc["status"]["allocation"]["nodeSelector"]
    return doc


def test_pod_with_an_allocated_shared_claim_and_a_prioritized_claim_is_scored() -> None:
    """Upstream issue #139016 through explain: a pod sharing an allocated multi-node claim
    (its device is worker's instance-1) that also has a claim with a prioritized list (2
    devices, else 1). Every node fits; each is scored on the pending claim's choice:
    worker's 2 free devices take subreq-1 (8), worker-2's one subreq-2 (7). v1.35.0 paired
    the node's single result with the allocated claim and failed Score with "number of
    allocations 1 is smaller than number of claims"."""
    choice = ("req-1", [sub_request("subreq-1", 2), sub_request("subreq-2", 1)])
    check(
        "allocated-shared-claim-and-prioritized-claim",
        Case(
            (
                _shared(allocated(PENDING)),
                prioritized_claim(UP_CLAIM2, choice),
                CLASS,
                st_slice("worker", *(device(f"instance-{i}") for i in range(1, 4))),
                st_slice("worker-2", device("instance-1")),
            ),
            pod=pod_two_claims(),
            nodes=("worker", "worker-2"),
            scores={"worker": (8, 100), "worker-2": (7, 87)},
        ),
    )


#: TestNormalizeScore: name -> (raw scores, normalized)
NORMALIZE: dict[str, tuple[list[int], list[int]]] = {
    "empty": ([], []),
    "single-score": ([42], [100]),
    "all-same": ([8, 8], [100, 100]),
    "all-same-very-large": ([INT32_MAX, INT32_MAX], [100, 100]),
    "max-and-min-values": ([INT32_MAX, 0], [100, 0]),
    "mid-value": ([99, 98, 97], [100, 98, 97]),
    "large-spread-lost-precision": ([INT32_MAX, INT32_MAX - 1, 1, 0], [100, 99, 0, 0]),
}


@pytest.mark.parametrize("name", list(NORMALIZE))
def test_normalize_score_upstream(name: str) -> None:
    raw, want = NORMALIZE[name]
    # NormalizeScore reads neither the handle, the cycle state nor the pod
    plugin = DynamicResources(DynamicResourcesArgs(), None)  # type: ignore[arg-type]
    got = plugin.normalize_score(CycleState(), None, np.array(raw, dtype=np.int64))  # type: ignore[arg-type]
    assert np.asarray(got).tolist() == want
