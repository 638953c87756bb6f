"""Pass 1 of Filter with nominated pods on columns (``nominated_filter.
first_pass_on_columns``) gives every node the Status that pass 1 on copies of the rows
gives, and that node-by-node RunFilterPluginsWithNominatedPods gives: on random
clusters with taints, unschedulable nodes, node selectors, pod limits, an extended
resource (some nominees request one no node has), NodeResourcesFit before or after the
node-only plugins in Filter order."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config, parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FilterVerdicts
from cluster_sched.plugins.defaultpreemption.fitonly import fit_only_plan
from cluster_sched.scheduler import nominated_filter
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.scheduler.nodesource import LocalSource
from cluster_sched.testing.builders import make_namespace, make_node, make_pod

GPU = "example.com/gpu"
FPGA = "example.com/fpga"  # requested by nominees only: no node has it

#: NodeResourcesFit enabled explicitly at Filter runs before the node-only plugins
FIT_FIRST = parse_config(
    {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"filter": {"enabled": [{"name": "NodeResourcesFit"}]}},
            }
        ],
    }
)


def _req(draw: Any) -> dict[str, Any]:
    req: dict[str, Any] = {"cpu": f"{draw(st.sampled_from([100, 500, 900, 1500]))}m"}
    if draw(st.booleans()):
        req["memory"] = f"{draw(st.sampled_from([100, 900]))}Mi"
    if draw(st.integers(0, 3)) == 0:
        req[GPU] = draw(st.integers(0, 2))
    return req


@st.composite
def clusters(draw: Any) -> tuple[list[Any], Pod, dict[str, list[Pod]]]:
    objs: list[Any] = [make_namespace("default")]
    n_nodes = draw(st.integers(1, 10))
    for i in range(n_nodes):
        cap: dict[str, Any] = {
            "cpu": draw(st.sampled_from(["1", "2", "4"])),
            "memory": "2Gi",
            "pods": draw(st.sampled_from([1, 2, 3, 110])),
        }
        if draw(st.booleans()):
            cap[GPU] = draw(st.integers(0, 3))
        b = make_node(f"n{i}").capacity(cap)
        if draw(st.integers(0, 5)) == 0:
            b = b.taint("dedicated", "x")
        if draw(st.integers(0, 7)) == 0:
            b = b.unschedulable()
        if draw(st.booleans()):
            b = b.label("disk", "ssd")
        objs.append(b.obj())
        for j in range(draw(st.integers(0, 3))):
            objs.append(make_pod(f"r{i}-{j}").req(_req(draw)).node(f"n{i}").obj())
    pre = make_pod("p").uid("uid-p").req(_req(draw)).priority(10)
    if draw(st.integers(0, 3)) == 0:
        pre = pre.node_selector("disk", "ssd")
    nominated: dict[str, list[Pod]] = {}
    for i in range(n_nodes):
        if draw(st.booleans()):
            pods = []
            for j in range(draw(st.integers(1, 2))):
                req = _req(draw)
                if draw(st.integers(0, 5)) == 0:
                    req[FPGA] = 1
                prio = draw(st.sampled_from([5, 10, 20]))
                pods.append(make_pod(f"nom{i}-{j}").uid(f"u{i}-{j}").req(req).priority(prio))
            nominated[f"n{i}"] = [b.obj() for b in pods]
    return objs, pre.obj(), nominated


def _statuses(
    objs: list[Any], pod: Pod, nominated: dict[str, list[Pod]], fit_first: bool, how: str
) -> list[Any]:
    cache = Cache()
    cache.load(objs)
    fwk = build_framework(FIT_FIRST if fit_first else default_config(), pod, cache, seed=1)
    table = cache.sink.table  # type: ignore[attr-defined]
    state = CycleState()
    fwk.run_pre_filter(state, pod, cache.snapshot)
    assert fit_only_plan(fwk, state, pod) is not None
    rows = table.order()
    verdicts = FilterVerdicts.of(LocalSource(table).filter(fwk, state, pod, rows), fwk.filter_names)
    noms = nominated_filter.nominated_rows(nominated, table, pod)
    if how == "node":
        ges = {int(r): noms.pods[int(r)] for r in noms.rows.tolist()}
        return [
            nominated_filter._one_node(fwk, state, pod, table, r, ges[r])
            if r in ges
            else verdicts(i)
            for i, r in enumerate(rows.tolist())
        ]
    out = nominated_filter.filter_with_nominated(
        fwk, state, pod, table, rows, noms, verdicts, columns=how == "columns"
    )
    return [out(i) for i in range(len(rows))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_first_pass_on_columns_equals_copies_and_node_by_node(
    cluster: Any, fit_first: bool
) -> None:
    objs, pod, nominated = cluster
    got = _statuses(objs, pod, nominated, fit_first, "columns")
    event(f"failing {min(sum(1 for s in got if not s.is_success), 3)}")
    assert got == _statuses(objs, pod, nominated, fit_first, "copies")
    assert got == _statuses(objs, pod, nominated, fit_first, "node")
