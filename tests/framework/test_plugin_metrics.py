"""Per-plugin metrics (upstream setInstrumentedPlugins): evaluation counts on every call,
execution time only in sampled cycles, preemption attempts on every PostFilter run, and
nothing wrapped when metrics are off."""

from __future__ import annotations

from typing import Any

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.instrumentation import RECORD_PLUGIN_METRICS
from cluster_sched.framework.interfaces import NodeSlice, PostFilterResult
from cluster_sched.framework.status import Code, Status
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins import names
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.tracing import DISABLED
from tests.framework.framework_helpers import POD, _all, _framework


class FailN0:
    name = "FailN0"

    def filter(self, state: CycleState, pod: Any, nodes: NodeSlice) -> NodeVerdicts:
        names = nodes.names()
        return NodeVerdicts.from_mask(
            np.asarray([n == "n0" for n in names]), Code.UNSCHEDULABLE, "no n0"
        )

    def score(self, state: CycleState, pod: Any, nodes: NodeSlice) -> np.ndarray:
        return np.zeros(len(nodes), dtype=np.int64)


class Preempt:
    """Stands in for DefaultPreemption (the plugin upstream counts attempts in)."""

    name = names.DEFAULT_PREEMPTION

    def __init__(self, nominate: bool) -> None:
        self.nominate = nominate

    def post_filter(self, state: CycleState, pod: Any, m: Any) -> Any:
        if self.nominate:
            return PostFilterResult("n1", ("default/a", "default/b")), Status(Code.SUCCESS)
        return None, Status(Code.UNSCHEDULABLE, ("no candidate",))


def _series(m: Metrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    out = {}
    for family in text_string_to_metric_families(m.exposition().decode()):
        for s in family.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def _run(record: bool, table: NodeTable) -> Metrics:
    m = Metrics()
    fwk = _framework({"filter": [FailN0()], "score": [FailN0()]})
    fwk.instrument(DISABLED, m)
    state = CycleState()
    state.write(RECORD_PLUGIN_METRICS, record)
    fwk.run_filter(state, POD, _all(table))
    fwk.run_score(state, POD, _all(table))
    return m


def test_sampled_cycle_times_each_plugin_and_counts_nodes(table: NodeTable) -> None:
    m = _run(True, table)
    durations = _series(m, "scheduler_plugin_execution_duration_seconds_count")
    assert durations == {
        (("extension_point", "Filter"), ("plugin", "FailN0"), ("status", "Unschedulable")): 1,
        (("extension_point", "Score"), ("plugin", "FailN0"), ("status", "Success")): 1,
    }
    evaluations = _series(m, "scheduler_plugin_evaluation_total")
    profile = ("profile", "test-profile")
    assert evaluations == {
        (("extension_point", "Filter"), ("plugin", "FailN0"), profile): 5,
        (("extension_point", "Score"), ("plugin", "FailN0"), profile): 5,
    }


def test_unsampled_cycle_counts_but_does_not_time(table: NodeTable) -> None:
    m = _run(False, table)
    assert _series(m, "scheduler_plugin_execution_duration_seconds_count") == {}
    assert sum(_series(m, "scheduler_plugin_evaluation_total").values()) == 10


def test_sampling_decision_is_drawn_once_per_cycle(table: NodeTable) -> None:
    fwk = _framework({"filter": [FailN0()]})
    fwk.instrument(DISABLED, Metrics())
    state = CycleState()
    fwk.run_filter(state, POD, _all(table))
    decision = state.get(RECORD_PLUGIN_METRICS)
    assert isinstance(decision, bool)
    fwk.run_filter(state, POD, _all(table))
    assert state.get(RECORD_PLUGIN_METRICS) is decision


class OtherPostFilter:
    """A PostFilter plugin that is not DefaultPreemption (as DynamicResources')."""

    name = "Other"

    def post_filter(self, state: CycleState, pod: Any, m: Any) -> Any:
        return None, Status(Code.UNSCHEDULABLE, ("nothing to deallocate",))


def test_every_default_preemption_run_is_a_preemption_attempt() -> None:
    """Upstream counts in DefaultPreemption.PostFilter: another PostFilter plugin running
    before it is not a preemption attempt."""
    m = Metrics()
    for nominate in (False, True, False):
        fwk = _framework({"postFilter": [OtherPostFilter(), Preempt(nominate)]})
        fwk.instrument(DISABLED, m)
        fwk.run_post_filter(CycleState(), POD, None)  # type: ignore[arg-type]
    assert _series(m, "scheduler_preemption_attempts_total") == {(): 3}
    assert _series(m, "scheduler_preemption_victims_count") == {(): 1}
    assert _series(m, "scheduler_preemption_victims_sum") == {(): 2}


def test_metrics_off_wraps_nothing() -> None:
    pl = FailN0()
    fwk = _framework({"filter": [pl]})
    fwk.instrument(DISABLED, Metrics.disabled())
    assert "filter" not in vars(pl)
    fwk.instrument(DISABLED, Metrics())
    wrapped = pl.filter
    fwk.instrument(DISABLED, fwk.metrics)  # again: not wrapped twice
    assert pl.filter is wrapped


class Waits:
    name = "Waits"

    def permit(self, state: CycleState, pod: Any, node: str) -> Any:
        return Status(Code.WAIT), 5.0


def test_permit_wait_is_observed_only_when_the_pod_waited() -> None:
    m = Metrics()
    fwk = _framework({"permit": [Waits()]})
    fwk.instrument(DISABLED, m)
    assert fwk.run_permit(CycleState(), POD, "n1").code == Code.WAIT
    waiting = fwk.handle.waiting_pods.get(POD.key)
    assert waiting is not None
    waiting.allow("Waits")
    assert fwk.wait_on_permit(POD).is_success
    assert fwk.wait_on_permit(POD).is_success  # nothing waits now: not observed
    assert _series(m, "scheduler_permit_wait_duration_seconds_count") == {
        (("result", "Success"),): 1
    }
    points = {
        dict(labels)["extension_point"]
        for labels in _series(m, "scheduler_framework_extension_point_duration_seconds_count")
    }
    assert points == {"Permit"}  # WaitOnPermit is no upstream extension_point value
