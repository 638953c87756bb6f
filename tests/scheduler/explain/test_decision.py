"""``explain``: one dry-run scheduling attempt and its JSON document."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config, parse_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import ConfigError
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.testing.builders import make_node, make_pod

BASE_KEYS = {
    "selectedNode",
    "feasibleNodes",
    "evaluatedNodes",
    "filter",
    "rawScores",
    "scores",
    "finalScores",
    "message",
    "weights",
    "weightedScores",
    "passedPlugins",
    "pluginResults",
}


def _config(plugins: dict[str, Any] | None = None) -> SchedulerConfiguration:
    if plugins is None:
        return default_config()
    return parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}],
        }
    )


NO_POSTFILTER = {"postFilter": {"disabled": [{"name": "*"}]}}


def _cache(*objects: Any) -> Cache:
    cache = Cache()
    cache.load(
        [
            make_node("big").capacity(cpu="8", memory="16Gi", pods=10).obj(),
            make_node("small").capacity(cpu="2", memory="4Gi", pods=10).obj(),
            make_node("tainted")
            .capacity(cpu="8", memory="16Gi", pods=10)
            .taint("gpu", "yes")
            .obj(),
            *objects,
        ]
    )
    return cache


def test_success_document() -> None:
    out = explain(
        _cache(), make_pod("web").req(cpu="1", memory="1Gi").obj(), _config(), seed=3
    ).json
    assert set(out) == BASE_KEYS
    assert out["selectedNode"] == "big"  # LeastAllocated + BalancedAllocation prefer the big node
    assert out["feasibleNodes"] == 2 and out["evaluatedNodes"] == 3
    assert out["message"] is None
    assert out["filter"]["tainted"] == {
        "code": "UnschedulableAndUnresolvable",
        "plugin": "TaintToleration",
        "reasons": ["node(s) had untolerated taint(s)"],
    }
    assert out["filter"]["big"] == out["filter"]["small"] == {"code": "Success"}
    assert (
        set(out["finalScores"]) == set(out["scores"]) == set(out["rawScores"]) == {"big", "small"}
    )
    weights = {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
    }
    for node, scores in out["scores"].items():
        assert out["finalScores"][node] == sum(weights.get(p, 1) * s for p, s in scores.items())
        assert all(0 <= s <= 100 for s in scores.values())


def test_fit_error_without_postfilter_has_no_preemption_key() -> None:
    pod = make_pod("huge").req(cpu="64").obj()
    out = explain(_cache(), pod, _config(NO_POSTFILTER)).json
    assert set(out) == BASE_KEYS
    assert out["selectedNode"] is None and out["feasibleNodes"] == 0 and out["evaluatedNodes"] == 3
    assert out["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    assert out["rawScores"] == out["scores"] == out["finalScores"] == {}


def test_fit_error_with_postfilter_reports_preemption() -> None:
    busy = make_pod("busy").req(cpu="6").node("big").phase("Running").obj()
    pod = make_pod("wide").req(cpu="3").obj()  # > small's allocatable; big is full
    out = explain(_cache(busy), pod, _config()).json
    assert set(out) == BASE_KEYS | {"preemption"}
    assert out["preemption"] == {"nominatedNode": None, "victims": []}
    assert out["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


def test_preemption_is_a_dry_run() -> None:
    victim = make_pod("victim").req(cpu="2").priority(0).node("small").phase("Running").obj()
    cache = Cache()
    cache.load([make_node("small").capacity(cpu="2", memory="4Gi", pods=10).obj(), victim])
    pod = make_pod("vip").req(cpu="2").priority(1000).obj()
    result = explain(cache, pod, _config())
    out = result.json
    assert out["preemption"] == {"nominatedNode": "small", "victims": ["default/victim"]}
    # a successful preemption adds no PostFilter text to the FitError message
    assert out["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert cache.get_pod("default/victim") is victim
    assert cache.sink.table.requested[0, 0] == 2000  # type: ignore[attr-defined]


def test_prefilter_rejection_message() -> None:
    pod = make_pod("pinned").node_affinity_required(
        fields=[
            {"key": "metadata.name", "operator": "In", "values": ["big"]},
            {"key": "metadata.name", "operator": "In", "values": ["small"]},
        ]
    )
    out = explain(_cache(), pod.obj(), _config(NO_POSTFILTER)).json
    assert out["evaluatedNodes"] == 0
    # upstream sets PreFilter's rejection as the status of every (absent) node
    want = {
        "code": "UnschedulableAndUnresolvable",
        "plugin": "NodeAffinity",
        "reasons": ["pod affinity terms conflict"],
    }
    assert out["filter"] == {"big": want, "small": want, "tainted": want}
    assert out["message"] == "0/3 nodes are available: pod affinity terms conflict."


def test_gated_pod_stops_at_pre_enqueue() -> None:
    out = explain(_cache(), make_pod("gated").scheduling_gates("a", "b").obj(), _config()).json
    assert set(out) == BASE_KEYS
    assert out["selectedNode"] is None and out["evaluatedNodes"] == 0
    assert out["message"] == "waiting for scheduling gates: [a b]"


def test_empty_cluster() -> None:
    out = explain(Cache(), make_pod("p").obj(), _config()).json
    assert out["message"] == "no nodes available to schedule pods"
    assert "preemption" not in out  # upstream runs no PostFilter without nodes


def test_unknown_scheduler_name() -> None:
    with pytest.raises(ConfigError, match=r'pod default/p: spec.schedulerName "other"'):
        explain(_cache(), make_pod("p").scheduler_name("other").obj(), _config())


def test_seed_makes_ties_reproducible() -> None:
    cache = Cache()
    cache.load(
        [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10).obj() for i in range(8)]
    )
    pod = make_pod("p").req(cpu="1").obj()
    picks = {
        seed: explain(cache, pod, _config(), seed=seed).json["selectedNode"] for seed in range(12)
    }
    for seed, node in picks.items():
        assert explain(cache, pod, _config(), seed=seed).json["selectedNode"] == node
    assert len(set(picks.values())) > 1


def _pinned(name: str, cpu: str = "1") -> Any:
    """A pod pinned to ``name`` by ``matchFields`` (NodeAffinity's PreFilter result)."""
    field = {"key": "metadata.name", "operator": "In", "values": [name]}
    return make_pod("pinned").req(cpu=cpu, memory="1Gi").node_affinity_required(fields=[field])


ABSENT = {
    "code": "UnschedulableAndUnresolvable",
    "plugin": "",
    "reasons": ["node(s) didn't satisfy plugin(s) [NodeAffinity]"],
}


def test_nodes_excluded_by_prefilter_result_have_the_absent_status() -> None:
    out = explain(_cache(), _pinned("big").obj(), _config(), seed=3).json
    assert out["selectedNode"] == "big"
    assert out["evaluatedNodes"] == 1
    assert out["filter"] == {"big": {"code": "Success"}, "small": ABSENT, "tainted": ABSENT}


def test_nodes_excluded_by_prefilter_result_in_a_fit_error() -> None:
    out = explain(_cache(), _pinned("small", cpu="4").obj(), _config(NO_POSTFILTER), seed=3).json
    assert out["evaluatedNodes"] == 1
    assert out["filter"]["small"]["plugin"] == "NodeResourcesFit"
    assert out["filter"]["big"] == out["filter"]["tainted"] == ABSENT
    assert out["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
