"""Upstream's extender cases, each driven through ``cluster-sched explain --output json``
against real HTTP extenders on 127.0.0.1.

Sources (kubernetes/kubernetes): pkg/scheduler/extender_test.go TestSchedulerWithExtenders
(tests 1-11, its FakeExtenders rebuilt as HTTP servers: TruePredicate, FalsePredicate,
ErrorPredicate, Node1/Node2Predicate, Node1/Node2Prioritizer, UnInterested, Ignorable),
schedule_one_test.go TestFindNodesThatPassExtenders (failed and unresolvable statuses,
several extenders), test/integration/scheduler/extender TestSchedulerExtender (three
extenders, one node-cache-capable, machine2 wins), and preemption's callExtenders.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.cli import main
from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.testing.extender_server import (
    UNRESOLVABLE,
    ExtenderServer,
    FakeExtender,
    only,
    prefer,
)

PREFER_NAMED = "tests.testing_plugins.cs_sample_plugins:PreferNamed"
TRUE = FakeExtender  # upstream TruePredicateExtender: no predicate, every node fits
ERROR = "some error"  # upstream ErrorPredicateExtender's error


def false_predicate(pod: Any, node: str) -> bool:
    return False


def nodes(*names: str, cpu: str = "4") -> list[dict[str, Any]]:
    return [make_node(n).capacity(cpu=cpu, memory="8Gi", pods=110).manifest() for n in names]


def no_scoring() -> dict[str, Any]:
    """A profile without Score plugins (upstream's tests register a TrueFilter only)."""
    return {"plugins": {"score": {"disabled": [{"name": "*"}]}}}


@pytest.fixture
def serve() -> Iterator[Any]:
    """serve(FakeExtender) -> its URL; every server is stopped after the test."""
    started: list[ExtenderServer] = []

    def start(fake: FakeExtender) -> str:
        server = ExtenderServer(fake).__enter__()
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def explain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """explain(cluster objects, pod, extenders, profile) -> the JSON explain printed."""

    def run(
        cluster: list[dict[str, Any]],
        pod: dict[str, Any],
        extenders: list[dict[str, Any]],
        profile: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        config: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": extenders,
        }
        if profile is not None:
            config["profiles"] = [profile]
        (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(cluster))
        (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        argv = ["explain", "--cluster", str(tmp_path / "cluster.yaml")]
        argv += ["--pod", str(tmp_path / "pod.yaml"), "--config", str(tmp_path / "config.yaml")]
        code = main([*argv, "--output", "json", "--seed", "1"])
        out = capsys.readouterr()
        assert code == 0, out.err
        return json.loads(out.out)  # type: ignore[no-any-return]

    return run


POD = make_pod("p", "default").req(cpu="1").manifest()


def ext(url: str, **fields: Any) -> dict[str, Any]:
    return {"urlPrefix": url, "filterVerb": "filter", **fields}


# ---------------------------------------------------------------- TestSchedulerWithExtenders


def test_1_an_extender_error_fails_the_attempt(serve: Any, explain: Any) -> None:
    out = explain(
        nodes("node1", "node2"), POD, [ext(serve(TRUE())), ext(serve(TRUE(filter_error=ERROR)))]
    )
    assert out["selectedNode"] is None
    assert out["message"] == ERROR
    assert out["extenders"][1]["filter"] == {"error": ERROR, "ignored": False}


def test_2_an_extender_rejecting_every_node_is_a_fit_error(serve: Any, explain: Any) -> None:
    falsy = FakeExtender(predicates=[false_predicate])
    out = explain(nodes("node1", "node2"), POD, [ext(serve(TRUE())), ext(serve(falsy))])
    assert out["selectedNode"] is None
    assert out["message"].startswith(
        '0/2 nodes are available: 1 FakeExtender: node "node1" failed, '
        '1 FakeExtender: node "node2" failed. no new claims to deallocate, preemption: '
    )
    assert out["filter"]["node1"] == {
        "code": "Unschedulable",
        "plugin": "",
        "reasons": ['FakeExtender: node "node1" failed'],
    }


def test_3_the_node_an_extender_keeps_is_selected(serve: Any, explain: Any) -> None:
    node1 = FakeExtender(predicates=[only("node1")])
    out = explain(nodes("node1", "node2"), POD, [ext(serve(TRUE())), ext(serve(node1))])
    assert (out["selectedNode"], out["evaluatedNodes"], out["feasibleNodes"]) == ("node1", 2, 1)


def test_4_extenders_narrow_one_after_the_other(serve: Any, explain: Any) -> None:
    first, second = (
        FakeExtender(predicates=[only("node2")]),
        FakeExtender(predicates=[only("node1")]),
    )
    out = explain(nodes("node1", "node2"), POD, [ext(serve(first)), ext(serve(second))])
    assert out["selectedNode"] is None
    assert out["filter"]["node1"]["reasons"] == ['FakeExtender: node "node1" failed']
    assert out["filter"]["node2"]["reasons"] == ['FakeExtender: node "node2" failed']
    # the second extender was asked about what the first one kept only
    assert out["extenders"][1]["filter"]["failedNodes"] == {
        "node2": 'FakeExtender: node "node2" failed'
    }


def test_5_a_lone_feasible_node_is_not_prioritized(serve: Any, explain: Any) -> None:
    fake = TRUE()  # its prioritize verb answers 404: an error if it were called
    url = serve(fake)
    out = explain(nodes("node1"), POD, [ext(url, prioritizeVerb="missing", weight=1)])
    assert (out["selectedNode"], out["evaluatedNodes"], out["feasibleNodes"]) == ("node1", 1, 1)
    assert fake.verbs() == ["filter"]


def test_6_extender_scores_are_weighted_and_scaled(serve: Any, explain: Any) -> None:
    e1 = FakeExtender(prioritizers=[(prefer("node1"), 10)])
    e2 = FakeExtender(prioritizers=[(prefer("node2"), 10)])
    out = explain(
        nodes("node1", "node2"),
        POD,
        [
            ext(serve(e1), prioritizeVerb="prioritize", weight=1),
            ext(serve(e2), prioritizeVerb="prioritize", weight=5),
        ],
    )
    assert out["selectedNode"] == "node2"
    # score * weight * (MaxNodeScore / MaxExtenderPriority = 10), added to the plugins'
    assert out["extenders"][0]["prioritize"]["finalScores"] == {"node1": 1000, "node2": 100}
    assert out["extenders"][1]["prioritize"]["finalScores"] == {"node1": 500, "node2": 5000}
    final = out["finalScores"]
    assert final["node2"] - final["node1"] == (100 + 5000) - (1000 + 500)


def test_7_plugin_scores_and_extender_scores_add_up(serve: Any, explain: Any) -> None:
    profile = no_scoring()
    profile["plugins"]["score"]["enabled"] = [{"name": PREFER_NAMED, "weight": 20}]
    profile["pluginConfig"] = [{"name": PREFER_NAMED, "args": {"prefer": ["node2"]}}]
    e1 = FakeExtender(prioritizers=[(prefer("node1"), 10)])
    out = explain(
        nodes("node1", "node2"),
        POD,
        [ext(serve(e1), prioritizeVerb="prioritize", weight=1)],
        profile,
    )
    assert out["selectedNode"] == "node2"
    assert out["finalScores"] == {"node1": 1000, "node2": 20 * 100 + 100}


def test_8_an_uninterested_extender_is_never_called(serve: Any, explain: Any) -> None:
    fake = FakeExtender(filter_error=ERROR)
    url = serve(fake)
    managed = [{"name": "example.com/foo"}]
    cfg = ext(url, prioritizeVerb="missing", weight=1, managedResources=managed)
    out = explain(nodes("node1", "node2"), POD, [cfg])
    assert out["selectedNode"] in {"node1", "node2"} and out["feasibleNodes"] == 2
    assert fake.calls == []
    assert out["extenders"] == [{"urlPrefix": url, "interested": False}]


def test_9_an_ignorable_extenders_error_is_skipped(serve: Any, explain: Any) -> None:
    broken = serve(FakeExtender(filter_error=ERROR))
    node1 = serve(FakeExtender(predicates=[only("node1")]))
    out = explain(nodes("node1", "node2"), POD, [ext(broken, ignorable=True), ext(node1)])
    assert (out["selectedNode"], out["evaluatedNodes"], out["feasibleNodes"]) == ("node1", 2, 1)
    # ignorable extenders run last (upstream buildExtenders)
    assert [e["urlPrefix"] for e in out["extenders"]] == [node1, broken]
    assert out["extenders"][1]["filter"] == {"error": ERROR, "ignored": True}


def test_10_extender_filters_make_the_search_find_every_feasible_node(
    serve: Any, explain: Any
) -> None:
    """No scoring at all, but an extender filter: more than one node is evaluated."""
    url = serve(FakeExtender(predicates=[only("node1")]))
    out = explain(nodes("node1", "node2"), POD, [ext(serve(TRUE())), ext(url)], no_scoring())
    assert (out["selectedNode"], out["evaluatedNodes"], out["feasibleNodes"]) == ("node1", 2, 1)


def test_11_a_binder_only_extender_keeps_the_first_fit_search(serve: Any, explain: Any) -> None:
    """No scoring, no extender filter: the search stops at the first feasible node."""
    fake = FakeExtender()
    out = explain(
        nodes("node1", "node2"), POD, [{"urlPrefix": serve(fake), "bindVerb": "bind"}], no_scoring()
    )
    assert (out["evaluatedNodes"], out["feasibleNodes"]) == (1, 1)
    assert fake.calls == []  # explain never binds


# ---------------------------------------------------------------- TestFindNodesThatPassExtenders


def _a_b_c(pod: Any, node: str) -> Any:
    return {"a": True, "b": False}.get(node, UNRESOLVABLE)


def test_failed_and_unresolvable_nodes_get_their_codes(serve: Any, explain: Any) -> None:
    out = explain(nodes("a", "b", "c"), POD, [ext(serve(FakeExtender(predicates=[_a_b_c])))])
    assert out["selectedNode"] == "a"
    assert out["filter"]["b"]["code"] == "Unschedulable"
    assert out["filter"]["c"] == {
        "code": "UnschedulableAndUnresolvable",
        "plugin": "",
        "reasons": ['FakeExtender: node "c" failed and unresolvable'],
    }


def test_multiple_extenders_keep_the_first_ones_statuses(serve: Any, explain: Any) -> None:
    first = serve(FakeExtender(predicates=[_a_b_c]))
    second = serve(FakeExtender(predicates=[only("a")]))
    out = explain(nodes("a", "b", "c"), POD, [ext(first), ext(second)])
    assert out["selectedNode"] == "a"
    assert out["filter"]["b"]["code"] == "Unschedulable"
    assert out["filter"]["c"]["code"] == "UnschedulableAndUnresolvable"
    assert out["extenders"][1]["filter"]["nodes"] == ["a"]


# ---------------------------------------------------------------- integration TestSchedulerExtender


def test_integration_three_extenders_pick_machine2(serve: Any, explain: Any) -> None:
    e1 = FakeExtender(
        predicates=[only("machine1", "machine2", "machine3")],
        prioritizers=[(prefer("machine2"), 1)],
    )
    e2 = FakeExtender(
        predicates=[only("machine2", "machine3", "machine5")],
        prioritizers=[(prefer("machine3"), 1)],
    )
    e3 = FakeExtender(
        predicates=[only("machine1", "machine2", "machine3")],
        prioritizers=[(prefer("machine2"), 5)],
        node_cache_capable=True,
    )
    extended = make_pod("extender-test-pod").limits({"foo.com/bar": "1"}).manifest()
    out = explain(
        nodes(*(f"machine{i}" for i in range(1, 6))),
        extended,
        [
            ext(serve(e1), prioritizeVerb="prioritize", weight=3),
            ext(
                serve(e2),
                prioritizeVerb="prioritize",
                bindVerb="bind",
                weight=4,
                managedResources=[{"name": "foo.com/bar", "ignoredByScheduler": True}],
            ),
            ext(serve(e3), prioritizeVerb="prioritize", weight=10, nodeCacheCapable=True),
        ],
    )
    assert out["selectedNode"] == "machine2"
    # the node-cache-capable extender got node names, the others whole Nodes
    assert e3.calls[0][1]["Nodes"] is None and e3.calls[0][1]["NodeNames"] is not None
    assert e1.calls[0][1]["NodeNames"] is None and len(e1.calls[0][1]["Nodes"]["items"]) == 5


# ---------------------------------------------------------------- timeouts


def test_a_slow_ignorable_extender_is_skipped_at_its_timeout(serve: Any, explain: Any) -> None:
    slow = serve(FakeExtender(predicates=[false_predicate], delay=3.0))
    node1 = serve(FakeExtender(predicates=[only("node1")]))
    out = explain(
        nodes("node1", "node2"),
        POD,
        [ext(slow, ignorable=True, httpTimeout="200ms"), ext(node1)],
    )
    assert out["selectedNode"] == "node1"
    assert out["extenders"][1]["filter"]["ignored"] is True
    assert slow in out["extenders"][1]["filter"]["error"]


def test_a_slow_extender_fails_the_attempt(serve: Any, explain: Any) -> None:
    slow = serve(FakeExtender(delay=3.0))
    out = explain(nodes("node1", "node2"), POD, [ext(slow, httpTimeout="200ms")])
    assert out["selectedNode"] is None
    assert out["message"].startswith(f'Post "{slow}/filter"')


# ---------------------------------------------------------------- preemption (callExtenders)


def _full_cluster() -> list[dict[str, Any]]:
    running = [
        make_pod(f"low-{n}").req(cpu="1").priority(0).node(n).phase("Running").manifest()
        for n in ("n1", "n2")
    ]
    return nodes("n1", "n2", cpu="1") + running


HIGH = make_pod("high").req(cpu="1").priority(100).manifest()


def test_a_preempting_extender_shrinks_the_candidates(serve: Any, explain: Any) -> None:
    keep_n2 = FakeExtender(preempt_keep=lambda node, uids: uids if node == "n2" else None)
    url = serve(keep_n2)
    out = explain(_full_cluster(), HIGH, [{"urlPrefix": url, "preemptVerb": "preempt"}])
    assert out["preemption"] == {"nominatedNode": "n2", "victims": ["default/low-n2"]}
    sent = keep_n2.calls[0][1]["NodeNameToVictims"]
    assert sorted(sent) == ["n1", "n2"]
    assert out["extenders"][0]["preempt"] == {"nodeNameToVictims": {"n2": ["default/low-n2"]}}


def test_a_preempting_extenders_error_fails_the_preemption(serve: Any, explain: Any) -> None:
    url = serve(FakeExtender(status=500))
    out = explain(_full_cluster(), HIGH, [{"urlPrefix": url, "preemptVerb": "preempt"}])
    assert out["preemption"] == {"nominatedNode": None, "victims": []}
    assert (
        f"preemption: failed preempt with extender at URL {url}/preempt, code 500"
        in (out["message"])
    )


def test_an_extender_answering_no_victims_for_a_node_is_an_error(serve: Any, explain: Any) -> None:
    url = serve(FakeExtender(preempt_keep=lambda node, uids: []))
    out = explain(_full_cluster(), HIGH, [{"urlPrefix": url, "preemptVerb": "preempt"}])
    assert out["preemption"]["nominatedNode"] is None
    assert "expected at least one victim pod on node" in out["message"]
