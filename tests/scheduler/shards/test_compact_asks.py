"""A shard answers a compact ask (a pod whose shape an earlier ask of the chunk carried in
full: only its window travels) exactly as it answers that pod's full ask (``reduce``)."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.state_codec import encode_state, encode_value
from cluster_sched.scheduler.shards.core import ShardCore
from cluster_sched.scheduler.shards.reduce import PodReduction, reduce_payload
from tests.scheduler.shards.shard_runs import reducible_workload

N_NODES = 120


def _core(docs: list[dict[str, Any]]) -> ShardCore:
    """A shard holding every other node of ``docs`` (replica row = position in order)."""
    core = ShardCore(0)
    nodes = [d for d in docs if d["kind"] == "Node"]
    core.apply([["node", d, i // 2, i] for i, d in enumerate(nodes) if i % 2 == 0])
    return core


def _full(core: ShardCore, doc: dict[str, Any], start: int, width: int) -> dict[str, Any]:
    pod = parse_object(doc)
    assert isinstance(pod, Pod)
    fwk = core.frameworks[pod.scheduler_name]
    state = CycleState()
    fwk.run_pre_filter(state, pod, core.snapshot)
    return {
        "profile": pod.scheduler_name,
        "pod": doc,
        "state": encode_state(state),
        "facts": [-1, {}],
        "start": start,
        "width": width,
    }


def _answers(core: ShardCore, asks: list[dict[str, Any]], order: bool) -> list[PodReduction]:
    doc: dict[str, Any] = {"order_version": 1, "n": N_NODES, "asks": asks}
    if order:
        doc["order"] = np.arange(N_NODES, dtype=np.int64).tobytes()
    return reduce_payload(core, core.windows, encode_value(doc))[1]


def _same(a: PodReduction, b: PodReduction) -> bool:
    ma, mb = a.mask(), b.mask()  # a bool per row, whether sent packed or not
    ties = (ma is None and mb is None) or (
        ma is not None and mb is not None and ma.tolist() == mb.tolist()
    )
    return (a.status, a.best, a.maxima, a.skipped) == (
        b.status,
        b.best,
        b.maxima,
        b.skipped,
    ) and ties


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_compact_asks_are_answered_as_full_asks(seed: int) -> None:
    docs = reducible_workload(seed, n_nodes=N_NODES, n_pods=40)
    core = _core(docs)
    rng = random.Random(seed)
    pods = [d for d in docs if d["kind"] == "Pod"]
    windows = [(rng.randrange(N_NODES), rng.choice([1, 2, 3, 7, 60, N_NODES])) for _ in pods]
    full = [_full(core, d, s, w) for d, (s, w) in zip(pods, windows, strict=True)]
    expect = _answers(core, full, order=True)
    first: dict[str, int] = {}
    compact = []
    for i, (d, (s, w)) in enumerate(zip(pods, windows, strict=True)):
        key = json.dumps(d["spec"], sort_keys=True)
        if key in first:
            compact.append({"shape": first[key], "start": s, "width": w})
        else:
            first[key] = i
            compact.append({**full[i], "shape": i})
    assert len(first) < len(pods), "some pods share a shape"
    got = _answers(core, compact, order=False)
    assert len(got) == len(expect)
    for i, (a, b) in enumerate(zip(got, expect, strict=True)):
        assert _same(a, b), (i, compact[i], a, b)


def test_a_shape_remembered_by_the_shard_includes_the_pods_overhead() -> None:
    """Two pods with the same containers but different ``spec.overhead`` (a
    RuntimeClass's) request different amounts: the shard's shape cache must not answer
    the second with the first one's requests."""
    docs = reducible_workload(3, n_nodes=N_NODES, n_pods=1)
    nodes = [d for d in docs if d["kind"] == "Node"]
    for node in nodes:
        node["status"] = {"capacity": {"cpu": "2", "memory": "16Gi", "pods": 30}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }
    heavy = json.loads(json.dumps(pod))
    heavy["metadata"]["name"] = "heavy"
    heavy["spec"]["overhead"] = {"cpu": "3"}

    warm = _core(nodes)
    plain_first = _answers(warm, [_full(warm, pod, 0, N_NODES)], order=True)
    heavy_after = _answers(warm, [_full(warm, heavy, 0, N_NODES)], order=False)
    fresh = _core(nodes)
    heavy_alone = _answers(fresh, [_full(fresh, heavy, 0, N_NODES)], order=True)
    assert plain_first[0].best >= 0  # 1 cpu fits a 2-cpu node
    assert _same(heavy_after[0], heavy_alone[0]), (heavy_after[0], heavy_alone[0])
    assert heavy_alone[0].status != plain_first[0].status  # 4 cpu fits nowhere
