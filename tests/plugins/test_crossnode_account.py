"""``NodeTable.add_pods`` leaves a table exactly as ``add_pod`` one by one does: every numpy
column, the pods per row (and their order), the interners and the pod index."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.testing.builders import make_namespace, make_node, make_pod
from tests.nodetable.table_state import table_state


def _pods(rng: random.Random, n: int) -> list[Pod]:
    out = []
    for i in range(n):
        b = make_pod(f"x{i}").label("app", rng.choice(["a", "b"]))
        kind = rng.random()
        if kind < 0.2:
            b = b.req(cpu="0", memory="0")  # counted by the non-zero defaults only
        elif kind < 0.3:
            b = b.req({"cpu": "100m", "example.com/gpu": "1"})
        else:
            b = b.req(cpu=f"{rng.choice([100, 250])}m", memory=f"{rng.choice([64, 128])}Mi")
        if rng.random() < 0.15:
            b = b.host_port(rng.choice([80, 443]))
        out.append(b.obj())
    return out


@pytest.mark.parametrize("seed", range(12))
def test_add_pods_equals_add_pod(seed: int) -> None:
    rng = random.Random(seed)
    cache = Cache()
    nodes = [make_node(f"n{i}").capacity(cpu="8", memory="32Gi", pods=110).obj() for i in range(6)]
    existing = [
        make_pod(f"e{i}").req(cpu="200m").host_port(80).node(f"n{i % 6}").obj() for i in range(4)
    ]
    cache.load([make_namespace("default"), *nodes, *existing])
    table = cache.sink.table  # type: ignore[attr-defined]
    rows = np.arange(table.size, dtype=np.int64)
    one, bulk = table.subset(rows), table.subset(rows)
    if seed % 2:  # a built pod index must follow too
        one.pod_index.groups, bulk.pod_index.groups  # noqa: B018
    pods = _pods(rng, 30)
    at = [rng.randrange(table.size) for _ in pods]
    for r, p in zip(at, pods, strict=True):
        one.add_pod(r, p)
    bulk.add_pods(at, pods, 1)
    assert table_state(bulk) == table_state(one)
    gone = rng.sample(range(len(pods)), 12)
    for i in gone:
        one.add_pod(at[i], pods[i], -1)
    bulk.add_pods([at[i] for i in gone], [pods[i] for i in gone], -1)
    assert table_state(bulk) == table_state(one)
