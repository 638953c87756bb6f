"""What the runtime makes of what plugins return, beyond the Status codes.

- None wherever a Status is due is upstream's nil ``*Status``: Success (an out-of-tree
  plugin written Go-style must not fail every pod with an AttributeError).
- PostBind has no outcome upstream: a plugin raising or returning a failure there is
  logged and the other PostBind plugins still run; the pod stays bound.
"""

# Fixtures are imported from test_framework_runtime (and shadowed by their parameters).

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice, NodeToStatus
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Code, Status
from cluster_sched.nodetable.table import NodeTable
from tests.framework.framework_helpers import POD, _all, _framework


class PostBinder:
    def __init__(self, name: str, log: list[str], fail: Exception | Status | None = None) -> None:
        self.name, self.log, self.fail = name, log, fail

    def post_bind(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
        self.log.append(self.name)
        if isinstance(self.fail, Exception):
            raise self.fail
        return self.fail


@pytest.mark.parametrize(
    "fail",
    [RuntimeError("plugin bug"), Status(Code.ERROR, ("cannot notify",))],
    ids=["raises", "error-status"],
)
def test_post_bind_failure_is_logged_and_the_others_still_run(
    fail: Exception | Status, caplog: pytest.LogCaptureFixture
) -> None:
    """upstream's PostBind returns nothing: the pod is bound whatever a plugin does."""
    log: list[str] = []
    fwk = _framework({"postBind": [PostBinder("A", log, fail), PostBinder("B", log)]})
    fwk.run_post_bind(CycleState(), POD, "n0")  # does not raise
    assert log == ["A", "B"]
    (record,) = caplog.records
    assert "PostBind plugin A" in record.getMessage() and POD.key in record.getMessage()


class Nil:
    """An out-of-tree plugin returning None, upstream's nil Status, wherever a Status is
    due (bare None for the points that return a tuple, too)."""

    name = "Nil"

    def pre_enqueue(self, pod: Any) -> None:
        return None

    def pre_filter(self, state: CycleState, pod: Any, snapshot: Any) -> None:
        return None

    def pre_filter_extensions(self) -> Nil:
        return self

    def add_pod(self, state: CycleState, pod: Any, other: Any, node_name: str) -> None:
        return None

    def remove_pod(self, state: CycleState, pod: Any, other: Any, node_name: str) -> None:
        return None

    def filter(self, state: CycleState, pod: Any, nodes: NodeSlice) -> None:
        return None

    def post_filter(self, state: CycleState, pod: Any, diagnosis: Any) -> tuple[None, None]:
        return None, None

    def pre_score(self, state: CycleState, pod: Any, snapshot: Any, feasible: Any) -> None:
        return None

    def reserve(self, state: CycleState, pod: Any, node_name: str) -> None:
        return None

    def permit(self, state: CycleState, pod: Any, node_name: str) -> None:
        return None

    def pre_bind(self, state: CycleState, pod: Any, node_name: str) -> None:
        return None

    def bind(self, state: CycleState, pod: Any, node_name: str) -> None:
        return None


def _filter_status(fwk: Framework, table: NodeTable) -> Status:
    outcome = fwk.run_filter(CycleState(), POD, _all(table))
    assert outcome.passed.all()
    return fwk.filter_status(outcome, 0)


def _pre_score_status(fwk: Framework, table: NodeTable) -> Status:
    state = CycleState()
    status = fwk.run_pre_score(state, POD, None, _all(table))
    assert not state.skip_score_plugins
    return status


def _permit_status(fwk: Framework, table: NodeTable) -> Status:
    status = fwk.run_permit(CycleState(), POD, "n0")
    assert fwk.handle.waiting_pods.get(POD.key) is None
    return status


NIL_STATUS_POINTS: dict[str, tuple[str, Any]] = {
    "PreEnqueue": ("preEnqueue", lambda fwk, t: fwk.run_pre_enqueue(POD)),
    "PreFilter": ("preFilter", lambda fwk, t: fwk.run_pre_filter(CycleState(), POD, None)[1]),
    "AddPod": (
        "preFilter",
        lambda fwk, t: fwk.run_pre_filter_add_pod(CycleState(), POD, POD, "n0"),
    ),
    "RemovePod": (
        "preFilter",
        lambda fwk, t: fwk.run_pre_filter_remove_pod(CycleState(), POD, POD, "n0"),
    ),
    "Filter": ("filter", _filter_status),
    "PostFilter": (
        "postFilter",
        lambda fwk, t: fwk.run_post_filter(CycleState(), POD, NodeToStatus())[1],
    ),
    "PreScore": ("preScore", _pre_score_status),
    "Reserve": ("reserve", lambda fwk, t: fwk.run_reserve(CycleState(), POD, "n0")),
    "Permit": ("permit", _permit_status),
    "PreBind": ("preBind", lambda fwk, t: fwk.run_pre_bind(CycleState(), POD, "n0")),
    "Bind": ("bind", lambda fwk, t: fwk.run_bind(CycleState(), POD, "n0")),
}


@pytest.mark.parametrize("point", list(NIL_STATUS_POINTS))
def test_a_nil_status_is_success(table: NodeTable, point: str) -> None:
    """upstream: a plugin's nil ``*Status`` is Success, at every extension point."""
    key, run = NIL_STATUS_POINTS[point]
    fwk = _framework({key: [Nil()]})
    status = run(fwk, table)
    assert status.is_success, status
