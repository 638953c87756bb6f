"""Hypothesis strategies for the kernel tests: random tables (allocatable / requested /
non-zero / pod columns from zero to int64's limit), profiles (all three strategies,
random resources and weights, ignored resources), real pods and the other plugins'
columns."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cluster_sched.api.objects import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.config.plugin_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from cluster_sched.kernels import (
    VALUE_LIMIT,
    Evaluation,
    KernelProfile,
    NormalizedScore,
    PodQuery,
    PodRequests,
)
from cluster_sched.kernels.run import PodVector
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.noderesources.balanced_allocation import BalancedAllocation
from cluster_sched.plugins.noderesources.fit import Fit
from cluster_sched.testing.builders import make_pod

GPU = "example.com/gpu"
FPGA = "vendor.io/fpga"
HUGE = "hugepages-2Mi"
#: never a column of any table: Fit fails every node, scorers skip it
UNKNOWN = "example.com/unknown"
TABLE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, GPU, FPGA, HUGE)
SCORE_RESOURCES = (*TABLE_RESOURCES, PODS, UNKNOWN)
INT64_MAX = 2**63 - 1
#: hypothesis examples per equivalence test (CLUSTER_SCHED_KERNEL_EXAMPLES raises it for
#: a long run; the suite's default keeps CI inside its budget)
EXAMPLES = int(os.environ.get("CLUSTER_SCHED_KERNEL_EXAMPLES", "150"))
#: the kernel's domain: the compiled path declines at or above it (numpy runs instead)
TOP = VALUE_LIMIT - 1


def weighted(*choices: tuple[int, st.SearchStrategy[int]]) -> st.SearchStrategy[int]:
    """One of ``choices``, each as often as its weight."""
    pool = [s for w, s in choices for _ in range(w)]
    return st.integers(0, len(pool) - 1).flatmap(lambda i: pool[i])


#: float64-exactness edges of the scorers and the top of the kernel's domain
EDGES = st.sampled_from([0, 1, 2**46 - 1, 2**46, 2**53 + 1, TOP])
#: anything in the kernel's domain (VALUE_LIMIT: the compiled path's contract)
values = st.one_of(
    st.integers(0, 16), st.integers(0, 10**7), st.integers(0, 2**40), EDGES,
    st.integers(0, TOP),
)  # fmt: skip
#: mostly node-sized (pods fit), sometimes tiny, empty or near the limit
capacities = weighted(
    (6, st.integers(10**4, 10**12)), (1, st.integers(0, 16)), (1, EDGES),
    (1, st.integers(0, TOP)),
)  # fmt: skip
#: mostly pod-sized, sometimes absent (0) or huge
amounts = weighted(
    (3, st.just(0)), (5, st.integers(1, 10**4)), (1, EDGES), (1, st.integers(0, TOP))
)


@st.composite
def tables(draw: st.DrawFn, max_nodes: int = 30) -> NodeTable:
    """A table with free rows (removed nodes), 1-3 zones (so ``order()`` interleaves) and
    every accounting column overwritten with random values; ``free`` kept as
    allocatable - requested, int64 wrap-around included, as add_pod keeps it."""
    n = draw(st.integers(1, max_nodes))
    table = NodeTable(capacity=draw(st.integers(1, n)))
    for name in TABLE_RESOURCES:
        table.resource_col(name)
    zones = draw(st.integers(1, 3))
    for i in range(n):
        zone = {"topology.kubernetes.io/zone": f"z{draw(st.integers(0, zones - 1))}"}
        table.upsert_node(Node(ObjectMeta(f"n{i}", labels=zone)))
    gone = draw(st.sets(st.integers(0, n - 1), max_size=n - 1))
    for i in sorted(gone):
        table.remove_node(f"n{i}")
    r, cap = table.allocatable.shape
    table.allocatable[:] = draw(hnp.arrays(np.int64, (r, cap), elements=capacities))
    # mostly a share of allocatable (so pods fit), else anything
    share = draw(hnp.arrays(np.int64, (r, cap), elements=st.integers(0, 100)))
    wild = draw(hnp.arrays(np.bool_, (r, cap), elements=st.integers(0, 4).map(lambda x: x == 0)))
    anything = draw(hnp.arrays(np.int64, (r, cap), elements=values))
    table.requested[:] = np.where(wild, anything, table.allocatable // 100 * share)
    table.free[:] = table.allocatable - table.requested
    table.nonzero[:] = draw(hnp.arrays(np.int64, (2, cap), elements=values))
    table.pod_count[:] = draw(hnp.arrays(np.int64, cap, elements=st.integers(0, 20)))
    pods = weighted((6, st.just(110)), (2, st.integers(0, 20)), (1, st.just(TOP)))
    table.allowed_pods[:] = draw(hnp.arrays(np.int64, cap, elements=pods))
    return table


@st.composite
def wide_tables(draw: st.DrawFn) -> NodeTable:
    """A table wider than the filter's blocks (kernels.fused._BLOCK = 256 positions):
    nodes listed as added (one zone: one run of rows) or zones in runs (so ``order()``
    interleaves and no block is one run), a few removed rows (breaking runs), and a
    drawn share of nodes that fail the fit (none, a few, half) so windows stop inside,
    at the end of and across blocks. Values from a seeded generator: node-sized."""
    n = draw(st.integers(200, 1100))
    zones = draw(st.sampled_from([1, 1, 2, 3]))
    run = draw(st.integers(1, n))
    table = NodeTable(capacity=draw(st.integers(1, n)))
    for name in TABLE_RESOURCES:
        table.resource_col(name)
    for i in range(n):
        zone = {"topology.kubernetes.io/zone": f"z{(i // run) % zones}"}
        table.upsert_node(Node(ObjectMeta(f"n{i}", labels=zone)))
    for i in draw(st.one_of(st.just(set()), st.sets(st.integers(0, n - 1), max_size=3))):
        table.remove_node(f"n{i}")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    r, cap = table.allocatable.shape
    table.allocatable[:] = rng.integers(10**4, 10**12, size=(r, cap))
    table.requested[:] = table.allocatable // 100 * rng.integers(0, 60, size=(r, cap))
    full = rng.random(cap) < draw(st.sampled_from([0.0, 0.0, 0.002, 0.02, 0.5]))
    table.requested[:, full] = table.allocatable[:, full]
    table.free[:] = table.allocatable - table.requested
    table.nonzero[:] = table.requested[:2]
    table.pod_count[:] = rng.integers(0, 20, size=cap)
    table.allowed_pods[:] = 110
    return table


def _specs(draw: st.DrawFn, with_weights: bool) -> tuple[ResourceSpec, ...]:
    if draw(st.booleans()):  # the default cpu + memory: the scorers' fast paths
        chosen = [CPU, MEMORY]
    else:
        chosen = draw(
            st.lists(st.sampled_from(SCORE_RESOURCES), min_size=1, max_size=4, unique=True)
        )
    return tuple(
        ResourceSpec(name, draw(st.integers(1, 100)) if with_weights else 1) for name in chosen
    )


@st.composite
def profiles(draw: st.DrawFn) -> KernelProfile:
    kind = draw(st.sampled_from([LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO]))
    rtcr = None
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        utils = sorted(draw(st.sets(st.integers(0, 100), min_size=1, max_size=5)))
        rtcr = RequestedToCapacityRatioParam(
            tuple(UtilizationShapePoint(u, draw(st.integers(0, 10))) for u in utils)
        )
    args = NodeResourcesFitArgs(
        ignored_resources=tuple(draw(st.sets(st.sampled_from([GPU, FPGA, HUGE])))),
        ignored_resource_groups=tuple(draw(st.sets(st.sampled_from(["vendor.io", "example"])))),
        scoring_strategy=ScoringStrategy(kind, _specs(draw, with_weights=True), rtcr),
    )
    balanced = None
    if draw(st.integers(0, 3)):
        balanced = BalancedAllocation(NodeResourcesBalancedAllocationArgs(_specs(draw, False)))
    score_weight = weighted((1, st.just(0)), (3, st.integers(1, 3)))
    return KernelProfile(Fit(args), balanced, draw(score_weight), draw(score_weight))


@st.composite
def requests(draw: st.DrawFn, profile: KernelProfile) -> PodRequests:
    """A real pod's requests, through the plugins' own PreFilter/PreScore."""
    reqs: dict[str, str] = {}
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE, GPU, FPGA, HUGE, UNKNOWN):
        # an unknown resource fails every node: rarely, or little else would be feasible
        if draw(st.integers(0, 9)) < {CPU: 2, MEMORY: 2, UNKNOWN: 9}.get(name, 5):
            continue
        v = draw(amounts)
        reqs[name] = f"{v}m" if name == CPU else str(v)
    return PodRequests.of_pod(make_pod("p").req(reqs).obj(), profile)


def _column(draw: st.DrawFn, cap: int, elements: st.SearchStrategy[int]) -> np.ndarray:
    return draw(hnp.arrays(np.int64, cap, elements=elements))


@st.composite
def queries(draw: st.DrawFn, table: NodeTable, profile: KernelProfile) -> PodQuery:
    cap = table.allocatable.shape[1]
    passes = st.integers(0, 4).map(bool)
    masks = tuple(
        draw(hnp.arrays(np.bool_, cap, elements=passes)) for _ in range(draw(st.integers(0, 2)))
    )
    raws = st.one_of(st.integers(0, 10), st.integers(0, 2**20), values)
    normalized = tuple(
        NormalizedScore(_column(draw, cap, raws), draw(st.booleans()), draw(st.integers(1, 3)))
        for _ in range(draw(st.integers(0, 2)))
    )
    extra = _column(draw, cap, st.integers(0, 300)) if draw(st.booleans()) else None
    return PodQuery(draw(requests(profile)), draw(st.integers(0, 10**6)), masks, normalized, extra)


@st.composite
def orders(draw: st.DrawFn, table: NodeTable) -> np.ndarray | None:
    """None (the whole table in nodeTree order) or a PreFilter-narrowed subset of it."""
    if draw(st.booleans()):
        return None
    full = table.order()
    keep = draw(hnp.arrays(np.bool_, len(full)))
    return full[keep]


def assert_same(got: Evaluation, want: Evaluation) -> None:
    assert got.feasible_rows.tolist() == want.feasible_rows.tolist()
    assert got.evaluated == want.evaluated
    assert got.totals.tolist() == want.totals.tolist()
    assert got.best == want.best
    assert got.ties.tolist() == want.ties.tolist()
    assert got.status == want.status


@st.composite
def pod_vectors(draw: st.DrawFn, table: NodeTable) -> PodVector:
    """What assuming one pod of a run adds (``kernels.run.PodVector``): random amounts on
    a random subset of the table's columns, and non-zero cpu/memory."""
    r = table.allocatable.shape[0]
    cols = draw(st.lists(st.integers(0, r - 1), unique=True, max_size=r))
    amount = st.integers(0, 10**9)
    return PodVector(
        np.asarray(cols, dtype=np.int64),
        np.asarray([draw(amount) for _ in cols], dtype=np.int64),
        draw(amount),
        draw(amount),
    )
