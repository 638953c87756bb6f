"""The vectorised resource scorers against straightforward per-node reference code.

The references are transcriptions of upstream's Go (one node at a time, int64 integer
division truncating toward zero, float64 where Go uses it); hypothesis feeds both the
same matrices, including values large enough to leave float64's exact-integer range.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.config.plugin_args import ResourceSpec, UtilizationShapePoint
from cluster_sched.plugins.noderesources.scorers import (
    balanced_allocation,
    broken_linear,
    least_allocated,
    most_allocated,
    requested_to_capacity_ratio,
)


def go_div(a: int, b: int) -> int:
    """Go's int64 ``/``: truncates toward zero."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def ref_broken_linear(shape: list[tuple[int, int]], p: int) -> int:
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return shape[0][1]
            pu, ps = shape[i - 1]
            return ps + go_div((s - ps) * (p - pu), u - pu)
    return shape[-1][1]


def ref_rtcr(
    weights: list[int], shape: list[tuple[int, int]], requested: list[int], allocatable: list[int]
) -> int:
    node_score = weight_sum = 0
    for w, req, cap in zip(weights, requested, allocatable, strict=True):
        if cap == 0:
            continue
        s = ref_broken_linear(shape, 100 if req > cap else go_div(req * 100, cap))
        if s > 0:
            node_score += s * w
            weight_sum += w
    return 0 if weight_sum == 0 else math.floor(node_score / weight_sum + 0.5)  # math.Round, >= 0


