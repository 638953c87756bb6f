"""DynamicResources' Score Skip is decided at PreScore, where the framework collects
every Skip (not marked in PreFilter, whose state the pre-cycle cache shares with an
empty Score Skip set and the shards receive): the Skip set is the same whether a pod's PreFilter state was shared or
computed, and only a prioritized-list claim keeps its Score."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cluster_sched.api.manifest import parse_object
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.plugins.names import DYNAMIC_RESOURCES
from cluster_sched.scheduler.pre_cycle import PreCycleReuse
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import make_node, make_pod
from tests.dra.dra_fixtures import claim, device, device_class, node, resource_slice

PRIORITIZED = {
    "name": "req-0",
    "firstAvailable": [
        {"name": "two", "deviceClassName": "class-a", "count": 2},
        {"name": "one", "deviceClassName": "class-a"},
    ],
}


def _cluster(*more: dict[str, Any]) -> Cache:
    cache = Cache()
    docs = [
        node("node-1"),
        node("node-2"),
        device_class(),
        resource_slice("s1", [device("a"), device("b")], node="node-1", pool="node-1"),
        resource_slice("s2", [device("c")], node="node-2", pool="node-2"),
        *more,
    ]
    cache.load([parse_object(d) for d in docs])
    return cache


def _pod(*claims: dict[str, str]) -> Any:
    doc = make_pod("pod").req(cpu="1").obj().raw
    spec = {**doc["spec"], "resourceClaims": list(claims)}
    return parse_object({**doc, "spec": spec, "metadata": {**doc["metadata"], "uid": "u"}})


def test_extension_points_stay_upstreams_the_skip_is_the_frameworks() -> None:
    """v1.35's plugin has Score and no PreScore; the framework's PreScore asks it."""
    cache = _cluster()
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    assert DYNAMIC_RESOURCES not in [pl.name for pl in fwk.pre_score]
    assert [pl.name for pl in fwk.zero_scores] == [DYNAMIC_RESOURCES]


@pytest.mark.parametrize(
    ("claims", "refs", "skipped"),
    [
        ((), (), True),
        ((claim(),), ({"name": "c", "resourceClaimName": "claim-0"},), True),
        (
            (claim("claim-0", PRIORITIZED),),
            ({"name": "c", "resourceClaimName": "claim-0"},),
            False,
        ),
    ],
    ids=["no-claims", "exactly", "prioritized-list"],
)
def test_score_skip_is_decided_at_prescore(
    claims: tuple[dict[str, Any], ...], refs: tuple[dict[str, str], ...], skipped: bool
) -> None:
    cache = _cluster(*claims)
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    pod = _pod(*refs)
    state = CycleState()
    _, s, _ = fwk.run_pre_filter(state, pod, cache.snapshot)
    assert s.is_success
    assert DYNAMIC_RESOURCES not in state.skip_score_plugins  # PreFilter leaves it
    table = cache.sink.table  # type: ignore[attr-defined]
    nodes = NodeSlice(table, np.arange(table.n_nodes, dtype=np.int64))
    fwk.run_filter(state, pod, nodes)
    assert fwk.run_pre_score(state, pod, cache.snapshot, nodes).is_success
    assert (DYNAMIC_RESOURCES in state.skip_score_plugins) is skipped
    if not skipped:
        # node-1 takes the first alternative (two devices), node-2 only the second
        scores = fwk.run_score(state, pod, nodes)[DYNAMIC_RESOURCES]
        assert dict(zip(nodes.names(), scores.tolist(), strict=True)) == {
            "node-1": 8,
            "node-2": 7,
        }


def test_skip_sets_are_the_same_whether_prefilter_state_was_shared_or_not() -> None:
    """A pre-cycle cache hit restores a PreFilter state with an empty Score Skip set (a
    shard receives that state): after PreFilter the set must be the same for the shape's
    first pod (computed) and the next ones (shared), and after PreScore too."""
    cache = Cache()
    cache.load(
        [make_node(f"n{i}").capacity(cpu="8", memory="16Gi", pods=20).obj() for i in range(4)]
    )
    fwk = new_framework(default_config().profiles[0], Handle(snapshot=cache.snapshot))
    reuse = PreCycleReuse()
    table = cache.sink.table  # type: ignore[attr-defined]
    nodes = NodeSlice(table, np.arange(table.n_nodes, dtype=np.int64))
    after_pre_filter, after_pre_score = [], []
    for i in range(3):
        pod = make_pod(f"web-{i}").req(cpu="1", memory="1Gi").label("app", "web").obj()
        state = CycleState()
        assert reuse.pre_filter(fwk, state, pod, cache.snapshot)[1].is_success
        after_pre_filter.append(frozenset(state.skip_score_plugins))
        assert reuse.pre_score(fwk, state, pod, cache.snapshot, nodes).is_success
        after_pre_score.append(frozenset(state.skip_score_plugins))
    assert reuse.counters() == {"pre_cycle_hits": 2, "pre_cycle_misses": 1}
    assert len(set(after_pre_filter)) == 1, after_pre_filter
    assert len(set(after_pre_score)) == 1 and DYNAMIC_RESOURCES in after_pre_score[0]
