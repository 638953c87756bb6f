"""More of upstream's allocator table (structured/internal/allocatortesting, the
cases that need only v1.35's default gates, plus the two gate-off ones), with
upstream's names and fixtures: node-1 in region-1 on planet earth, device-1 in
pool-1 of driver-a unless a case says otherwise. Each expects the per-claim
results (request, driver, pool, device, admin access), no allocation (None), or an
error containing a string."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.dra.allocator import AllocationError
from tests.dra.allocator_upstream_cases import (
    CASES,
    CONFIG_CASES,
    _allocate,
)


@pytest.mark.parametrize(
    ("classes", "slices", "claims", "opts", "want"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_upstream_allocator_case(
    classes: list[Any], slices: list[Any], claims: list[Any], opts: dict[str, Any], want: Any
) -> None:
    if isinstance(want, str):
        with pytest.raises(AllocationError, match=want.replace("(", r"\(")):
            _allocate(classes, slices, claims, opts)
        return
    found = _allocate(classes, slices, claims, opts)
    if want is None:
        assert found is None
        return
    assert found is not None
    got = [
        [(d.request, d.driver, d.pool, d.device, d.admin_access) for d in a.devices] for a in found
    ]
    assert got == want
    if "selector" in opts:
        assert [a.node_selector for a in found] == [opts["selector"]]


@pytest.mark.parametrize(
    ("classes", "slices", "claims", "want"),
    [pytest.param(*case[1:], id=case[0]) for case in CONFIG_CASES],
)
def test_upstream_allocator_config_case(
    classes: list[Any], slices: list[Any], claims: list[Any], want: list[list[Any]]
) -> None:
    found = _allocate(classes, slices, claims, {})
    assert found is not None
    got = [[(c.driver, c.parameters, c.requests, c.source) for c in a.config] for a in found]
    assert got == want
