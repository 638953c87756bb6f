"""DefaultPreemption as PostFilter: eligibility, candidates, victims, PDBs, selection
order, messages, the executor seam, and cross-node plugins in the dry runs."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FitError
from cluster_sched.framework.interfaces import PostFilterResult
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.plugins.defaultpreemption import PreemptionExecutor
from cluster_sched.plugins.defaultpreemption import plugin as dp
from cluster_sched.plugins.defaultpreemption.batch import select_victims_on_nodes
from cluster_sched.plugins.defaultpreemption.candidates import Candidate, num_candidates, pick_one
from cluster_sched.plugins.defaultpreemption.victims import (
    Victims,
    select_victims_on_node,
    split_by_pdb_violation,
)
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    make_namespace,
    make_node,
    make_pdb,
    make_pod,
)


def node(name: str, cpu: str = "1") -> Any:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()


def running(
    name: str, on: str, prio: int, cpu: str = "500m", start: float | None = None, **labels: str
) -> Pod:
    b = make_pod(name).req(cpu=cpu).priority(prio).node(on).phase("Running").labels(labels)
    if start is not None:
        b = b.start_time(start)
    return b.obj()


def preempt(
    objects: list[Any],
    pod: Pod,
    plugins: Sequence[str] = ("NodeResourcesFit",),
    args: dict[str, Any] | None = None,
    services: dict[str, Any] | None = None,
    register_framework: bool = True,
) -> tuple[PostFilterResult | None, Status]:
    cache = Cache()
    cache.load([make_namespace("default"), *objects])
    profile: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {
                "enabled": [
                    {"name": n}
                    for n in ("PrioritySort", *plugins, "DefaultPreemption", "DefaultBinder")
                ],
                "disabled": [{"name": "*"}],
            }
        },
    }
    if args:
        profile["pluginConfig"] = [{"name": "DefaultPreemption", "args": args}]
    cfg = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [profile],
        }
    )
    fwk = build_framework(cfg, pod, cache, seed=1)
    if not register_framework:
        fwk.handle.framework = None
    for name, value in (services or {}).items():
        setattr(fwk.handle, name, value)
    state = CycleState()
    with pytest.raises(FitError) as err:
        Scheduler(0, random.Random(1)).schedule_pod(
            fwk, state, pod, cache.sink.table, cache.snapshot
        )  # type: ignore[attr-defined]
    return fwk.run_post_filter(state, pod, err.value.diagnosis.node_to_status)


def big(prio: int = 100, cpu: str = "1") -> Pod:
    return make_pod("p").req(cpu=cpu).priority(prio).obj()


def test_evicts_the_fewest_lowest_priority_pods() -> None:
    objs = [
        node("n1"),
        node("n2"),
        running("a", "n1", 1),
        running("b", "n1", 1),
        running("c", "n2", 50, cpu="1"),
    ]
    result, status = preempt(objs, big())
    assert status.is_success
    assert result == PostFilterResult("n1", ("default/a", "default/b"))


def test_victims_are_only_as_many_as_needed() -> None:
    objs = [node("n1", cpu="2"), running("a", "n1", 5, cpu="1"), running("b", "n1", 1, cpu="1")]
    result, status = preempt(objs, big(cpu="1"))
    assert status.is_success and result is not None
    assert result.victims == ("default/b",)  # the higher-priority pod is reprieved first


def test_preemption_policy_never_is_not_eligible() -> None:
    pod = make_pod("p").req(cpu="1").priority(100).preemption_policy("Never").obj()
    result, status = preempt([node("n1"), running("a", "n1", 1)], pod)
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("preemption: not eligible due to preemptionPolicy=Never.",)
    assert status.plugin == "DefaultPreemption"


def _terminating(name: str, on: str, prio: int) -> Pod:
    doc = running(name, on, prio).raw
    assert doc is not None
    doc = {**doc, "metadata": {**doc["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    return parse_pod(doc, source="<test>")


def test_terminating_victim_on_the_nominated_node_blocks_more_preemption() -> None:
    pod = make_pod("p").req(cpu="1").priority(100).nominated("n1").obj()
    objs = [node("n1"), node("n2"), _terminating("old", "n1", 1), running("b", "n2", 1, cpu="1")]
    result, status = preempt(objs, pod)
    assert result is None
    assert status.reasons == (
        "preemption: not eligible due to a terminating pod on the nominated node.",
    )


def test_nominated_node_turned_unresolvable_allows_preempting_again() -> None:
    pod = make_pod("p").req(cpu="1").priority(100).nominated("n1").node_selector("pool", "b").obj()
    n2 = make_node("n2").capacity(cpu="1", memory="8Gi", pods=110).label("pool", "b").obj()
    objs = [node("n1"), n2, _terminating("old", "n1", 1), running("b", "n2", 1, cpu="1")]
    result, status = preempt(objs, pod, plugins=("NodeAffinity", "NodeResourcesFit"))
    assert status.is_success and result == PostFilterResult("n2", ("default/b",))


def test_unresolvable_nodes_are_not_helpful() -> None:
    pod = make_pod("p").req(cpu="1").priority(100).node_selector("pool", "x").obj()
    objs = [node("n1"), node("n2"), running("a", "n1", 1)]
    result, status = preempt(objs, pod, plugins=("NodeAffinity", "NodeResourcesFit"))
    assert result == PostFilterResult("")
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == (
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    )


def test_nodes_without_lower_priority_pods_have_no_victims() -> None:
    objs = [
        node("n1"),
        node("n2"),
        running("a", "n1", 500, cpu="1"),
        running("b", "n2", 500, cpu="1"),
    ]
    result, status = preempt(objs, big())
    assert result == PostFilterResult("")
    assert status.reasons == (
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
    )


def test_node_where_removal_is_not_enough_reports_its_filter_reason() -> None:
    objs = [node("n1"), running("a", "n1", 1, cpu="300m"), running("b", "n1", 500, cpu="700m")]
    _, status = preempt(objs, big())
    assert status.reasons == ("preemption: 0/1 nodes are available: 1 Insufficient cpu.",)


def test_pdb_protected_pods_are_avoided() -> None:
    objs = [
        node("n1"),
        node("n2"),
        running("a", "n1", 1, cpu="1", app="db"),
        running("b", "n2", 1, cpu="1", app="web"),
        make_pdb("db-pdb", {"app": "db"}, disruptions_allowed=0),
    ]
    result, status = preempt(objs, big())
    assert status.is_success and result == PostFilterResult("n2", ("default/b",))


def _mixed_pdb_cluster() -> list[Any]:
    """n1 and n2 each need both pods gone, one violating a PDB on each: upstream sorts a
    node's victims by importance after the reprieve (both groups non-empty), so the
    "lowest highest-priority victim" compares n1's 200 with n2's 160, not the
    violating-first 100 with 150."""
    return [
        node("n1", cpu="1"),
        node("n2", cpu="1"),
        running("a1", "n1", 100, app="db"),
        running("a2", "n1", 200),
        running("b1", "n2", 150, app="db"),
        running("b2", "n2", 160),
        make_pdb("db-pdb", {"app": "db"}, disruptions_allowed=0),
    ]


def test_victims_sorted_by_importance_when_pdb_groups_mix() -> None:
    result, status = preempt(_mixed_pdb_cluster(), big(prio=300))
    assert status.is_success
    assert result == PostFilterResult("n2", ("default/b2", "default/b1"))


def test_victims_on_node_are_in_importance_order_after_reprieve() -> None:
    cache = Cache()
    objs = _mixed_pdb_cluster()
    cache.load([make_namespace("default"), *objs])
    cfg = parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )
    pod = big(prio=300)
    fwk = build_framework(cfg, pod, cache, seed=1)
    state = CycleState()
    fwk.run_pre_filter(state, pod, cache.snapshot)
    table = cache.sink.table  # type: ignore[attr-defined]
    pdbs = list(cache.pdbs.values())
    victims, status = select_victims_on_node(
        fwk, state.clone(), pod, table, table.index["n1"], pdbs
    )
    assert status.is_success and victims is not None
    assert [p.name for p in victims.pods] == ["a2", "a1"]
    assert victims.num_pdb_violations == 1
    batch = select_victims_on_nodes(fwk, state, pod, table, table.rows_of(["n1", "n2"]), pdbs)
    assert [[p.name for p in v.pods] for v, _ in batch if v is not None] == [
        ["a2", "a1"],
        ["b2", "b1"],
    ]


def test_split_by_pdb_violation_spends_the_budget_in_order() -> None:
    pods = [running(n, "n1", 1, app="db") for n in ("a", "b", "c")]
    pdb = make_pdb("db", {"app": "db"}, disruptions_allowed=1, disrupted_pods={"c": 0.0})
    violating, ok = split_by_pdb_violation(pods, [pdb])
    assert [p.name for p in violating] == ["b"]
    assert [p.name for p in ok] == ["a", "c"]


class Recorder:
    def __init__(self, status: Status = SUCCESS) -> None:
        self.calls: list[tuple[str, str, list[str]]] = []
        self.status = status

    def prepare_candidate(self, pod: Pod, node_name: str, victims: Sequence[Pod]) -> Status:
        self.calls.append((pod.key, node_name, sorted(v.key for v in victims)))
        return self.status


def test_executor_receives_the_decision() -> None:
    rec = Recorder()
    assert isinstance(rec, PreemptionExecutor)
    objs = [node("n1"), running("a", "n1", 1, cpu="1")]
    result, status = preempt(objs, big(), services={"preemption_executor": rec})
    assert status.is_success and result == PostFilterResult("n1", ("default/a",))
    assert rec.calls == [("default/p", "n1", ["default/a"])]


def test_executor_failure_aborts_the_preemption() -> None:
    rec = Recorder(Status(Code.ERROR, ("delete failed",)))
    objs = [node("n1"), running("a", "n1", 1, cpu="1")]
    result, status = preempt(objs, big(), services={"preemption_executor": rec})
    assert result is None
    assert status.code == Code.ERROR and status.message() == "preemption: delete failed"


def test_missing_framework_is_an_error_not_a_crash() -> None:
    result, status = preempt(
        [node("n1"), running("a", "n1", 1, cpu="1")], big(), register_framework=False
    )
    assert result is None and status.code == Code.ERROR


def test_nominated_pods_of_higher_priority_keep_their_room() -> None:
    objs = [node("n1"), node("n2"), running("a", "n1", 1, cpu="1"), running("b", "n2", 1, cpu="1")]
    reserved = make_pod("nom").req(cpu="500m").priority(1000).obj()
    result, status = preempt(objs, big(), services={"nominated_pods": {"n1": [reserved]}})
    assert status.is_success and result is not None and result.nominated_node_name == "n2"


def test_removing_a_victim_clears_the_incoming_pods_anti_affinity() -> None:
    pod = (
        make_pod("p")
        .priority(100)
        .label("app", "web")
        .pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"})
        .obj()
    )
    objs = [node("n1"), running("a", "n1", 1, cpu="100m", app="web")]
    result, status = preempt(objs, pod, plugins=("InterPodAffinity",))
    assert status.is_success and result == PostFilterResult("n1", ("default/a",))


def test_removing_a_victim_clears_its_anti_affinity_toward_the_pod() -> None:
    victim = (
        make_pod("a").priority(1).node("n1").pod_anti_affinity(HOSTNAME_LABEL, {"app": "web"}).obj()
    )
    pod = make_pod("p").priority(100).label("app", "web").obj()
    result, status = preempt([node("n1"), victim], pod, plugins=("InterPodAffinity",))
    assert status.is_success and result == PostFilterResult("n1", ("default/a",))


def test_dry_run_stops_once_enough_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = dp.select_victims_on_node

    def spy(fwk: Any, state: Any, pod: Any, table: Any, row: int, *rest: Any) -> Any:
        seen.append(table.names[row])
        return real(fwk, state, pod, table, row, *rest)

    real_many = dp.select_victims_on_nodes

    def spy_many(fwk: Any, state: Any, pod: Any, table: Any, rows: Any, *rest: Any) -> Any:
        seen.extend(table.names[r] for r in rows.tolist())
        return real_many(fwk, state, pod, table, rows, *rest)

    monkeypatch.setattr(dp, "select_victims_on_node", spy)
    monkeypatch.setattr(dp, "select_victims_on_nodes", spy_many)
    objs = [node(f"n{i}") for i in range(6)] + [
        running(f"a{i}", f"n{i}", 1, cpu="1") for i in range(6)
    ]
    args = {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2}
    result, status = preempt(objs, big(), args=args)
    assert status.is_success and result is not None
    assert len(seen) == 2 and result.nominated_node_name in seen


# ---------------------------------------------------------------------------- selection


def cand(
    name: str, prios: list[int], violations: int = 0, starts: list[float] | None = None
) -> Candidate:
    starts = starts or [0.0] * len(prios)
    pods = tuple(
        make_pod(f"{name}-{i}").priority(p).start_time(s).obj()
        for i, (p, s) in enumerate(zip(prios, starts, strict=True))
    )
    return Candidate(name, Victims(pods, violations))


@pytest.mark.parametrize(
    ("cands", "want"),
    [
        ([cand("x", [1], 1), cand("y", [5, 5], 0)], "y"),  # fewest PDB violations
        ([cand("x", [9, 1]), cand("y", [5, 5, 5])], "y"),  # lowest highest-priority victim
        ([cand("x", [5, 5]), cand("y", [5, 1])], "y"),  # smallest priority sum
        ([cand("x", [-3, -3]), cand("y", [-3])], "y"),  # shifted sum: fewer negative pods win
        ([cand("x", [5, 5, 1]), cand("y", [5, 5, 1])], "x"),  # all tied: the first
        ([cand("x", [5], starts=[10.0]), cand("y", [5], starts=[20.0])], "y"),  # latest start
    ],
    ids=["pdb", "highest", "sum", "negative", "first", "start"],
)
def test_pick_one_follows_upstream_order(cands: list[Candidate], want: str) -> None:
    best = pick_one(cands)
    assert best is not None and best.node_name == want


@pytest.mark.parametrize(
    ("nodes", "pct", "absolute", "want"),
    [(1000, 10, 100, 100), (5000, 10, 100, 500), (50, 10, 100, 50), (1000, 0, 3, 3)],
)
def test_num_candidates(nodes: int, pct: int, absolute: int, want: int) -> None:
    assert num_candidates(nodes, pct, absolute) == want
