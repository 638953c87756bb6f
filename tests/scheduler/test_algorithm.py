"""One scheduling attempt (upstream schedulePod/findNodesThatFitPod/prioritizeNodes).

numFeasibleNodesToFind, the next-start-node rotation, the nominated node tried first,
nominated pods in Filter (two passes), PreFilter narrowing, the FitError grammar and
host selection. Fake plugins record what they are asked; in-tree plugins come from
configurations.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from cluster_sched.api.objects import Node, ObjectMeta, Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config, parse_config
from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import Diagnosis, FitError, fit_error_message
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice, NodeToStatus
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Code, Status
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.algorithm import (
    Scheduler,
    num_feasible_nodes_to_find,
    select_host,
)
from cluster_sched.scheduler.attempt import PreFilterError
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.testing.builders import make_node, make_pod

POD = make_pod("p").obj()


# ---------------------------------------------------------------------- fakes


class RecordingFilter:
    """Fails the named nodes; records every batch of node names it is asked about."""

    name = "Recording"

    def __init__(self, fails: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.fails = set(fails)
        self.batches: list[list[str]] = []

    def filter(self, state: CycleState, pod: Any, nodes: NodeSlice) -> NodeVerdicts:
        names = nodes.names()
        self.batches.append(names)
        return NodeVerdicts.from_mask(
            np.asarray([n in self.fails for n in names], dtype=bool),
            Code.UNSCHEDULABLE,
            "recorded no",
        )


class CountingScore:
    name = "Counting"

    def __init__(self, scores: dict[str, int] | None = None) -> None:
        self.scores = scores or {}
        self.calls = 0

    def score(self, state: CycleState, pod: Any, nodes: NodeSlice) -> np.ndarray:
        self.calls += 1
        return np.asarray([self.scores.get(n, 0) for n in nodes.names()], dtype=np.int64)


def _framework(
    filters: Sequence[Any] = (), scores: Sequence[Any] = (), percentage: int | None = None
) -> Framework:
    plugins: dict[str, list[tuple[Any, int]]] = {
        "filter": [(f, 0) for f in filters],
        "score": [(s, 1) for s in scores],
    }
    return Framework("test", plugins, Handle(), percentage_of_nodes_to_score=percentage)


def _table(n: int, width: int = 3) -> NodeTable:
    table = NodeTable(capacity=n)
    for i in range(n):
        table.upsert_node(
            Node(ObjectMeta(f"n{i:0{width}d}"), allocatable={"cpu": 4000, "pods": 110})
        )
    return table


def _profile_framework(doc_plugins: dict[str, Any] | None, cache: Cache) -> Framework:
    if doc_plugins is None:
        profile = default_config().profiles[0]
    else:
        profile = parse_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "default-scheduler", "plugins": doc_plugins}],
            }
        ).profiles[0]
    handle = Handle()
    handle.snapshot = cache.snapshot
    fwk = new_framework(profile, handle)
    return fwk


def _only(*names: str) -> dict[str, Any]:
    """A profile with exactly these plugins (plus the mandatory queue sort and binder)."""
    enabled = [{"name": "PrioritySort"}, {"name": "DefaultBinder"}, *({"name": n} for n in names)]
    return {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}}


# ---------------------------------------------------------------------- numFeasibleNodesToFind


@pytest.mark.parametrize(
    ("percentage", "num_all", "want"),
    [
        # upstream TestNumFeasibleNodesToFind
        (None, 10, 10),
        (40, 10, 10),
        (None, 1000, 420),
        (40, 1000, 400),
        (None, 6000, 300),
        (40, 6000, 2400),
        # the formula's edges
        (0, 99, 99),
        (0, 100, 100),  # 50% of 100 = 50 -> at least 100
        (0, 250, 120),  # 48%
        (0, 5625, 281),  # 50 - 45 = 5%
        (0, 200_000, 10_000),  # floor at 5%
        (10, 500, 100),  # 50 -> at least 100
        (100, 500, 500),
        (1, 100_000, 1000),
    ],
    ids=lambda v: str(v),
)
def test_num_feasible_nodes_to_find(percentage: int | None, num_all: int, want: int) -> None:
    assert num_feasible_nodes_to_find(percentage, num_all) == want


@pytest.mark.parametrize(
    ("global_pct", "profile_pct", "want"),
    [(40, None, 400), (40, 70, 700), (40, 0, 420), (0, None, 420), (0, 10, 100)],
    ids=["global", "profile-wins", "profile-zero-is-adaptive", "adaptive", "profile-floor"],
)
def test_profile_percentage_overrides_global(
    global_pct: int, profile_pct: int | None, want: int
) -> None:
    table = _table(1000)
    fwk = _framework([RecordingFilter()], [CountingScore()], percentage=profile_pct)
    result = Scheduler(global_pct, random.Random(0)).schedule_pod(
        fwk, CycleState(), POD, table, table
    )
    assert len(result.feasible_nodes) == want == result.evaluated_nodes


def test_without_score_plugins_the_first_feasible_node_is_taken() -> None:
    """upstream findNodesThatPassFilters: numNodesToFind = 1 without scoring."""
    table = _table(10)
    filt = RecordingFilter(fails={"n000", "n001"})
    sched = Scheduler(0, random.Random(0))
    result = sched.schedule_pod(_framework([filt]), CycleState(), POD, table, table)
    assert result.suggested_host == "n002"
    assert result.feasible_nodes == ["n002"] and result.evaluated_nodes == 3
    assert sched.next_start_node_index == 3


# ---------------------------------------------------------------------- rotation


def _model_attempt(names: list[str], fails: set[str], start: int, to_find: int) -> int:
    """Nodes processed by one upstream attempt (feasible found + failures recorded)."""
    found = processed = 0
    for i in range(len(names)):
        processed += 1
        if names[(start + i) % len(names)] not in fails:
            found += 1
            if found == to_find:
                break
    return processed


def test_next_start_node_index_rotates_by_processed_nodes() -> None:
    table = _table(200)
    names = [table.names[r] for r in table.order()]
    fails = {n for i, n in enumerate(names) if i % 4 == 0}
    filt = RecordingFilter(fails)
    fwk = _framework([filt], [CountingScore()])
    sched = Scheduler(0, random.Random(0))
    to_find = num_feasible_nodes_to_find(0, 200)
    assert to_find == 100
    start = 0
    starts = []
    for attempt in range(4):
        starts.append(start)
        filt.batches.clear()
        result = sched.schedule_pod(fwk, CycleState(), POD, table, table)
        assert filt.batches[0][0] == names[start], f"attempt {attempt} starts at {names[start]}"
        processed = _model_attempt(names, fails, start, to_find)
        assert len(result.feasible_nodes) == to_find
        assert result.evaluated_nodes == processed
        assert len(result.diagnosis.node_to_status.statuses) == processed - to_find
        start = (start + processed) % 200
        assert sched.next_start_node_index == start
    # first attempt: 100 feasible + 34 failures (every 4th node, n000 to n132)
    assert starts == [0, 134, 67, 0]


def test_rotation_survives_failed_attempts() -> None:
    table = _table(5)
    fwk = _framework([RecordingFilter(fails={f"n{i:03d}" for i in range(5)})], [CountingScore()])
    sched = Scheduler(0, random.Random(0))
    sched.next_start_node_index = 3
    with pytest.raises(FitError):
        sched.schedule_pod(fwk, CycleState(), POD, table, table)
    assert sched.next_start_node_index == (3 + 5) % 5


# ---------------------------------------------------------------------- nominated node


def test_nominated_node_is_evaluated_first_and_alone() -> None:
    table = _table(10)
    filt, score = RecordingFilter(), CountingScore()
    sched = Scheduler(0, random.Random(0))
    pod = make_pod("p").nominated("n007").obj()
    result = sched.schedule_pod(_framework([filt], [score]), CycleState(), pod, table, table)
    assert result.suggested_host == "n007"
    assert result.evaluated_nodes == 1 and result.feasible_nodes == ["n007"]
    assert filt.batches == [["n007"]] and score.calls == 0
    assert sched.next_start_node_index == 0  # upstream returns before updating it


def test_failed_nominated_node_is_recorded_and_counted() -> None:
    """The nominated node's failure stays in the diagnosis (upstream shares NodeToStatus
    with evaluateNominatedNode) even when the search stops before reaching it."""
    table = _table(200)
    filt = RecordingFilter(fails={"n150"})
    sched = Scheduler(0, random.Random(0))
    pod = make_pod("p").nominated("n150").obj()
    result = sched.schedule_pod(
        _framework([filt], [CountingScore()]), CycleState(), pod, table, table
    )
    assert filt.batches[0] == ["n150"]
    assert "n150" not in result.feasible_nodes and len(result.feasible_nodes) == 100
    statuses = result.diagnosis.node_to_status.statuses
    assert list(statuses) == ["n150"] and statuses["n150"].plugin == "Recording"
    assert result.evaluated_nodes == 101 == sched.next_start_node_index


def test_unknown_nominated_node_falls_back_to_every_node() -> None:
    table = _table(3)
    pod = make_pod("p").nominated("gone").obj()
    result = Scheduler(0, random.Random(0)).schedule_pod(
        _framework([RecordingFilter()], [CountingScore()]), CycleState(), pod, table, table
    )
    assert sorted(result.feasible_nodes) == ["n000", "n001", "n002"]


# ---------------------------------------------------------------------- nominated pods


def _two_node_cache() -> Cache:
    cache = Cache()
    cache.load([make_node(n).capacity(cpu="2", memory="4Gi", pods=10).obj() for n in ("n1", "n2")])
    return cache


NOMINATED = (
    make_pod("nominated").uid("uid-nominated").req(cpu="1500m").priority(10).nominated("n1").obj()
)


@pytest.mark.parametrize(
    ("incoming", "nominated", "n1_fits"),
    [
        pytest.param(make_pod("q").req(cpu="1").priority(10).obj(), [NOMINATED], False, id="equal-priority-counts"),
        pytest.param(make_pod("q").req(cpu="1").priority(5).obj(), [NOMINATED], False, id="higher-priority-counts"),
        pytest.param(make_pod("q").req(cpu="1").priority(11).obj(), [NOMINATED], True, id="lower-priority-ignored"),
        pytest.param(
            make_pod("nominated").uid("uid-nominated").req(cpu="1").priority(10).obj(),
            [NOMINATED], True, id="the-pod-itself-ignored",
        ),
        pytest.param(make_pod("q").req(cpu="1").priority(10).obj(), [], True, id="no-nominated-pods"),
    ],
)  # fmt: skip
def test_nominated_pods_count_in_filter(incoming: Pod, nominated: list[Pod], n1_fits: bool) -> None:
    cache = _two_node_cache()
    table = cache.sink.table  # type: ignore[attr-defined]
    fwk = _profile_framework(_only("NodeResourcesFit"), cache)
    feasible, diagnosis, _ = Scheduler(0, random.Random(0)).find_nodes_that_fit(
        fwk, CycleState(), incoming, table, cache.snapshot, {"n1": nominated} if nominated else None
    )
    names = [table.names[r] for r in feasible]
    assert "n2" in names
    assert ("n1" in names) is n1_fits
    if not n1_fits:
        st = diagnosis.node_to_status.statuses["n1"]
        assert st == Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
    assert table.requested[0].tolist()[:2] == [0, 0]  # the simulation left the node alone


class NeedsCompanion:
    """Passes only nodes already running a pod labelled role=db: a filter that nominated
    pods make *more* likely to pass, which is why upstream runs a second pass."""

    name = "NeedsCompanion"

    def filter(self, state: CycleState, pod: Any, nodes: NodeSlice) -> NodeVerdicts:
        ok = [
            any(p.labels.get("role") == "db" for p in nodes.table.row_pods[r].values())
            for r in nodes.rows.tolist()
        ]
        return NodeVerdicts.from_mask(~np.asarray(ok, dtype=bool), Code.UNSCHEDULABLE, "no db here")


def test_second_pass_runs_without_the_nominated_pods() -> None:
    cache = _two_node_cache()
    cache.add_pod(make_pod("db-running").label("role", "db").node("n2").obj())
    table = cache.sink.table  # type: ignore[attr-defined]
    db = make_pod("db-nominated").label("role", "db").priority(100).obj()
    fwk = _framework([NeedsCompanion()], [CountingScore()])
    feasible, diagnosis, _ = Scheduler(0, random.Random(0)).find_nodes_that_fit(
        fwk, CycleState(), POD, table, cache.snapshot, {"n1": [db]}
    )
    assert [table.names[r] for r in feasible] == ["n2"]
    assert diagnosis.node_to_status.statuses["n1"].reasons == ("no db here",)


def test_addpod_failure_aborts_the_attempt() -> None:
    class BrokenAddPod:
        name = "BrokenAddPod"

        def pre_filter(self, state: CycleState, pod: Any, snapshot: Any) -> tuple[None, Status]:
            return None, Status()

        def pre_filter_extensions(self) -> BrokenAddPod:
            return self

        def add_pod(self, state: CycleState, pod: Any, pod_to_add: Any, node_name: str) -> Status:
            return Status(Code.ERROR, ("cannot add",))

        def remove_pod(self, *args: Any) -> Status:
            return Status()

    table = _table(2)
    fwk = Framework(
        "t", {"preFilter": [(BrokenAddPod(), 0)], "filter": [(RecordingFilter(), 0)]}, Handle()
    )
    with pytest.raises(
        SchedulerError, match='running AddPod on PreFilter plugin "BrokenAddPod": cannot add'
    ):
        Scheduler(0).find_nodes_that_fit(
            fwk, CycleState(), POD, table, table, {"n000": [NOMINATED]}
        )


# ---------------------------------------------------------------------- PreFilter narrowing


def _affinity_cache(cordon: str) -> Cache:
    cache = Cache()
    cache.load(
        [
            make_node(n).capacity(cpu="2", memory="4Gi", pods=10).unschedulable(n == cordon).obj()
            for n in ("n1", "n2", "n3")
        ]
    )
    return cache


def _pinned(*names: str) -> Pod:
    """Required node affinity: one matchFields term per name (terms are ORed)."""
    pod = make_pod("pinned")
    for name in names:
        pod = pod.node_affinity_required(
            fields=[{"key": "metadata.name", "operator": "In", "values": [name]}]
        )
    return pod.obj()


def test_prefilter_narrowing_counts_absent_nodes_in_the_fit_error() -> None:
    cache = _affinity_cache(cordon="n2")
    fwk = _profile_framework(None, cache)
    with pytest.raises(FitError) as err:
        Scheduler(0, random.Random(0)).schedule_pod(
            fwk, CycleState(), _pinned("n2"), cache.sink.table, cache.snapshot
        )  # type: ignore[attr-defined]
    diagnosis = err.value.diagnosis
    assert list(diagnosis.node_to_status.statuses) == ["n2"]
    absent = diagnosis.node_to_status.absent_status
    assert absent is not None and absent.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert {"NodeAffinity", "NodeUnschedulable"} <= diagnosis.unschedulable_plugins
    assert str(err.value) == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_prefilter_narrowing_to_unknown_nodes() -> None:
    cache = _affinity_cache(cordon="")
    fwk = _profile_framework(_only("NodeAffinity"), cache)
    sched = Scheduler(0, random.Random(0))
    with pytest.raises(FitError) as err:
        sched.schedule_pod(fwk, CycleState(), _pinned("ghost"), cache.sink.table, cache.snapshot)  # type: ignore[attr-defined]
    assert (
        str(err.value)
        == "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    result = sched.schedule_pod(
        fwk, CycleState(), _pinned("ghost", "n3"), cache.sink.table, cache.snapshot
    )  # type: ignore[attr-defined]
    assert result.suggested_host == "n3" and result.evaluated_nodes == 1


def test_prefilter_rejection_replaces_node_reasons() -> None:
    """Two name requirements ANDed in one term: NodeAffinity's PreFilter rejects the pod
    ("pod affinity terms conflict"), so no node is filtered and the message is PreFilter's."""
    cache = _affinity_cache(cordon="")
    fwk = _profile_framework(_only("NodeAffinity"), cache)
    pod = make_pod("c").node_affinity_required(
        fields=[
            {"key": "metadata.name", "operator": "In", "values": ["n1"]},
            {"key": "metadata.name", "operator": "In", "values": ["n2"]},
        ]
    )
    with pytest.raises(FitError) as err:
        Scheduler(0).schedule_pod(fwk, CycleState(), pod.obj(), cache.sink.table, cache.snapshot)  # type: ignore[attr-defined]
    assert str(err.value) == "0/3 nodes are available: pod affinity terms conflict."
    assert err.value.diagnosis.unschedulable_plugins == {"NodeAffinity"}
    assert err.value.diagnosis.node_to_status.statuses == {}


