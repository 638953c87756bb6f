"""The shard's one-call window reduction (``window``) answers as the fused kernel's
evaluation it replaces (``window_reduce_reference``): outcome, best total, tie bits and
maxima, on windows of every size (one row, wrapping the order's end, rows that fail),
also from the rows' remembered scores after pod deltas changed some rows."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.nodetable.images import normalized_image_name
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.window import (
    WINDOW_OK,
    window_call,
    window_reduce_reference,
)
from tests.scheduler.shards.shard_runs import reducible_workload

N_NODES = 90
IMAGE = "registry/app:v1"  # reducible_workload's


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_window_call_answers_as_the_fused_evaluation(seed: int) -> None:
    rng = random.Random(seed)
    docs = reducible_workload(seed, n_nodes=N_NODES, n_pods=30)
    nodes = [d for d in docs if d["kind"] == "Node"]
    pods = [d for d in docs if d["kind"] == "Pod"]
    core = ShardCore(0)
    # every other node, in shuffled rows: the order's positions are not the rows
    mine = [i for i in range(N_NODES) if i % 2 == 0]
    rows = rng.sample(range(len(mine)), len(mine))
    core.apply([["node", nodes[i], r, i] for i, r in zip(mine, rows, strict=True)])
    # some nodes fuller than others (totals differ, some rows fail the big pods)
    core.apply(
        [
            [
                "pod+",
                nodes[rng.choice(mine)]["metadata"]["name"],
                {**p, "metadata": {**p["metadata"], "name": f"x{k}"}},
            ]
            for k, p in enumerate(rng.sample(pods, 12))
        ]
    )
    core.windows.set_order(np.arange(N_NODES, dtype=np.int64), 1)
    holding = sum(1 for i in mine if nodes[i].get("status", {}).get("images"))
    core.set_snapshot(N_NODES, {normalized_image_name(IMAGE): (300 << 20, max(1, holding))})
    view = core.ordered
    view.sync(core.table, core.windows.rows, core.windows.version)
    checked = _check_pods(core, pods, rng)
    # pods come and go: the remembered row scores follow the rows the deltas touched
    extra = [
        [
            "pod+",
            nodes[rng.choice(mine)]["metadata"]["name"],
            {**p, "metadata": {**p["metadata"], "name": f"y{k}"}},
        ]
        for k, p in enumerate(rng.sample(pods, 10))
    ]
    core.apply(extra)
    core.apply([["pod-", d[1], f"default/x{k}"] for k, d in enumerate(extra[:4])])
    core.apply([["pod-", d[1], f"default/{d[2]['metadata']['name']}"] for d in extra[4:7]])
    view.sync(core.table, core.windows.rows, core.windows.version)
    checked += _check_pods(core, pods, rng)
    assert checked, "some window was answered"


def _check_pods(core: ShardCore, pods: list[dict[str, object]], rng: random.Random) -> int:
    view = core.ordered
    checked = 0
    for doc in pods:
        pod = parse_object(doc)
        assert isinstance(pod, Pod)
        fwk = core.frameworks[pod.scheduler_name]
        state = CycleState()
        fwk.run_pre_filter(state, pod, core.snapshot)
        every = NodeSlice(core.table, core.windows.rows)
        if not fwk.run_pre_score(state, pod, core.snapshot, every).is_success:
            continue
        prepared = core.kernels.prepare(fwk, state, pod, doc, None, core.table)
        if prepared is None:
            continue
        call = window_call(view, prepared)
        for _ in range(6):
            start = rng.randrange(N_NODES)
            width = rng.choice([1, 2, 3, 9, 40, N_NODES])
            positions = core.windows.span(start, width)
            if not len(positions):
                continue
            outcome, best, bits = call(positions)
            want = window_reduce_reference(prepared, view, positions)
            assert outcome == want[0], (start, width)
            if outcome != WINDOW_OK:
                continue
            checked += 1
            assert best == want[1]
            assert bits.tolist() == want[2].tolist()
            # maxima: each normalised plugin's raw column over the window's shard rows
            rows = core.windows.rows[positions]
            _, columns = core.kernels.run(prepared, core.table, np.repeat(rows, 2))
            assert call.maxima(positions) == {n: int(c[rows].max()) for n, c in columns.items()}
    return checked
