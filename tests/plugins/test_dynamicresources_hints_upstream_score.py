"""Upstream's DynamicResources scoring tests (dynamicresources_test.go, v1.35; no gate
beyond the default DRAPrioritizedList): Test_computesScore (7 cases, all ported) on
``compute_score``, the function the plugin's Score calls per node, and TestNormalizeScore
(7 cases, all ported) on the plugin's NormalizeScore. The case list of the other
plugin tests is in test_dynamicresources_hints_upstream.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cluster_sched.api.manifest import parse_object
from cluster_sched.dra.objects import AllocationResult
from cluster_sched.dra.results import compute_score
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.plugins.dynamicresources import new
from cluster_sched.testing.builders import make_pod

CLASS = "my-resource-class"
MAX_INT32 = 2**31 - 1


def _claim(*requests: tuple[str, int]) -> Any:
    """st.MakeResourceClaim().NamedRequestWithPrioritizedList(name, subreq-1..n)."""
    reqs = [
        {
            "name": name,
            "firstAvailable": [
                {"name": f"subreq-{i}", "deviceClassName": CLASS, "count": 1}
                for i in range(1, subs + 1)
            ],
        }
        for name, subs in requests
    ]
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim", "namespace": "default"},
        "spec": {"devices": {"requests": reqs}},
    }
    return parse_object(doc)


def _allocation(*requests: str) -> AllocationResult:
    """A claim's decoded status.allocation with one device result per request named."""
    doc = _claim().raw
    results = [{"request": r, "driver": "d", "pool": "p", "device": f"dev-{i}"}
               for i, r in enumerate(requests)]  # fmt: skip
    allocation = parse_object({**doc, "status": {"allocation": {"devices": {"results": results}}}})
    assert allocation.allocation is not None
    return allocation.allocation  # type: ignore[no-any-return]


SCORE_CASES = [
    pytest.param([_claim(("req-1", 1)), _claim(("req-2", 1))], [], None,
                 id="more-claims-than-allocations"),
    pytest.param([_claim(("req-1", 1))], [_allocation("req-1/subreq-1")], 8,
                 id="single-request-only-subrequest-allocated"),
    pytest.param([_claim(("req-1", 8))], [_allocation("req-1/subreq-8")], 1,
                 id="single-request-last-subrequest-allocated"),
    pytest.param([_claim(("req-1", 4), ("req-2", 5))],
                 [_allocation("req-1/subreq-4", "req-2/subreq-5")], 9,
                 id="multiple-requests-with-middle-subrequests-allocated"),
    pytest.param([_claim(("req-1", 8), ("req-2", 1))],
                 [_allocation("req-1/subreq-8", "req-2/subreq-1")], 9,
                 id="multiple-requests-with-top-subrequests-allocated"),
    pytest.param([_claim(("req-1", 8)), _claim(("req-2", 8))],
                 [_allocation("req-1/subreq-8"), _allocation("req-2/subreq-8")], 2,
                 id="multiple-claims-with-last-subrequests-allocated"),
    pytest.param([_claim(("req-1", 1)), _claim(("req-2", 1))],
                 [_allocation("req-1/subreq-1"), _allocation("req-2/subreq-1")], 16,
                 id="multiple-claims-with-top-subrequests-allocated"),
]  # fmt: skip


@pytest.mark.parametrize(("claims", "allocations", "want"), SCORE_CASES)
def test_compute_score(
    claims: list[Any], allocations: list[AllocationResult], want: int | None
) -> None:
    if want is None:
        with pytest.raises(ValueError, match="number of allocations 0 is smaller"):
            compute_score(claims, allocations)
        return
    assert compute_score(claims, allocations) == want


NORMALIZE_CASES = [
    pytest.param([], [], id="empty"),
    pytest.param([42], [100], id="single-score"),
    pytest.param([8, 8], [100, 100], id="all-same"),
    pytest.param([MAX_INT32, MAX_INT32], [100, 100], id="all-same-very-large"),
    pytest.param([MAX_INT32, 0], [100, 0], id="max-and-min-values"),
    pytest.param([99, 98, 97], [100, 98, 97], id="mid-value"),
    pytest.param([MAX_INT32, MAX_INT32 - 1, 1, 0], [100, 99, 0, 0],
                 id="large-spread-lost-precision"),
]  # fmt: skip


@pytest.mark.parametrize(("scores", "want"), NORMALIZE_CASES)
def test_normalize_score(scores: list[int], want: list[int]) -> None:
    plugin = new(None, Handle())
    pod = make_pod("my-pod").obj()
    got = plugin.normalize_score(CycleState(), pod, np.array(scores, dtype=np.int64))
    assert got.tolist() == want