def test_no_nodes_at_all() -> None:
    with pytest.raises(FitError) as err:
        Scheduler(0).schedule_pod(
            _framework([RecordingFilter()]), CycleState(), POD, NodeTable(), None
        )
    assert str(err.value) == "no nodes available to schedule pods"


# ---------------------------------------------------------------------- errors


def test_filter_error_aborts_instead_of_fit_error() -> None:
    table = _table(3)
    broken = RecordingFilter(fails={"n001"})
    broken.filter = lambda state, pod, nodes: NodeVerdicts.from_mask(  # type: ignore[method-assign]
        np.asarray([n == "n001" for n in nodes.names()]), Code.ERROR, "kaput"
    )
    with pytest.raises(SchedulerError, match='running "Recording" filter plugin: kaput'):
        Scheduler(0).schedule_pod(
            _framework([broken], [CountingScore()]), CycleState(), POD, table, table
        )


def test_prescore_error_fails_the_attempt() -> None:
    table = _table(3)
    bad = CountingScore()
    bad.pre_score = lambda *a: Status(Code.ERROR, ("no state",))  # type: ignore[attr-defined]
    fwk = Framework("t", {"preScore": [(bad, 0)], "score": [(bad, 1)]}, Handle())
    with pytest.raises(PreFilterError) as err:
        Scheduler(0).schedule_pod(fwk, CycleState(), POD, table, table)
    assert err.value.status.message() == 'running PreScore plugin "Counting": no state'


