"""Nodes reporting equal capacity and allocatable share one parsed map of each."""

from __future__ import annotations

import pytest

from cluster_sched.api.manifest import parse_node
from cluster_sched.errors import InvalidObjectError
from cluster_sched.testing import make_node


def test_a_node_pool_shares_its_parsed_resource_lists() -> None:
    a, b = (
        make_node(n).capacity(cpu="4", memory="8Gi", pods=110).allocatable(cpu="4").obj()
        for n in "ab"
    )
    c = make_node("c").capacity(cpu="8", memory="8Gi", pods=110).allocatable(cpu="8").obj()
    assert a.allocatable is b.allocatable and a.capacity is b.capacity
    assert a.capacity == {"cpu": 4000, "memory": 8 * 2**30, "pods": 110}
    assert c.allocatable["cpu"] == 8000 and a.allocatable["cpu"] == 4000


@pytest.mark.parametrize("field", ["capacity", "allocatable"])
def test_a_bad_quantity_is_reported_on_its_field_every_time(field: str) -> None:
    doc = make_node("a").capacity(cpu="4").manifest()
    doc["status"][field] = {"cpu": "lots"}
    for _ in range(2):
        with pytest.raises(InvalidObjectError, match=rf"status\.{field}\.cpu"):
            parse_node(doc)
