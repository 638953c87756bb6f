"""ClusterEvent matching and labels, as upstream's framework.ClusterEvent."""

from __future__ import annotations

import pytest

from cluster_sched.framework import events as ev
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource

A = ActionType
R = EventResource


@pytest.mark.parametrize(
    ("registered", "incoming", "expected"),
    [
        (ClusterEvent(R.NODE, A.ADD), ev.EVENT_NODE_ADD, True),
        (ClusterEvent(R.NODE, A.UPDATE), ClusterEvent(R.NODE, A.UPDATE_NODE_LABEL), True),
        (
            ClusterEvent(R.NODE, A.UPDATE_NODE_TAINT),
            ClusterEvent(R.NODE, A.UPDATE_NODE_LABEL),
            False,
        ),
        (ClusterEvent(R.NODE, A.ALL), ev.EVENT_NODE_DELETE, True),
        (ClusterEvent(R.NODE, A.ADD), ClusterEvent(R.PERSISTENT_VOLUME, A.ADD), False),
        (ClusterEvent(R.POD, A.ADD), ev.EVENT_ASSIGNED_POD_ADD, True),
        (ClusterEvent(R.POD, A.UPDATE), ev.EVENT_UNSCHEDULED_POD_UPDATE, True),
        (ClusterEvent(R.POD, A.DELETE), ev.EVENT_ASSIGNED_POD_ADD, False),
        (ClusterEvent(R.WILDCARD, A.ADD), ev.EVENT_NODE_ADD, True),
        (ev.EVENT_WILDCARD, ClusterEvent(R.STORAGE_CLASS, A.UPDATE), True),
        (ClusterEvent(R.NODE, A.ALL), ev.EVENT_UNSCHEDULABLE_TIMEOUT, False),
        (ev.EVENT_WILDCARD, ev.EVENT_FORCE_ACTIVATE, True),
    ],
    ids=lambda v: str(v) if not isinstance(v, bool) else ("match" if v else "no-match"),
)
def test_match(registered: ClusterEvent, incoming: ClusterEvent, expected: bool) -> None:
    assert registered.matches(incoming) is expected


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (ev.EVENT_NODE_ADD, "NodeAdd"),
        (ev.EVENT_ASSIGNED_POD_ADD, "AssignedPodAdd"),
        (ev.EVENT_ASSIGNED_POD_UPDATE, "AssignedPodUpdate"),
        (ev.EVENT_ASSIGNED_POD_DELETE, "AssignedPodDelete"),
        (ev.EVENT_UNSCHEDULED_POD_ADD, "UnschedulablePodAdd"),
        (ev.EVENT_UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout"),
        (ev.EVENT_FORCE_ACTIVATE, "ForceActivate"),
        (ClusterEvent(R.NODE, A.UPDATE_NODE_TAINT), "NodeUpdateNodeTaint"),
        (ClusterEvent(R.POD, A.UPDATE_POD_TOLERATION), "PodUpdatePodToleration"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_labels_are_upstreams(event: ClusterEvent, label: str) -> None:
    assert event.label == label


def test_update_is_every_update_bit_and_all_is_everything() -> None:
    assert A.ADD not in A.UPDATE and A.DELETE not in A.UPDATE
    assert A.UPDATE_NODE_LABEL in A.UPDATE and A.UPDATE_POD_SCALE_DOWN in A.UPDATE
    assert A.ALL == A.ADD | A.DELETE | A.UPDATE
    assert A.UPDATE_POD_TOLERATIONS is A.UPDATE_POD_TOLERATION


def test_wildcards_and_any_match() -> None:
    assert ev.EVENT_UNSCHEDULABLE_TIMEOUT.is_wildcard()
    assert not ev.EVENT_NODE_ADD.is_wildcard()
    registered = (ClusterEvent(R.PERSISTENT_VOLUME, A.ADD), ClusterEvent(R.NODE, A.ADD))
    assert ev.match_any_cluster_event(ev.EVENT_NODE_ADD, registered)
    assert not ev.match_any_cluster_event(ev.EVENT_NODE_DELETE, registered)


def test_all_labels_cover_metrics_series() -> None:
    labels = ev.ALL_CLUSTER_EVENT_LABELS
    assert len(labels) == len(set(labels))
    for expected in ("UnschedulableTimeout", "NodeAdd", "AssignedPodUpdate", "PodUpdatePodLabel"):
        assert expected in labels