# ---------------------------------------------------------------------- FitError grammar


def _diagnosis(statuses: dict[str, tuple[str, ...]], **kw: Any) -> Diagnosis:
    d = Diagnosis(**kw)
    for node, reasons in statuses.items():
        d.add_status(node, Status(Code.UNSCHEDULABLE, reasons, "P"))
    return d


@pytest.mark.parametrize(
    ("num_all", "diagnosis", "want"),
    [
        pytest.param(
            12,
            _diagnosis({**{f"a{i}": ("A reason",) for i in range(10)}, "b0": ("B reason",), "b1": ("B reason",)}),
            "0/12 nodes are available: 10 A reason, 2 B reason.",
            id="histogram-sorted-as-strings",
        ),
        pytest.param(
            3,
            _diagnosis({"n1": ("Insufficient memory", "Insufficient cpu"), "n2": ("Insufficient cpu",), "n3": ("Too many pods",)}),
            "0/3 nodes are available: 1 Insufficient memory, 1 Too many pods, 2 Insufficient cpu.",
            id="every-reason-of-a-node-counts",
        ),
        pytest.param(
            5,
            _diagnosis(
                {"n1": ("x",)},
                node_to_status=NodeToStatus({}, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("absent",))),
            ),
            "0/5 nodes are available: 1 x, 4 absent.",
            id="absent-nodes-counted",
        ),
        pytest.param(
            3,
            _diagnosis({"n1": ("x",)}, pre_filter_msg="pod affinity terms conflict"),
            "0/3 nodes are available: pod affinity terms conflict.",
            id="prefilter-message-replaces-node-reasons",
        ),
        pytest.param(
            2,
            _diagnosis(
                {"n1": ("x",), "n2": ("x",)},
                post_filter_msg="preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
            ),
            "0/2 nodes are available: 2 x. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
            id="postfilter-message-appended",
        ),
        pytest.param(
            2,
            _diagnosis({}, pre_filter_msg="gated", post_filter_msg="no preemption"),
            "0/2 nodes are available: gated. no preemption",
            id="prefilter-and-postfilter",
        ),
    ],
)  # fmt: skip
def test_fit_error_message(num_all: int, diagnosis: Diagnosis, want: str) -> None:
    assert fit_error_message(num_all, diagnosis) == want
    assert str(FitError("default/p", num_all, diagnosis)) == want