def ref_least(weights: list[int], requested: list[int], allocatable: list[int]) -> int:
    node_score = weight_sum = 0
    for w, req, cap in zip(weights, requested, allocatable, strict=True):
        if cap == 0:
            continue
        node_score += (0 if req > cap else (cap - req) * 100 // cap) * w
        weight_sum += w
    return 0 if weight_sum == 0 else node_score // weight_sum


def ref_most(weights: list[int], requested: list[int], allocatable: list[int]) -> int:
    node_score = weight_sum = 0
    for w, req, cap in zip(weights, requested, allocatable, strict=True):
        if cap == 0:
            continue
        node_score += (min(req, cap) * 100 // cap) * w
        weight_sum += w
    return 0 if weight_sum == 0 else node_score // weight_sum


def ref_balanced(requested: list[int], allocatable: list[int]) -> int:
    fractions: list[float] = []
    total = 0.0
    for req, cap in zip(requested, allocatable, strict=True):
        if cap == 0:
            continue
        f = min(float(req) / float(cap), 1.0)
        total += f
        fractions.append(f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * 100.0)


# ---------------------------------------------------------------------- strategies


@st.composite
def shapes(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Strictly increasing utilisations in [0, 100], scores 0..10 (scaled x10 as
    upstream), in any direction: decreasing and zig-zag shapes included."""
    utils = sorted(draw(st.sets(st.integers(0, 100), min_size=1, max_size=5)))
    return [(u, 10 * draw(st.integers(0, 10))) for u in utils]


INT64_MAX = 2**63 - 1


def _extremes(max_value: int) -> list[int]:
    """Values where ``x * 100`` passes int64, when the matrices may hold them."""
    candidates = [INT64_MAX // 100 + 1, 2**62, INT64_MAX - 1, INT64_MAX]
    return [v for v in candidates if v <= max_value]


@st.composite
def resource_matrices(
    draw: st.DrawFn, max_value: int = 2**40
) -> tuple[list[int], np.ndarray, np.ndarray]:
    m = draw(st.integers(1, 4))
    k = draw(st.integers(1, 6))
    weights = draw(st.lists(st.integers(1, 10), min_size=m, max_size=m))
    value = st.one_of(
        st.integers(0, 16),
        st.integers(0, max_value),
        st.sampled_from([0, 1, 2**46 - 1, 2**46, 2**50 + 3, *_extremes(max_value)]),
    )
    alloc = np.asarray(
        draw(st.lists(st.lists(value, min_size=k, max_size=k), min_size=m, max_size=m)),
        dtype=np.int64,
    )
    req = np.asarray(
        draw(st.lists(st.lists(value, min_size=k, max_size=k), min_size=m, max_size=m)),
        dtype=np.int64,
    )
    return weights, alloc, req


def _per_node(fn, weights, alloc, req) -> list[int]:  # type: ignore[no-untyped-def]
    return [fn(weights, req[:, j].tolist(), alloc[:, j].tolist()) for j in range(alloc.shape[1])]


# ---------------------------------------------------------------------- broken linear / RTCR


@settings(max_examples=300, deadline=None)
@given(shapes(), st.lists(st.integers(0, 100), min_size=1, max_size=20))
def test_broken_linear_matches_go(shape: list[tuple[int, int]], points: list[int]) -> None:
    got = broken_linear(shape, np.asarray(points, dtype=np.int64)).tolist()
    assert got == [ref_broken_linear(shape, p) for p in points]


@pytest.mark.parametrize(
    ("shape", "p", "want"),
    [
        ([(0, 100), (100, 0)], 33, 67),
        ([(0, 100), (30, 0)], 1, 97),  # -100/30 = -3.33: Go truncates to -3 (floor would give 96)
        ([(0, 100), (30, 0)], 29, 4),  # 100 + (-2900/30 = -96.67 -> -96)
        ([(0, 0), (30, 100)], 1, 3),  # increasing: 100/30 -> 3
        ([(10, 50), (20, 10), (90, 70)], 5, 50),  # left of the first point: its score
        ([(10, 50), (20, 10), (90, 70)], 15, 30),
        ([(10, 50), (20, 10), (90, 70)], 95, 70),  # right of the last point: its score
        ([(50, 30)], 0, 30),
    ],
    ids=lambda v: str(v),
)
def test_broken_linear_cases(shape: list[tuple[int, int]], p: int, want: int) -> None:
    assert (
        broken_linear(shape, np.asarray([p], dtype=np.int64)).tolist()
        == [want]
        == [ref_broken_linear(shape, p)]
    )


@settings(max_examples=300, deadline=None)
@given(shapes(), resource_matrices(max_value=10**6))
def test_requested_to_capacity_ratio_matches_reference(
    shape: list[tuple[int, int]], matrices: tuple[list[int], np.ndarray, np.ndarray]
) -> None:
    weights, alloc, req = matrices
    specs = [ResourceSpec(f"r{i}", w) for i, w in enumerate(weights)]
    points = tuple(UtilizationShapePoint(u, s // 10) for u, s in shape)
    got = requested_to_capacity_ratio(specs, points)(alloc, req).tolist()
    assert got == _per_node(lambda w, r, a: ref_rtcr(w, shape, r, a), weights, alloc, req)


def test_requested_to_capacity_ratio_rounds_half_up() -> None:
    """math.Round((100*1 + 50*1) / 2 = 75) and (100 + 45)/2 = 72.5 -> 73."""
    specs = [ResourceSpec("a", 1), ResourceSpec("b", 1)]
    scorer = requested_to_capacity_ratio(
        specs, (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10))
    )
    alloc = np.asarray([[100, 100], [100, 200]], dtype=np.int64)
    req = np.asarray([[100, 100], [50, 90]], dtype=np.int64)
    assert scorer(alloc, req).tolist() == [75, 73]


# ---------------------------------------------------------------------- Least / Most allocated


@settings(max_examples=300, deadline=None)
@given(resource_matrices())
def test_least_allocated_matches_reference(
    matrices: tuple[list[int], np.ndarray, np.ndarray],
) -> None:
    weights, alloc, req = matrices
    specs = [ResourceSpec(f"r{i}", w) for i, w in enumerate(weights)]
    assert least_allocated(specs)(alloc, req).tolist() == _per_node(ref_least, weights, alloc, req)


@settings(max_examples=300, deadline=None)
@given(resource_matrices())
def test_most_allocated_matches_reference(
    matrices: tuple[list[int], np.ndarray, np.ndarray],
) -> None:
    weights, alloc, req = matrices
    specs = [ResourceSpec(f"r{i}", w) for i, w in enumerate(weights)]
    assert most_allocated(specs)(alloc, req).tolist() == _per_node(ref_most, weights, alloc, req)


@settings(max_examples=300, deadline=None)
@given(resource_matrices(max_value=INT64_MAX), shapes())
def test_scorers_are_exact_up_to_int64(
    matrices: tuple[list[int], np.ndarray, np.ndarray], shape: list[tuple[int, int]]
) -> None:
    """Every quantity the parser admits fits int64, and so does a node's saturated
    usage: where upstream's ``x * 100`` would wrap, the scorers still give the exact
    result (upstream's own wherever it does not wrap), never a negative score."""
    weights, alloc, req = matrices
    specs = [ResourceSpec(f"r{i}", w) for i, w in enumerate(weights)]
    points = tuple(UtilizationShapePoint(u, s // 10) for u, s in shape)
    assert least_allocated(specs)(alloc, req).tolist() == _per_node(ref_least, weights, alloc, req)
    assert most_allocated(specs)(alloc, req).tolist() == _per_node(ref_most, weights, alloc, req)
    got = requested_to_capacity_ratio(specs, points)(alloc, req).tolist()
    assert got == _per_node(lambda w, r, a: ref_rtcr(w, shape, r, a), weights, alloc, req)


# ---------------------------------------------------------------------- BalancedAllocation


@settings(max_examples=400, deadline=None)
@given(resource_matrices())
def test_balanced_allocation_matches_float_reference(
    matrices: tuple[list[int], np.ndarray, np.ndarray],
) -> None:
    _, alloc, req = matrices
    got = balanced_allocation(alloc, req).tolist()
    want = [ref_balanced(req[:, j].tolist(), alloc[:, j].tolist()) for j in range(alloc.shape[1])]
    assert got == want


@pytest.mark.parametrize(
    ("req", "alloc", "want"),
    [
        # cpu, memory, gpu fractions 0.5, 0.25, 1.0: mean 7/12, std = 0.3118 -> 68
        ([2000, 2, 4], [4000, 8, 4], 68),
        # a resource the node lacks is left out: two fractions 0.5, 0.25 -> std 0.125 -> 87
        ([2000, 2, 1], [4000, 8, 0], 87),
        # over-requested fractions are capped at 1
        ([8000, 16, 4], [4000, 8, 4], 100),
        # one fraction only: std 0
        ([1000, 0, 0], [4000, 0, 0], 100),
        # equal fractions: perfectly balanced
        ([1000, 2, 1], [4000, 8, 4], 100),
    ],
    ids=["three-resources", "missing-resource", "capped", "single", "equal"],
)
def test_balanced_allocation_three_resources(req: list[int], alloc: list[int], want: int) -> None:
    got = balanced_allocation(
        np.asarray([alloc], dtype=np.int64).T, np.asarray([req], dtype=np.int64).T
    )
    assert got.tolist() == [want] == [ref_balanced(req, alloc)]
