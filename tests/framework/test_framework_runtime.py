"""Framework runtime: what upstream's frameworkImpl adds around the plugins.

Skip bookkeeping, first-failure-wins per node, error handling per extension point, the
normalised score range check, weights, Reserve/Unreserve order, Permit and the
waiting-pods map, Bind Skip semantics and the default events of rejecting plugins.
Plugins here are small fakes that record what they were asked.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import EVENT_WILDCARD, ActionType, ClusterEvent, EventResource
from cluster_sched.framework.interfaces import (
    NodeSlice,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
)
from cluster_sched.framework.runtime import MAX_PERMIT_TIMEOUT, Framework
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from tests.framework.framework_helpers import POD, _all, _framework


class Filter:
    """Fails the named nodes with ``code``; records the node names it was asked about."""

    def __init__(
        self,
        name: str,
        fails: set[str] = frozenset(),
        code: Code = Code.UNSCHEDULABLE,
        reason: str = "",
    ) -> None:  # type: ignore[assignment]
        self.name = name
        self.fails = set(fails)
        self.code = code
        self.reason = reason or f"{name} says no"
        self.seen: list[list[str]] = []

    def filter(self, state: CycleState, pod: Any, nodes: NodeSlice) -> NodeVerdicts:
        names = nodes.names()
        self.seen.append(names)
        return NodeVerdicts.from_mask(
            np.asarray([n in self.fails for n in names], dtype=bool), self.code, self.reason
        )


class PreFilter(Filter):
    def __init__(
        self, name: str, status: Status = SUCCESS, result: PreFilterResult | None = None, **kw: Any
    ) -> None:
        super().__init__(name, **kw)
        self.status = status
        self.result = result
        self.pre_filter_calls = 0

    def pre_filter(
        self, state: CycleState, pod: Any, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        self.pre_filter_calls += 1
        return self.result, self.status

    def pre_filter_extensions(self) -> None:
        return None


class Scorer:
    def __init__(
        self,
        name: str,
        scores: dict[str, int],
        pre_score: Status | None = None,
        normalize: Any = None,
    ) -> None:
        self.name = name
        self.scores = scores
        self.calls = 0
        if pre_score is not None:
            self.pre_score = lambda state, pod, snapshot, feasible: pre_score  # type: ignore[method-assign]
        if normalize is not None:
            self.normalize_score = normalize  # type: ignore[method-assign]

    def score(self, state: CycleState, pod: Any, nodes: NodeSlice) -> np.ndarray:
        self.calls += 1
        return np.asarray([self.scores.get(n, 0) for n in nodes.names()], dtype=np.int64)


# ---------------------------------------------------------------------- PreFilter / Filter


def test_prefilter_skip_skips_that_plugins_filter_only(table: NodeTable) -> None:
    skipper = PreFilter("Skipper", Status(Code.SKIP), fails={"n0", "n1"})
    other = PreFilter("Other", fails={"n2"})
    fwk = _framework({"preFilter": [skipper, other], "filter": [skipper, other]})
    state = CycleState()
    _, status, _ = fwk.run_pre_filter(state, POD, table)
    assert status.is_success
    assert state.skip_filter_plugins == {"Skipper"}
    outcome = fwk.run_filter(state, POD, _all(table))
    assert skipper.seen == []
    assert other.seen == [["n0", "n1", "n2", "n3", "n4"]]
    assert outcome.passed.tolist() == [True, True, False, True, True]


def test_first_failing_plugin_wins_and_later_plugins_see_only_passing_nodes(
    table: NodeTable,
) -> None:
    first = Filter(
        "First", fails={"n1", "n3"}, code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason="first reason"
    )
    second = Filter("Second", fails={"n1", "n2"}, reason="second reason")
    third = Filter("Third", fails={"n4"})
    fwk = _framework({"filter": [first, second, third]})
    outcome = fwk.run_filter(CycleState(), POD, _all(table))
    assert second.seen == [["n0", "n2", "n4"]]
    assert third.seen == [["n0", "n4"]]
    statuses = {
        table.names[int(r)]: fwk.filter_status(outcome, i) for i, r in enumerate(table.order())
    }
    assert statuses["n0"].is_success
    assert statuses["n1"] == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("first reason",), "First")
    assert statuses["n2"] == Status(Code.UNSCHEDULABLE, ("second reason",), "Second")
    assert statuses["n3"].plugin == "First"
    assert statuses["n4"] == Status(Code.UNSCHEDULABLE, ("Third says no",), "Third")


def test_no_plugin_runs_once_every_node_failed(table: NodeTable) -> None:
    first = Filter("First", fails={f"n{i}" for i in range(5)})
    second = Filter("Second")
    _framework({"filter": [first, second]}).run_filter(CycleState(), POD, _all(table))
    assert second.seen == []


@pytest.mark.parametrize("code", [Code.ERROR, Code.SKIP, Code.WAIT], ids=lambda c: c.label)
def test_filter_returning_a_non_rejection_aborts_the_attempt(table: NodeTable, code: Code) -> None:
    broken = Filter("Broken", fails={"n2"}, code=code, reason="disk on fire")
    after = Filter("After")
    fwk = _framework({"filter": [broken, after]})
    with pytest.raises(SchedulerError, match=r'^running "Broken" filter plugin: disk on fire$'):
        fwk.run_filter(CycleState(), POD, _all(table))
    assert after.seen == []


@pytest.mark.parametrize(
    ("statuses", "want_code", "want_plugin", "want_message", "all_ran"),
    [
        pytest.param(
            [Status(Code.UNSCHEDULABLE, ("a",)), Status(Code.UNSCHEDULABLE, ("b",)), SUCCESS],
            Code.UNSCHEDULABLE, "P1", "b", True,
            id="unschedulable-runs-the-rest-last-wins",
        ),
        pytest.param(
            [Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("a",)), SUCCESS, SUCCESS],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "P0", "a", False,
            id="unresolvable-stops",
        ),
        pytest.param(
            [SUCCESS, Status(Code.ERROR, ("boom",)), SUCCESS],
            Code.ERROR, "P1", 'running PreFilter plugin "P1": boom', False,
            id="error-wraps",
        ),
        pytest.param(
            [Status(Code.PENDING, ("later",)), SUCCESS, SUCCESS],
            Code.ERROR, "P0", 'running PreFilter plugin "P0": later', False,
            id="pending-is-an-error",
        ),
    ],
)  # fmt: skip
def test_prefilter_status_handling(
    statuses: list[Status], want_code: Code, want_plugin: str, want_message: str, all_ran: bool
) -> None:
    plugins = [PreFilter(f"P{i}", s) for i, s in enumerate(statuses)]
    _, status, _ = _framework({"preFilter": plugins}).run_pre_filter(CycleState(), POD, None)
    assert (status.code, status.plugin, status.message()) == (want_code, want_plugin, want_message)
    assert (plugins[-1].pre_filter_calls == 1) is all_ran


@pytest.mark.parametrize(
    ("results", "want_names", "want_message", "want_narrowing"),
    [
        pytest.param([{"n1", "n2"}, None, {"n2", "n3"}], {"n2"}, None, {"P0", "P2"}, id="intersection"),
        pytest.param([{"n1"}, {"n2"}], set(), "node(s) didn't satisfy plugin(s) [P0 P1] simultaneously", {"P0", "P1"}, id="disjoint"),
        pytest.param([set(), {"n2"}], set(), "node(s) didn't satisfy plugin P0", {"P0"}, id="first-empty-stops"),
        pytest.param([None, None], None, None, set(), id="all-nodes"),
    ],
)  # fmt: skip
def test_prefilter_results_merge(
    results: list[set[str] | None],
    want_names: set[str] | None,
    want_message: str | None,
    want_narrowing: set[str],
) -> None:
    plugins = [
        PreFilter(f"P{i}", result=PreFilterResult(None if r is None else frozenset(r)))
        for i, r in enumerate(results)
    ]
    merged, status, narrowing = _framework({"preFilter": plugins}).run_pre_filter(
        CycleState(), POD, None
    )
    got = None if merged is None else merged.node_names
    assert (set(got) if got is not None else None) == want_names
    if want_message is None:
        assert status.is_success
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == want_message
    assert narrowing == want_narrowing


# ---------------------------------------------------------------------- PostFilter


def test_post_filter_first_success_wins_and_rejections_are_joined() -> None:
    class Post:
        def __init__(
            self, name: str, status: Status, result: PostFilterResult | None = None
        ) -> None:
            self.name, self.status, self.result, self.calls = name, status, result, 0

        def post_filter(
            self, state: CycleState, pod: Any, diagnosis: NodeToStatus
        ) -> tuple[PostFilterResult | None, Status]:
            self.calls += 1
            return self.result, self.status

    a = Post("A", Status(Code.UNSCHEDULABLE, ("a1", "a2")))
    b = Post("B", Status(Code.UNSCHEDULABLE, ("b",)), PostFilterResult("n9"))
    result, status = _framework({"postFilter": [a, b]}).run_post_filter(
        CycleState(), POD, NodeToStatus()
    )
    assert status == Status(Code.UNSCHEDULABLE, ("a1", "a2", "b"), "A")
    assert result == PostFilterResult("n9")

    ok = Post("Ok", SUCCESS, PostFilterResult("n1"))
    never = Post("Never", SUCCESS)
    result, status = _framework({"postFilter": [a, ok, never]}).run_post_filter(
        CycleState(), POD, NodeToStatus()
    )
    assert status.is_success and status.plugin == "Ok" and result == PostFilterResult("n1")
    assert never.calls == 0


# ---------------------------------------------------------------------- Score


def test_prescore_skip_skips_score(table: NodeTable) -> None:
    skipped = Scorer("Skipped", {"n0": 100}, pre_score=Status(Code.SKIP))
    kept = Scorer("Kept", {"n1": 50}, pre_score=SUCCESS)
    fwk = _framework({"preScore": [skipped, kept], "score": [skipped, kept]})
    state = CycleState()
    assert fwk.run_pre_score(state, POD, table, _all(table)).is_success
    raw = fwk.run_score(state, POD, _all(table))
    assert list(raw) == ["Kept"] and skipped.calls == 0
    assert fwk.weighted_total(fwk.normalize_scores(state, POD, raw), 5).tolist() == [0, 50, 0, 0, 0]


def test_prescore_error_is_wrapped(table: NodeTable) -> None:
    bad = Scorer("Bad", {}, pre_score=Status(Code.ERROR, ("nope",)))
    status = _framework({"preScore": [bad]}).run_pre_score(CycleState(), POD, table, _all(table))
    assert status == Status(Code.ERROR, ('running PreScore plugin "Bad": nope',), "Bad")


@pytest.mark.parametrize(
    ("normalized", "bad"),
    [([0, 101, 5], 101), ([0, -1, 5], -1), ([100, 100, 1000], 1000)],
    ids=["above-max", "below-min", "max-reported"],
)
def test_normalized_score_out_of_range_is_an_error(
    table: NodeTable, normalized: list[int], bad: int
) -> None:
    pl = Scorer(
        "Wild", {}, normalize=lambda state, pod, scores: np.asarray(normalized, dtype=np.int64)
    )
    fwk = _framework({"score": [pl]})
    with pytest.raises(SchedulerError) as err:
        fwk.normalize_scores(CycleState(), POD, {"Wild": np.zeros(3, dtype=np.int64)})
    assert str(err.value) == (
        "applying score defaultWeights on Score plugins: "
        f'plugin "Wild" returns an invalid score {bad}, it should in the range of [0, 100] after normalizing'
    )


def test_raw_score_is_range_checked_without_normalize(table: NodeTable) -> None:
    fwk = _framework({"score": [Scorer("Raw", {})]})
    with pytest.raises(SchedulerError, match='"Raw" returns an invalid score 150'):
        fwk.normalize_scores(CycleState(), POD, {"Raw": np.asarray([150], dtype=np.int64)})


def test_weights_multiply_normalized_scores(table: NodeTable) -> None:
    a = Scorer("A", {"n0": 10, "n1": 100})
    b = Scorer("B", {"n1": 2, "n2": 7}, normalize=lambda state, pod, s: s * 10)
    fwk = _framework({"score": [a, b]}, weights={"A": 3, "B": 2})
    state = CycleState()
    normalized = fwk.normalize_scores(state, POD, fwk.run_score(state, POD, _all(table)))
    assert normalized["B"].tolist() == [0, 20, 70, 0, 0]
    assert fwk.weighted_total(normalized, 5).tolist() == [30, 340, 140, 0, 0]


# ---------------------------------------------------------------------- Reserve


class Reserver:
    def __init__(self, name: str, log: list[str], status: Status = SUCCESS) -> None:
        self.name, self.log, self.status = name, log, status

    def reserve(self, state: CycleState, pod: Any, node_name: str) -> Status:
        self.log.append(f"reserve {self.name}")
        return self.status

    def unreserve(self, state: CycleState, pod: Any, node_name: str) -> None:
        self.log.append(f"unreserve {self.name}")


@pytest.mark.parametrize(
    ("status", "want"),
    [
        (Status(Code.UNSCHEDULABLE, ("full",)), Status(Code.UNSCHEDULABLE, ("full",), "R2")),
        (
            Status(Code.ERROR, ("db down",)),
            Status(Code.ERROR, ('running Reserve plugin "R2": db down',), "R2"),
        ),
    ],
    ids=["rejected", "error"],
)
def test_reserve_failure_then_unreserve_in_reverse_order(status: Status, want: Status) -> None:
    log: list[str] = []
    plugins = [Reserver("R1", log), Reserver("R2", log, status), Reserver("R3", log)]
    fwk = _framework({"reserve": plugins})
    got = fwk.run_reserve(CycleState(), POD, "n0")
    assert got == want
    fwk.run_unreserve(CycleState(), POD, "n0")
    # R3 never reserved; unreserve runs for every plugin anyway (it must be idempotent)
    assert log == ["reserve R1", "reserve R2", "unreserve R3", "unreserve R2", "unreserve R1"]


# ---------------------------------------------------------------------- Permit


class Permitter:
    def __init__(self, name: str, status: Status = SUCCESS, timeout: float = 0.0) -> None:
        self.name, self.status, self.timeout = name, status, timeout

    def permit(self, state: CycleState, pod: Any, node_name: str) -> tuple[Status, float]:
        return self.status, self.timeout


WAIT = Status(Code.WAIT)


def test_permit_allow() -> None:
    fwk = _framework({"permit": [Permitter("A"), Permitter("B")]})
    assert fwk.run_permit(CycleState(), POD, "n0").is_success
    assert fwk.wait_on_permit(POD).is_success  # nothing waiting


def test_permit_reject_names_the_plugin_and_stops() -> None:
    fwk = _framework(
        {"permit": [Permitter("A", WAIT, 10), Permitter("B", Status(Code.UNSCHEDULABLE, ("no",)))]}
    )
    status = fwk.run_permit(CycleState(), POD, "n0")
    assert status == Status(Code.UNSCHEDULABLE, ("no",), "B")
    assert fwk.handle.waiting_pods.get(POD.key) is None


def test_permit_error_is_wrapped() -> None:
    fwk = _framework({"permit": [Permitter("A", Status(Code.ERROR, ("x",)))]})
    assert fwk.run_permit(CycleState(), POD, "n0") == Status(
        Code.ERROR, ('running Permit plugin "A": x',), "A"
    )


def _wait_in_thread(fwk: Framework) -> tuple[threading.Thread, list[Status]]:
    out: list[Status] = []
    t = threading.Thread(target=lambda: out.append(fwk.wait_on_permit(POD)))
    t.start()
    return t, out


@pytest.mark.timeout(30)
def test_permit_wait_then_allowed_from_another_thread() -> None:
    fwk = _framework({"permit": [Permitter("A", WAIT, 600), Permitter("B", WAIT, 600)]})
    status = fwk.run_permit(CycleState(), POD, "n0")
    assert status.code == Code.WAIT
    assert status.message() == 'one or more plugins asked to wait and no plugin rejected pod "p"'
    wp = fwk.handle.waiting_pods.get(POD.key)
    assert wp is not None and wp.node_name == "n0" and set(wp.pending) == {"A", "B"}
    waiter, out = _wait_in_thread(fwk)
    wp.allow("A")
    waiter.join(0.2)
    assert waiter.is_alive(), "one of two waiting plugins allowed: still waiting"
    wp.allow("B")
    waiter.join(20)
    assert out == [SUCCESS]
    assert fwk.handle.waiting_pods.get(POD.key) is None


@pytest.mark.timeout(30)
def test_permit_wait_then_rejected_through_the_waiting_pods_map() -> None:
    fwk = _framework({"permit": [Permitter("A", WAIT, 600)]})
    fwk.run_permit(CycleState(), POD, "n0")
    waiter, out = _wait_in_thread(fwk)
    assert fwk.handle.waiting_pods.reject(POD.key, "Gang", "gang member failed")
    waiter.join(20)
    assert out == [Status(Code.UNSCHEDULABLE, ("gang member failed",), "Gang")]
    assert not fwk.handle.waiting_pods.reject(POD.key, "Gang", "again")  # removed after the wait


@pytest.mark.timeout(30)
def test_permit_wait_times_out_naming_the_plugin() -> None:
    fwk = _framework({"permit": [Permitter("Slow", WAIT, 600), Permitter("Quick", WAIT, 0.05)]})
    fwk.run_permit(CycleState(), POD, "n0")
    status = fwk.wait_on_permit(POD)
    assert status == Status(
        Code.UNSCHEDULABLE, ("rejected due to timeout after waiting 50ms at plugin Quick",), "Quick"
    )


def test_permit_timeout_is_capped_at_fifteen_minutes() -> None:
    fwk = _framework({"permit": [Permitter("A", WAIT, 3 * 3600)]})
    fwk.run_permit(CycleState(), POD, "n0")
    wp = fwk.handle.waiting_pods.get(POD.key)
    assert wp is not None and wp.timeouts == {"A": MAX_PERMIT_TIMEOUT} == {"A": 900.0}


# ---------------------------------------------------------------------- Bind


class Binder:
    def __init__(self, name: str, status: Status, log: list[str]) -> None:
        self.name, self.status, self.log = name, status, log

    def bind(self, state: CycleState, pod: Any, node_name: str) -> Status:
        self.log.append(self.name)
        return self.status


@pytest.mark.parametrize(
    ("statuses", "want", "called"),
    [
        pytest.param([Status(Code.SKIP), SUCCESS, SUCCESS], SUCCESS, ["B0", "B1"], id="skip-then-bind"),
        pytest.param([Status(Code.SKIP), Status(Code.SKIP)], Code.SKIP, ["B0", "B1"], id="all-skip"),
        pytest.param(
            [Status(Code.ERROR, ("api down",)), SUCCESS],
            Status(Code.ERROR, ('running Bind plugin "B0": api down',), "B0"), ["B0"], id="error",
        ),
        pytest.param(
            [Status(Code.UNSCHEDULABLE, ("gone",)), SUCCESS],
            Status(Code.UNSCHEDULABLE, ("gone",), "B0"), ["B0"], id="rejected",
        ),
    ],
)  # fmt: skip
def test_bind_skip_semantics(
    statuses: list[Status], want: Status | Code, called: list[str]
) -> None:
    log: list[str] = []
    fwk = _framework({"bind": [Binder(f"B{i}", s, log) for i, s in enumerate(statuses)]})
    got = fwk.run_bind(CycleState(), POD, "n0")
    if isinstance(want, Code):
        assert got.code == want
    else:
        assert got == want
    assert log == called


# ---------------------------------------------------------------------- events


def test_events_to_register_defaults_to_wildcard_for_rejecting_plugins() -> None:
    own = ClusterEvent(EventResource.NODE, ActionType.ADD)

    class Registered(Filter):
        def events_to_register(self) -> tuple[ClusterEvent, ...]:
            return (own,)

    class Silent(Filter):
        def events_to_register(self) -> tuple[ClusterEvent, ...]:
            return ()

    unregistered = Filter("Unregistered")
    pre_filter_only = PreFilter("PreFilterOnly")
    reserver = Reserver("Reserver", [])
    permitter = Permitter("Permitter")
    score_only = Scorer("ScoreOnly", {})
    fwk = _framework(
        {
            "preFilter": [pre_filter_only],
            "filter": [Registered("Registered"), Silent("Silent"), unregistered],
            "reserve": [reserver],
            "permit": [permitter],
            "score": [score_only],
        }
    )
    events = fwk.events_to_register()
    assert events["Registered"] == (own,)
    assert events["Silent"] == ()
    for name in ("Unregistered", "PreFilterOnly", "Reserver", "Permitter"):
        assert events[name] == (EVENT_WILDCARD,), name
    assert "ScoreOnly" not in events  # cannot reject a pod
