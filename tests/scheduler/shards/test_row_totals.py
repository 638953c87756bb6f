"""The coordinator's rescoring of changed rows (``rescore.RowTotals``) packs the kernel's
call once per prepared shape: its totals are ``ShardKernels.run(normalize=False)``'s,
packed afresh per call, for any rows, as pods come and go on them (the table's columns
are read at each call, never the ones of the call that packed it)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.kernels import STATUS_OK
from cluster_sched.nodetable.images import normalized_image_name
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.rescore import RowTotals
from tests.scheduler.shards.shard_runs import reducible_workload

N_NODES = 60
IMAGE = "registry/app:v1"  # reducible_workload's


def _want(core: ShardCore, prepared: object, rows: np.ndarray) -> list[int] | None:
    ev, _ = core.kernels.run(prepared, core.table, rows, normalize=False)  # type: ignore[arg-type]
    if ev.status != STATUS_OK or len(ev.feasible_rows) != len(rows):
        return None
    return [int(v) for v in ev.totals]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_row_totals_are_the_kernels_totals_as_pods_come_and_go(seed: int) -> None:
    rng = random.Random(seed)
    docs = reducible_workload(seed, n_nodes=N_NODES, n_pods=30)
    nodes = [d for d in docs if d["kind"] == "Node"]
    pods = [d for d in docs if d["kind"] == "Pod"]
    core = ShardCore(0)
    core.apply([["node", n, i, i] for i, n in enumerate(nodes)])
    core.windows.set_order(np.arange(N_NODES, dtype=np.int64), 1)
    holding = sum(1 for n in nodes if n.get("status", {}).get("images"))
    core.set_snapshot(N_NODES, {normalized_image_name(IMAGE): (300 << 20, max(1, holding))})
    calls = []
    for doc in rng.sample(pods, 8):
        pod = parse_object(doc)
        assert isinstance(pod, Pod)
        fwk = core.frameworks[pod.scheduler_name]
        state = CycleState()
        fwk.run_pre_filter(state, pod, core.snapshot)
        every = NodeSlice(core.table, core.windows.rows)
        if not fwk.run_pre_score(state, pod, core.snapshot, every).is_success:
            continue
        prepared = core.kernels.prepare(fwk, state, pod, doc, None, core.table)
        if prepared is not None:
            calls.append((prepared, RowTotals(prepared)))
    checked = 0
    for step in range(4):
        for prepared, call in calls:
            for _ in range(5):
                k = rng.choice([2, 3, 4, 9])
                rows = np.array(rng.sample(range(N_NODES), k), dtype=np.int64)
                got = call(core.table, rows)
                want = _want(core, prepared, rows)
                assert (None if got is None else got.tolist()) == want, (step, rows)
                checked += want is not None
        # pods land on some nodes (their free amounts change in place) and leave others
        core.apply(
            [
                [
                    "pod+",
                    nodes[rng.randrange(N_NODES)]["metadata"]["name"],
                    {**p, "metadata": {**p["metadata"], "name": f"s{step}p{k}"}},
                ]
                for k, p in enumerate(rng.sample(pods, 10))
            ]
        )
    assert checked or not calls, "some rows were scored"
