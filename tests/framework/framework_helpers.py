"""Small fakes shared by the framework runtime tests: a pod, a five-node table fixture
and a Framework built straight from plugin instances."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.testing.builders import make_node, make_pod

POD = make_pod("p").obj()


def _framework(
    points: dict[str, Sequence[Any]], weights: dict[str, int] | None = None
) -> Framework:
    weights = weights or {}
    plugins = {
        point: [(pl, weights.get(pl.name, 1)) for pl in pls] for point, pls in points.items()
    }
    return Framework("test-profile", plugins, Handle(profile_name="test-profile"))


@pytest.fixture
def table() -> NodeTable:
    t = NodeTable()
    for i in range(5):
        t.upsert_node(make_node(f"n{i}").capacity(cpu="1", pods=10).obj())
    return t


def _all(table: NodeTable) -> NodeSlice:
    return NodeSlice(table, table.order())
