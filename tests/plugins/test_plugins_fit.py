"""NodeResourcesFit Filter: ignored resources and groups, reasons and their order, codes."""

from __future__ import annotations

import numpy as np
import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.config.plugin_args import NodeResourcesFitArgs
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import Code
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.noderesources.fit import Fit
from cluster_sched.testing.builders import make_node, make_pod

FOO = "example.com/foo"
BAR = "vendor.io/bar"


def _verdict(
    pod: Pod, args: NodeResourcesFitArgs | None = None, running: list[Pod] | None = None
) -> tuple[int, tuple[str, ...]]:
    table = NodeTable()
    row = table.upsert_node(
        make_node("n")
        .capacity({FOO: 2, "hugepages-2Mi": "4Mi"}, cpu="4", memory="4Gi", pods=2)
        .obj()
    )
    for p in running or []:
        table.add_pod(row, p)
    plugin = Fit(args or NodeResourcesFitArgs())
    state = CycleState()
    plugin.pre_filter(state, pod, None)
    v = plugin.filter(state, pod, NodeSlice(table, np.asarray([row])))
    return int(v.codes[0]), v.reasons_of(0)


U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize(
    ("requests", "args", "want"),
    [
        pytest.param({BAR: 1}, None, (UU, (f"Insufficient {BAR}",)), id="unknown-extended-resource"),
        pytest.param({BAR: 1}, NodeResourcesFitArgs(ignored_resources=(BAR,)), (0, ()), id="ignored-resource"),
        pytest.param({BAR: 1}, NodeResourcesFitArgs(ignored_resource_groups=("vendor.io",)), (0, ()), id="ignored-group"),
        pytest.param(
            {BAR: 1, FOO: 3}, NodeResourcesFitArgs(ignored_resource_groups=("vendor.io",)),
            (UU, (f"Insufficient {FOO}",)), id="other-group-still-checked",
        ),
        pytest.param(
            {BAR: 1}, NodeResourcesFitArgs(ignored_resource_groups=("vendor",)),
            (UU, (f"Insufficient {BAR}",)), id="group-is-the-whole-prefix",
        ),
        pytest.param(
            {"hugepages-2Mi": "8Mi"}, NodeResourcesFitArgs(ignored_resources=("hugepages-2Mi",)),
            (UU, ("Insufficient hugepages-2Mi",)), id="only-extended-resources-can-be-ignored",
        ),
        pytest.param(
            {"cpu": "5", "memory": "5Gi"}, NodeResourcesFitArgs(ignored_resources=("cpu",)),
            (UU, ("Insufficient cpu", "Insufficient memory")), id="native-never-ignored",
        ),
        pytest.param({FOO: 0, BAR: 0}, None, (0, ()), id="zero-requests-skipped"),
    ],
)  # fmt: skip
def test_ignored_resources(
    requests: dict[str, object],
    args: NodeResourcesFitArgs | None,
    want: tuple[int, tuple[str, ...]],
) -> None:
    assert _verdict(make_pod("p").req(requests).obj(), args) == want


RUNNING = [make_pod("r").req({FOO: 1}, cpu="3", memory="1Gi").obj()]


@pytest.mark.parametrize(
    ("pod", "running", "want"),
    [
        pytest.param(make_pod("p").req(cpu="2").obj(), RUNNING, (U, ("Insufficient cpu",)), id="fits-allocatable-not-free"),
        pytest.param(make_pod("p").req(cpu="5").obj(), RUNNING, (UU, ("Insufficient cpu",)), id="exceeds-allocatable"),
        pytest.param(
            make_pod("p").req({FOO: 2, "hugepages-2Mi": "8Mi"}, cpu="2", memory="4Gi", ephemeral_storage="1Gi").obj(),
            RUNNING,
            (UU, ("Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage", f"Insufficient {FOO}", "Insufficient hugepages-2Mi")),
            id="reason-order-cpu-memory-ephemeral-then-scalars-by-name",
        ),
        pytest.param(
            make_pod("p").req(cpu="2").obj(), [*RUNNING, make_pod("r2").obj()],
            (U, ("Too many pods", "Insufficient cpu")), id="too-many-pods-first",
        ),
        pytest.param(make_pod("p").obj(), [make_pod("a").obj(), make_pod("b").obj()], (U, ("Too many pods",)), id="no-requests-still-needs-a-pod-slot"),
        pytest.param(make_pod("p").req({FOO: 1}, cpu="1").obj(), RUNNING, (0, ()), id="fits"),
    ],
)  # fmt: skip
def test_reasons_and_codes(pod: Pod, running: list[Pod], want: tuple[int, tuple[str, ...]]) -> None:
    assert _verdict(pod, running=running) == want


def test_many_nodes_share_reason_tuples() -> None:
    """Verdicts over many nodes: one interned reason tuple per distinct combination."""
    table = NodeTable()
    for i in range(6):
        table.upsert_node(make_node(f"n{i}").capacity(cpu=str(i), memory=f"{i}Gi", pods=10).obj())
    pod = make_pod("p").req(cpu="3", memory="4Gi").obj()
    plugin, state = Fit(NodeResourcesFitArgs()), CycleState()
    plugin.pre_filter(state, pod, None)
    v = plugin.filter(state, pod, NodeSlice(table, table.order()))
    got = [v.reasons_of(i) for i in range(6)]
    both, mem = ("Insufficient cpu", "Insufficient memory"), ("Insufficient memory",)
    assert got == [both, both, both, mem, (), ()]
    assert len(v.reasons) == 2