# ---------------------------------------------------------------------- host selection


def test_select_host_only_picks_top_scores_and_is_seeded() -> None:
    totals = np.asarray([5, 9, 3, 9, 9, 1], dtype=np.int64)
    picks = {select_host(totals, random.Random(seed))[0] for seed in range(200)}
    assert picks == {1, 3, 4}
    for seed in range(20):
        assert select_host(totals, random.Random(seed)) == select_host(totals, random.Random(seed))


@pytest.mark.parametrize(
    ("totals", "count", "want_top_rest"),
    [
        ([5, 9, 3, 7], 3, [7, 5]),
        ([1, 2], 3, [1]),
        ([4], 3, []),
    ],
    ids=["top3", "fewer-than-count", "single"],
)
def test_select_host_reports_best_first(
    totals: list[int], count: int, want_top_rest: list[int]
) -> None:
    arr = np.asarray(totals, dtype=np.int64)
    chosen, top = select_host(arr, random.Random(0), count)
    assert totals[chosen] == max(totals) and top[0] == chosen
    assert [totals[i] for i in top[1:]] == want_top_rest


def test_schedule_pod_selection_is_deterministic_for_a_seed() -> None:
    table = _table(50)
    fwk = _framework([RecordingFilter()], [CountingScore()])  # every node ties
    hosts = {
        seed: [
            Scheduler(0, random.Random(seed))
            .schedule_pod(fwk, CycleState(), POD, table, table)
            .suggested_host
            for _ in range(2)
        ]
        for seed in range(5)
    }
    for picks in hosts.values():
        assert picks[0] == picks[1]
    assert len({p[0] for p in hosts.values()}) > 1  # ties are really broken at random


def test_best_score_wins() -> None:
    table = _table(20)
    fwk = _framework([RecordingFilter()], [CountingScore({"n013": 80, "n004": 79})])
    result = Scheduler(0, random.Random(1)).schedule_pod(fwk, CycleState(), POD, table, table)
    assert result.suggested_host == "n013"
    assert result.top_nodes[:2] == [("n013", 80), ("n004", 79)]


def test_one_feasible_node_is_not_scored() -> None:
    table = _table(4)
    score = CountingScore()
    fwk = _framework([RecordingFilter(fails={"n000", "n001", "n003"})], [score])
    result = Scheduler(0).schedule_pod(fwk, CycleState(), POD, table, table)
    assert result.suggested_host == "n002" and score.calls == 0
    assert result.raw_scores == {} and result.total_scores is None
    assert result.evaluated_nodes == 4
