"""Out-of-tree test plugins, named in configurations as
``tests.testing_plugins.cs_sample_plugins:<Class>``.

Imported like a user's installed plugin package (the repository root is on ``sys.path``
in pytest, and on ``PYTHONPATH`` for the CLI subprocesses); nothing in ``cluster_sched``
knows these classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import Code, Status
from cluster_sched.framework.verdicts import NodeVerdicts

REJECT_LABEL = "sample.example.com/reject"
REJECT_REASON = "node(s) carry the sample reject label"


class PreferNamed:
    """Score: 100 for the nodes named in ``args["prefer"]``, 0 elsewhere. Built through
    its ``new`` classmethod, so it sees its raw args."""

    def __init__(self, prefer: frozenset[str]) -> None:
        self.prefer = prefer

    @classmethod
    def new(cls, args: Mapping[str, Any] | None, handle: Any) -> PreferNamed:
        return cls(frozenset((args or {}).get("prefer", ())))

    def score(self, state: CycleState, pod: Any, nodes: NodeSlice) -> np.ndarray:
        return np.asarray([100 if n in self.prefer else 0 for n in nodes.names()], dtype=np.int64)


class RejectLabel:
    """Filter: Unschedulable on nodes labelled ``REJECT_LABEL``. No ``new``, so it is
    built as ``RejectLabel(args, handle)``; no ``events_to_register`` on purpose."""

    def __init__(self, args: Any, handle: Any) -> None:
        self.args = args

    def filter(self, state: CycleState, pod: Any, nodes: NodeSlice) -> NodeVerdicts:
        col = nodes.table.labels.get(REJECT_LABEL)
        fails = np.zeros(len(nodes), dtype=bool) if col is None else col[nodes.rows] >= 0
        return NodeVerdicts.from_mask(fails, Code.UNSCHEDULABLE, REJECT_REASON)


class RefusesArgs:
    """A plugin whose constructor rejects its arguments."""

    @staticmethod
    def new(args: Any, handle: Any) -> RefusesArgs:
        raise ValueError("prefer must be a list")

    def filter(self, state: CycleState, pod: Any, nodes: NodeSlice) -> NodeVerdicts:
        return NodeVerdicts.passing(len(nodes))


FAIL_AT_LABEL = "sample.example.com/fail-at"
"""Pod label naming the binding-cycle extension point (PreBind, Bind, PostBind) to fail."""
FAIL_HOW_LABEL = "sample.example.com/fail-how"
"""``raise`` (the plugin crashes) or ``error`` (it returns an Error status)."""


def _fault(pod: Any, point: str) -> Status | None:
    """The pod's requested fault at ``point``; None (upstream's nil Status) otherwise."""
    if pod.labels.get(FAIL_AT_LABEL) != point:
        return None
    if pod.labels.get(FAIL_HOW_LABEL) == "raise":
        raise RuntimeError(f"sample plugin crashed in {point}")
    return Status(Code.ERROR, (f"sample plugin failed in {point}",))


class FaultyBinding:
    """PreBind and PostBind that fail the pods asking for it (``FAIL_AT_LABEL``) and
    return None, upstream's nil Status, for every other pod. It binds nothing itself, so
    a profile with it still binds with DefaultBinder alone."""

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def pre_bind(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
        return _fault(pod, "PreBind")

    def post_bind(self, state: CycleState, pod: Any, node_name: str) -> None:
        _fault(pod, "PostBind")


class FaultyBinder(FaultyBinding):
    """FaultyBinding plus a Bind that writes the binding through ``handle.binder`` (as
    DefaultBinder does) unless the pod asks it to fail at Bind."""

    def bind(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
        return _fault(pod, "Bind") or self.handle.binder(pod, node_name)


NOT_A_CLASS = 42
