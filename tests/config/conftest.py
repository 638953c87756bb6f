"""Shared fixtures: the extension points each in-tree plugin implements upstream."""

from __future__ import annotations

import pytest

from cluster_sched.plugins import names

#: What the plugin registry reports for the default plugins (upstream's interfaces).
IN_TREE_CAPABILITIES: dict[str, frozenset[str]] = {
    names.SCHEDULING_GATES: frozenset({"preEnqueue"}),
    names.PRIORITY_SORT: frozenset({"queueSort"}),
    names.NODE_UNSCHEDULABLE: frozenset({"filter"}),
    names.NODE_NAME: frozenset({"filter"}),
    names.TAINT_TOLERATION: frozenset({"filter", "preScore", "score"}),
    names.NODE_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    names.NODE_PORTS: frozenset({"preFilter", "filter"}),
    names.NODE_RESOURCES_FIT: frozenset({"preFilter", "filter", "preScore", "score"}),
    names.VOLUME_RESTRICTIONS: frozenset({"preFilter", "filter"}),
    names.NODE_VOLUME_LIMITS: frozenset({"preFilter", "filter"}),
    names.VOLUME_BINDING: frozenset(
        {"preFilter", "filter", "reserve", "preBind", "preScore", "score"}
    ),
    names.VOLUME_ZONE: frozenset({"preFilter", "filter"}),
    names.POD_TOPOLOGY_SPREAD: frozenset({"preFilter", "filter", "preScore", "score"}),
    names.INTER_POD_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    names.DYNAMIC_RESOURCES: frozenset(
        {"preEnqueue", "preFilter", "filter", "postFilter", "reserve", "preBind"}
    ),
    names.DEFAULT_PREEMPTION: frozenset({"postFilter"}),
    names.NODE_RESOURCES_BALANCED_ALLOCATION: frozenset({"preScore", "score"}),
    names.IMAGE_LOCALITY: frozenset({"score"}),
    names.DEFAULT_BINDER: frozenset({"bind"}),
}


@pytest.fixture
def capabilities() -> dict[str, frozenset[str]]:
    return dict(IN_TREE_CAPABILITIES)
