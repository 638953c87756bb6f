"""Shared by the informer tests (a helper module of the ``tests.scheduler`` package): an
informer that records its pod handler calls, and hypothesis strategies for the pod
statuses a binding edits."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from cluster_sched.scheduler.informer import Informer, InformerHandlers
from cluster_sched.store.store import Store

PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

#: status.conditions entries, each type at most once per list
CONDITION = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["PodScheduled", "Ready", "ContainersReady"]),
        "status": st.sampled_from(["True", "False", "Unknown"]),
    },
    optional={"reason": st.sampled_from(["Unschedulable", "SchedulerError"])},
)


def pod_statuses(conditions: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A pod's status (or None) with the fields a binding reads or edits."""
    return st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {},
            optional={
                "nominatedNodeName": st.sampled_from(["n1", "n2", ""]),
                "phase": st.just("Pending"),
                "conditions": conditions,
                "startTime": st.just("2025-01-01T00:00:00Z"),
            },
        ),
    )


def recording_informer(store: Store, seen: list[tuple[Any, Any]]) -> Informer:
    """An informer on ``store`` whose pod handler appends (old, new) to ``seen``."""
    return Informer(
        store,
        InformerHandlers(
            on_pod=lambda old, new: seen.append((old, new)), on_node=lambda old, new: None
        ),
    )
