"""NodeTable.subset copies are independent of their parent; order() is upstream's nodeTree."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.nodeports import NodePorts
from cluster_sched.plugins.noderesources.fit import new as new_fit
from cluster_sched.testing.builders import make_node, make_pod

GPU = "example.com/gpu"

_COLUMNS = (
    "alive", "allocatable", "requested", "free", "nonzero", "pod_count",
    "allowed_pods", "unschedulable", "zone_code", "seq", "taint_pos", "port_count",
)  # fmt: skip


def _snapshot(table: NodeTable) -> dict[str, object]:
    out: dict[str, object] = {a: getattr(table, a).copy() for a in _COLUMNS}
    out["labels"] = {k: v.copy() for k, v in table.labels.items()}
    out["row_pods"] = [dict(p) for p in table.row_pods]
    out["interners"] = (
        len(table.resources),
        len(table.ports),
        len(table.taints),
        len(table.images),
    )
    return out


def _assert_same(before: dict[str, object], table: NodeTable) -> None:
    after = _snapshot(table)
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, after[key], err_msg=key)
        elif key == "labels":
            assert value.keys() == after[key].keys()  # type: ignore[union-attr]
            for k in value:  # type: ignore[union-attr]
                np.testing.assert_array_equal(value[k], after[key][k])  # type: ignore[index]
        else:
            assert value == after[key], key


@pytest.fixture
def parent() -> NodeTable:
    table = NodeTable()
    for i in range(4):
        table.upsert_node(
            make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10).zone(f"z{i % 2}").obj()
        )
    table.add_pod(1, make_pod("running").req(cpu="1").host_port(80).obj())
    return table


def test_subset_rows_are_copies(parent: NodeTable) -> None:
    sub = parent.subset(np.asarray([1, 3], dtype=np.int64))
    assert sub.names == ["n1", "n3"] and sub.index == {"n1": 0, "n3": 1}
    assert sub.requested[0].tolist() == [1000, 0]
    assert list(sub.row_pods[0]) == ["default/running"]


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda s: s.add_pod(0, make_pod("x").req(cpu="2").obj()), id="add-pod"),
        pytest.param(lambda s: s.remove_pod(0, s.row_pods[0]["default/running"]), id="remove-pod"),
        pytest.param(
            lambda s: s.add_pod(0, make_pod("g").req({GPU: 1}).obj()), id="add-pod-new-resource"
        ),
        pytest.param(
            lambda s: s.add_pod(1, make_pod("hp").host_port(8443, protocol="UDP").obj()),
            id="add-pod-new-host-port",
        ),
    ],
)
def test_mutating_a_subset_leaves_the_parent_untouched(parent: NodeTable, mutate) -> None:  # type: ignore[no-untyped-def]
    before = _snapshot(parent)
    sub = parent.subset(np.asarray([1, 2], dtype=np.int64))
    sub_before = sub.requested.sum() + sub.port_count.sum()
    mutate(sub)
    assert sub.requested.sum() + sub.port_count.sum() != sub_before
    _assert_same(before, parent)


def test_parent_keeps_working_after_a_subset_interned_new_values(parent: NodeTable) -> None:
    """A nominated pod added to a simulation with a resource and a host port no parent row
    has seen must not leave the parent with interned ids its matrices lack."""
    sub = parent.subset(np.asarray([0], dtype=np.int64))
    sub.add_pod(0, make_pod("nominated").req({GPU: 1}).host_port(9090).obj())

    # Filter on the parent with a pod wanting that port and resource
    pod = make_pod("incoming").req({GPU: 1}).host_port(9090).obj()
    state = CycleState()
    ports, fit = NodePorts(), new_fit(None, None)  # type: ignore[arg-type]
    ports.pre_filter(state, pod, None)
    fit.pre_filter(state, pod, None)
    rows = parent.order()
    assert ports.filter(state, pod, NodeSlice(parent, rows)).passed.all()
    fit_verdicts = fit.filter(state, pod, NodeSlice(parent, rows))
    assert not fit_verdicts.passed.any()
    assert fit_verdicts.reasons_of(0) == (f"Insufficient {GPU}",)

    # and accounting the same pod on the parent works and is visible
    parent.add_pod(0, make_pod("real").req({GPU: 1}).host_port(9090).obj())
    assert parent.requested[parent.resources.get(GPU), 0] == 1
    assert not ports.filter(state, pod, NodeSlice(parent, np.asarray([0]))).passed.any()


def test_subset_of_no_rows_is_empty(parent: NodeTable) -> None:
    sub = parent.subset(np.zeros(0, dtype=np.int64))
    assert sub.n_nodes == 0 and len(sub.order()) == 0


# ---------------------------------------------------------------------- order


def _names(table: NodeTable) -> list[str]:
    return [table.names[r] for r in table.order()]


def _build(spec: list[tuple[str, str | None]]) -> NodeTable:
    table = NodeTable()
    for name, zone in spec:
        b = make_node(name)
        if zone is not None:
            b = b.zone(zone)
        table.upsert_node(b.obj())
    return table


@pytest.mark.parametrize(
    ("spec", "steps", "want"),
    [
        pytest.param(
            [("a1", "A"), ("a2", "A"), ("b1", "B"), ("c1", "C"), ("b2", "B"), ("a3", "A")],
            [],
            ["a1", "b1", "c1", "a2", "b2", "a3"],
            id="zones-first-seen-round-robin",
        ),
        pytest.param(
            [("x", None), ("y", None), ("a1", "A")],
            [],
            ["x", "a1", "y"],
            id="no-zone-is-a-zone-of-its-own",
        ),
        pytest.param(
            [("a1", "A"), ("b1", "B"), ("a2", "A")],
            [("remove", "a1")],
            ["a2", "b1"],
            id="zone-keeps-its-place-while-it-has-nodes",
        ),
        pytest.param(
            [("a1", "A"), ("b1", "B"), ("a2", "A")],
            [("remove", "a1"), ("remove", "a2"), ("add", "a3", "A")],
            ["b1", "a3"],
            id="emptied-zone-comes-back-last",
        ),
        pytest.param(
            [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B")],
            [("remove", "a2")],
            ["a1", "b1", "a3"],
            id="removal-inside-a-zone-keeps-order",
        ),
        pytest.param(
            [("a1", "A"), ("a2", "A"), ("b1", "B"), ("b2", "B")],
            [("move", "a1", "B")],
            ["a2", "b1", "b2", "a1"],
            id="zone-change-goes-to-the-end-of-the-new-zone",
        ),
        pytest.param(
            [("a1", "A"), ("b1", "B")],
            [("move", "a1", "A")],
            ["a1", "b1"],
            id="update-without-zone-change-keeps-place",
        ),
        pytest.param(
            [("a1", "A"), ("b1", "B")],
            [("remove", "a1"), ("add", "a1", "A")],
            ["b1", "a1"],
            id="re-added-node-is-new",
        ),
    ],
)
def test_order_is_upstream_node_tree(
    spec: list[tuple[str, str | None]], steps: list[tuple[str, ...]], want: list[str]
) -> None:
    table = _build(spec)
    for step in steps:
        if step[0] == "remove":
            table.remove_node(step[1])
        else:
            table.upsert_node(make_node(step[1]).zone(step[2]).label("v", "2").obj())
    assert _names(table) == want


def test_region_and_zone_form_the_zone_key() -> None:
    """Same zone name in two regions is two zones (upstream GetZoneKey)."""
    table = NodeTable()
    for name, region in (("r1a", "r1"), ("r1b", "r1"), ("r2a", "r2")):
        table.upsert_node(
            make_node(name).zone("z").label("topology.kubernetes.io/region", region).obj()
        )
    assert _names(table) == ["r1a", "r2a", "r1b"]


def test_order_is_cached_until_nodes_change() -> None:
    table = _build([("a1", "A"), ("b1", "B")])
    first = table.order()
    assert table.order() is first
    table.add_pod(0, make_pod("p").obj())  # pods don't reorder nodes
    assert table.order() is first
    table.upsert_node(make_node("c1").zone("C").obj())
    assert _names(table) == ["a1", "b1", "c1"]
