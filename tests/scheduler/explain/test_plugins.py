"""``explain``'s per-plugin document: weights, weighted scores, every Filter plugin's
result per node (display-only, the attempt's verdicts unchanged), passed plugins, and
PreEnqueue / PreFilter / PreScore / Reserve / Permit results, all as a dry run."""

from __future__ import annotations

from typing import Any

from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config, parse_config
from cluster_sched.scheduler.explain.decision import explain
from cluster_sched.testing.builders import make_node, make_pod


def _cache() -> Cache:
    cache = Cache()
    cache.load(
        [
            make_node("big").capacity(cpu="8", memory="16Gi", pods=10).obj(),
            make_node("small").capacity(cpu="2", memory="4Gi", pods=10).obj(),
            # fails TaintToleration first, and NodeResourcesFit too
            make_node("tiny-tainted")
            .capacity(cpu="1", memory="1Gi", pods=10)
            .taint("gpu", "yes")
            .obj(),
        ]
    )
    return cache


def _doc(cpu: str = "2", **kw: Any) -> dict[str, Any]:
    return explain(
        _cache(), make_pod("web").req(cpu=cpu).obj(), default_config(), seed=1, **kw
    ).json


def test_weights_are_the_profiles_score_weights() -> None:
    weights = _doc()["weights"]
    assert weights["TaintToleration"] == 3
    assert (
        weights["NodeAffinity"] == weights["PodTopologySpread"] == weights["InterPodAffinity"] == 2
    )
    assert weights["NodeResourcesFit"] == weights["NodeResourcesBalancedAllocation"] == 1


def test_weighted_scores_are_normalised_times_weight_and_sum_to_final() -> None:
    doc = explain(_cache(), make_pod("web").req(cpu="1").obj(), default_config(), seed=1).json
    assert set(doc["weightedScores"]) == set(doc["scores"]) == {"big", "small"}
    for node, per in doc["weightedScores"].items():
        assert per == {p: s * doc["weights"][p] for p, s in doc["scores"][node].items()}
        assert sum(per.values()) == doc["finalScores"][node]


def test_every_filter_plugin_runs_on_every_evaluated_node_for_display() -> None:
    doc = _doc(cpu="4")
    # The attempt's verdict: the first failing plugin only.
    assert doc["filter"]["tiny-tainted"]["plugin"] == "TaintToleration"
    per = doc["pluginResults"]["filter"]["tiny-tainted"]
    assert per["TaintToleration"]["code"] == "UnschedulableAndUnresolvable"
    assert per["NodeResourcesFit"] == {
        "code": "UnschedulableAndUnresolvable",
        "reasons": ["Insufficient cpu"],
    }
    assert per["NodeAffinity"] == {"code": "Skip"}  # PreFilter skipped it
    assert doc["pluginResults"]["filter"]["small"]["NodeResourcesFit"]["code"] != "Success"
    assert doc["passedPlugins"]["big"] == [
        p for p, st in doc["pluginResults"]["filter"]["big"].items() if st["code"] == "Success"
    ]
    assert "NodeResourcesFit" in doc["passedPlugins"]["big"]
    assert "TaintToleration" not in doc["passedPlugins"]["tiny-tainted"]
    assert "NodeResourcesFit" not in doc["passedPlugins"]["tiny-tainted"]
    assert "NodeUnschedulable" in doc["passedPlugins"]["tiny-tainted"]


def test_other_extension_points_have_each_plugins_result() -> None:
    doc = _doc(cpu="1")
    results = doc["pluginResults"]
    # DefaultPreemption's PreEnqueue (SchedulerAsyncPreemption, on by default) admits a
    # pod with no preemption running
    assert results["preEnqueue"] == {
        "SchedulingGates": {"code": "Success"},
        "DynamicResources": {"code": "Success"},
        "DefaultPreemption": {"code": "Success"},
    }
    assert results["preFilter"]["NodeResourcesFit"] == {"code": "Success"}
    assert results["preFilter"]["NodePorts"] == {"code": "Skip"}
    assert results["preScore"]["TaintToleration"] == {"code": "Success"}
    assert results["reserve"] == {
        "VolumeBinding": {"code": "Success"},
        "DynamicResources": {"code": "Success"},
    }
    assert results["permit"] == {}


def test_fit_error_has_filter_results_but_no_reserve_or_permit() -> None:
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}],
        }
    )
    doc = explain(_cache(), make_pod("web").req(cpu="64").obj(), config, seed=1).json
    assert doc["selectedNode"] is None
    assert set(doc["pluginResults"]["filter"]) == {"big", "small", "tiny-tainted"}
    assert all("NodeResourcesFit" not in passed for passed in doc["passedPlugins"].values())
    assert "reserve" not in doc["pluginResults"] and "permit" not in doc["pluginResults"]
    assert doc["weightedScores"] == {}


def test_prefilter_narrowing_is_listed_and_excluded_nodes_are_not_evaluated() -> None:
    field = {"key": "metadata.name", "operator": "In", "values": ["small"]}
    pod = make_pod("web").req(cpu="1").node_affinity_required(fields=[field]).obj()
    doc = explain(_cache(), pod, default_config(), seed=1).json
    assert doc["pluginResults"]["preFilter"]["NodeAffinity"] == {
        "code": "Success",
        "nodeNames": ["small"],
    }
    assert set(doc["passedPlugins"]) == set(doc["pluginResults"]["filter"]) == {"small"}
    assert doc["filter"]["big"]["reasons"] == ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]


def test_gated_pod_reports_its_pre_enqueue_result_with_brackets() -> None:
    pod = make_pod("g").req(cpu="1").scheduling_gates("example.com/gate").obj()
    doc = explain(_cache(), pod, default_config(), seed=1).json
    gate = doc["pluginResults"]["preEnqueue"]["SchedulingGates"]
    assert gate["reasons"] == ["waiting for scheduling gates: [example.com/gate]"]
    assert doc["passedPlugins"] == {} and doc["weightedScores"] == {}


def test_display_pass_leaves_the_cache_as_it_was() -> None:
    cache = _cache()
    explain(cache, make_pod("web").req(cpu="1").obj(), default_config(), seed=1)
    assert cache.assumed == set() and cache.pod_states == {}
