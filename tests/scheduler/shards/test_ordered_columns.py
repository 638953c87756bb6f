"""The shard's copy of the kernel columns in the replica's order (``ordered``) holds what
the table holds, row for row, through pod deltas, node updates and order changes; and the
kernel over it answers as over the table's shuffled rows."""

from __future__ import annotations

import random

import numpy as np

from cluster_sched.api.objects import CPU, MEMORY, PODS, Node, ObjectMeta
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.ordered import OrderedColumns
from cluster_sched.testing.builders import make_pod

COLUMNS = ("allocatable", "requested", "free", "nonzero", "pod_count", "allowed_pods")


def _node(i: int, cpu: int = 4000) -> Node:
    alloc = {CPU: cpu, MEMORY: 32 << 30, PODS: 110}
    return Node(ObjectMeta(f"n{i}"), allocatable=alloc, capacity=alloc)


def _shuffled_core(n: int, rng: random.Random) -> tuple[ShardCore, np.ndarray]:
    """A shard whose rows, in the order, are a shuffle of its row numbers."""
    core = ShardCore(0)
    core.apply([["node", _node(i), i, i] for i in range(n)])
    order = np.array(rng.sample(range(n), n), dtype=np.int64)
    core.windows.set_order(order, 7)
    return core, order


def _assert_same(view: OrderedColumns, core: ShardCore) -> None:
    for name in COLUMNS:
        want = getattr(core.table, name)[..., core.windows.rows]
        assert np.array_equal(getattr(view, name), want), name


def test_copy_follows_pod_deltas_node_updates_and_order() -> None:
    rng = random.Random(3)
    core, _ = _shuffled_core(40, rng)
    view = core.ordered
    view.sync(core.table, core.windows.rows, core.windows.version)
    _assert_same(view, core)
    # pods: only the rows they touched are copied again
    pods = [make_pod(f"p{i}").req(cpu="300m", memory="1Gi").obj() for i in range(12)]
    core.apply([["pod+", f"n{rng.randrange(40)}", p] for p in pods])
    view.sync(core.table, core.windows.rows, core.windows.version)
    _assert_same(view, core)
    core.apply([["pod-", core._pods[p.key].node_name, p.key] for p in pods[:5]])
    view.sync(core.table, core.windows.rows, core.windows.version)
    _assert_same(view, core)
    # a node updated in place (the order unchanged): a new node-table state
    core.apply([["node", _node(5, cpu=1000), 5, 5]])
    view.sync(core.table, core.windows.rows, core.windows.version)
    _assert_same(view, core)
    assert int(view.allocatable[0, int(view.position[5])]) == 1000
    # a new order
    core.windows.set_order(np.arange(40, dtype=np.int64)[::-1].copy(), 8)
    view.sync(core.table, core.windows.rows, core.windows.version)
    _assert_same(view, core)


def test_kernel_over_the_copy_answers_as_over_the_table() -> None:
    rng = random.Random(5)
    core, _ = _shuffled_core(64, rng)
    core.apply(
        [
            ["pod+", f"n{rng.randrange(64)}", make_pod(f"q{i}").req(cpu="900m").obj()]
            for i in range(40)
        ]
    )
    view = core.ordered
    view.sync(core.table, core.windows.rows, core.windows.version)
    fwk = core.frameworks[default_config().profiles[0].scheduler_name]
    pod = make_pod("x").req(cpu="200m", memory="1Gi").obj()
    state = CycleState()
    fwk.run_pre_filter(state, pod, core.snapshot)
    for start, width in ((0, 64), (10, 30), (50, 30)):  # the last one wraps
        rows, _ = core.windows.window(start, width)
        assert fwk.run_pre_score(state, pod, core.snapshot, NodeSlice(core.table, rows)).is_success
        prepared = core.kernels.prepare(fwk, state, pod, pod.raw, None, core.table)
        assert prepared is not None
        want, _ = core.kernels.run(prepared, core.table, rows)
        got, _ = core.kernels.run_ordered(prepared, view, core.windows.span(start, width))
        assert len(got.feasible_rows) == len(want.feasible_rows) == len(rows)
        assert np.array_equal(got.totals, want.totals)
        assert (got.best, got.status) == (want.best, want.status)
        assert np.array_equal(got.ties, want.ties)
        assert np.array_equal(view.rows[got.feasible_rows], want.feasible_rows)
