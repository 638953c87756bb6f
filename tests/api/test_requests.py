"""Effective pod requests: upstream PodRequests and the scheduler's non-zero variant."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cluster_sched.api.objects import Container
from cluster_sched.api.requests import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    aggregate_requests,
    compute_nonzero_requests,
    compute_requests,
)

MI = 2**20


def c(
    cpu: int | None = None, memory: int | None = None, *, sidecar: bool = False, **other: int
) -> Container:
    requests = dict(other)
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    return Container(name="c", requests=requests, restart_policy="Always" if sidecar else "")


REQUEST_CASES = [
    ("single", [c(1000, 100)], [], {}, {"cpu": 1000, "memory": 100}),
    ("sum-of-containers", [c(1000, 100), c(500, 50)], [], {}, {"cpu": 1500, "memory": 150}),
    (
        "union-of-resources",
        [c(1000), c(memory=50, gpu=1)],
        [],
        {},
        {"cpu": 1000, "memory": 50, "gpu": 1},
    ),
    ("init-larger-wins", [c(1000, 100)], [c(2000, 10)], {}, {"cpu": 2000, "memory": 100}),
    ("init-max-not-sum", [c(1000)], [c(3000), c(2000)], {}, {"cpu": 3000}),
    ("init-adds-new-resource", [c(1000)], [c(memory=64)], {}, {"cpu": 1000, "memory": 64}),
    # upstream "restartable init container": sidecars run alongside the app
    ("sidecar-added", [c(1000)], [c(1000, sidecar=True)], {}, {"cpu": 2000}),
    (
        "multiple-sidecars",
        [c(1000)],
        [c(1000, sidecar=True), c(2000, sidecar=True), c(3000, sidecar=True)],
        {},
        {"cpu": 7000},
    ),
    # a plain init container runs next to the sidecars started before it: 5 + 1 + 2 = 8
    (
        "sidecars-and-init",
        [c(1000)],
        [c(1000, sidecar=True), c(2000, sidecar=True), c(5000), c(3000, sidecar=True)],
        {},
        {"cpu": 8000},
    ),
    (
        "init-before-sidecar-not-stacked",
        [c(1000)],
        [c(5000), c(1000, sidecar=True)],
        {},
        {"cpu": 5000},
    ),
    (
        "sidecar-memory-only",
        [c(1000, 100)],
        [c(memory=50, sidecar=True), c(500, 120)],
        {},
        {"cpu": 1000, "memory": 170},
    ),
    (
        "overhead-added",
        [c(1000, 100)],
        [],
        {"cpu": 250, "memory": 10},
        {"cpu": 1250, "memory": 110},
    ),
    ("overhead-after-init-max", [c(1000)], [c(3000)], {"cpu": 500}, {"cpu": 3500}),
    ("no-requests", [c()], [], {}, {}),
]


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "want"),
    [x[1:] for x in REQUEST_CASES],
    ids=[x[0] for x in REQUEST_CASES],
)
def test_compute_requests(
    containers: list[Container],
    init: list[Container],
    overhead: dict[str, int],
    want: dict[str, int],
) -> None:
    assert compute_requests(containers, init, overhead) == want


D_CPU, D_MEM = DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST

NONZERO_CASES = [
    ("defaults-for-empty-container", [c()], [], {}, (D_CPU, D_MEM)),
    ("defaults-per-container", [c(), c()], [], {}, (2 * D_CPU, 2 * D_MEM)),
    ("explicit-kept", [c(250, 64 * MI)], [], {}, (250, 64 * MI)),
    ("explicit-zero-is-not-missing", [c(0, 0)], [], {}, (0, 0)),
    ("only-missing-one-defaulted", [c(250)], [], {}, (250, D_MEM)),
    ("init-container-gets-defaults", [c(10, 10)], [c()], {}, (D_CPU, D_MEM)),
    ("sidecar-gets-defaults", [c(10, 10)], [c(sidecar=True)], {}, (10 + D_CPU, 10 + D_MEM)),
    ("overhead-added", [c()], [], {"cpu": 50, "memory": 5}, (D_CPU + 50, D_MEM + 5)),
]


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "want"),
    [x[1:] for x in NONZERO_CASES],
    ids=[x[0] for x in NONZERO_CASES],
)
def test_compute_nonzero_requests(
    containers: list[Container],
    init: list[Container],
    overhead: dict[str, int],
    want: tuple[int, int],
) -> None:
    assert compute_nonzero_requests(containers, init, overhead) == want


def test_constants_match_upstream() -> None:
    assert DEFAULT_MILLI_CPU_REQUEST == 100
    assert DEFAULT_MEMORY_REQUEST == 200 * 1024 * 1024


def test_aggregate_is_exact_before_rounding() -> None:
    half = Fraction(1, 2)
    total = aggregate_requests([{"memory": half}, {"memory": half}], [], {})
    assert total == {"memory": 1}


def test_aggregate_does_not_mutate_inputs() -> None:
    sidecar = {"cpu": 100}
    regular = {"cpu": 1000}
    aggregate_requests(
        [regular], [(sidecar, True), ({"cpu": 5}, False)], {"cpu": 1}, non_missing={"memory": 7}
    )
    assert sidecar == {"cpu": 100} and regular == {"cpu": 1000}
