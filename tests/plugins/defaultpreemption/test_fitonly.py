"""The arithmetic dry run (``fitonly``) answers exactly what the general paths answer:
per node the same victims in the same order, the same PDB violation count and the same
failure Status as the node-by-node SelectVictimsOnNode and the batched copies, on random
clusters (several resources incl. an extended one, pod limits, priorities, start times,
PDBs, taints, unschedulable nodes, node selectors, nominated pods, host ports); the
reprieve kernel equals its numpy reference, and the vectorised importance order equals
importance_key's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config, parse_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.plugins.defaultpreemption.batch import (
    select_victims_on_copies,
    select_victims_on_nodes,
)
from cluster_sched.plugins.defaultpreemption.fitonly import (
    fit_only_plan,
    select_victims_fit_only,
)
from cluster_sched.plugins.defaultpreemption.reprieve import reprieve, reprieve_reference
from cluster_sched.plugins.defaultpreemption.victims import (
    importance_key,
    importance_order,
    select_victims_on_node,
)
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.testing.builders import make_namespace, make_node, make_pdb, make_pod

GPU = "example.com/gpu"
FPGA = "example.com/fpga"  # requested by nominated pods only: unknown to the table


@dataclass
class Setup:
    fwk: Any
    state: CycleState
    pod: Pod
    cache: Cache
    table: Any
    nominated: dict[str, list[Pod]]


def _requests(draw: Any, gpu: bool = True) -> dict[str, Any]:
    req: dict[str, Any] = {}
    cpu = draw(st.sampled_from([0, 100, 500, 900, 1500]))
    if cpu:
        req["cpu"] = f"{cpu}m"
    mem = draw(st.sampled_from([0, 100, 900]))
    if mem:
        req["memory"] = f"{mem}Mi"
    if gpu and draw(st.booleans()):
        req[GPU] = draw(st.integers(0, 2))
    return req


@st.composite
def clusters(draw: Any) -> tuple[list[Any], Pod, dict[str, list[Pod]], bool]:
    """(objects, the preemptor, nominated pods by node, whether it has a host port)"""
    objs: list[Any] = [make_namespace("default")]
    n_nodes = draw(st.integers(1, 7))
    for i in range(n_nodes):
        cap: dict[str, Any] = {
            "cpu": draw(st.sampled_from(["1", "2", "4"])),
            "memory": draw(st.sampled_from(["1Gi", "2Gi"])),
            "pods": draw(st.sampled_from([2, 3, 5, 110])),
        }
        if draw(st.booleans()):
            cap[GPU] = draw(st.integers(0, 3))
        b = make_node(f"n{i}").capacity(cap)
        if draw(st.integers(0, 9)) == 0:
            b = b.taint("dedicated", "x")
        if draw(st.integers(0, 9)) == 0:
            b = b.unschedulable()
        if draw(st.booleans()):
            b = b.label("disk", "ssd")
        objs.append(b.obj())
    k = 0
    for i in range(n_nodes):
        for _ in range(draw(st.integers(0, 6))):
            pb = (
                make_pod(f"r{k}")
                .req(_requests(draw))
                .priority(draw(st.sampled_from([-5, 0, 1, 5, 10, 50, 200])))
                .node(f"n{i}")
                .phase("Running")
                .label("app", draw(st.sampled_from(["db", "web", "cache"])))
            )
            if draw(st.booleans()):
                pb = pb.start_time(float(draw(st.integers(0, 5))))
            if draw(st.integers(0, 9)) == 0:
                pb = pb.host_port(8080)
            objs.append(pb.obj())
            k += 1
    for app in ("db", "web"):
        if draw(st.booleans()):
            disrupted = {"r0": 1.0} if draw(st.booleans()) else None
            objs.append(
                make_pdb(
                    app,
                    {"app": app},
                    disruptions_allowed=draw(st.integers(0, 2)),
                    disrupted_pods=disrupted,
                )
            )
    pre = make_pod("p").req(_requests(draw)).priority(draw(st.sampled_from([5, 10, 100])))
    if draw(st.integers(0, 4)) == 0:
        pre = pre.tolerate("dedicated")
    if draw(st.integers(0, 4)) == 0:
        pre = pre.node_selector("disk", "ssd")
    ports = draw(st.integers(0, 9)) == 0
    if ports:
        pre = pre.host_port(8080)  # NodePorts reads the pods: no plan
    nominated: dict[str, list[Pod]] = {}
    for i in range(n_nodes):
        if draw(st.integers(0, 3)) == 0:
            pods = []
            for j in range(draw(st.integers(1, 2))):
                req = _requests(draw)
                if draw(st.integers(0, 4)) == 0:
                    req[FPGA] = 1
                prio = draw(st.sampled_from([5, 10, 100, 300]))
                pods.append(make_pod(f"nom{i}-{j}").req(req).priority(prio).obj())
            nominated[f"n{i}"] = pods
    return objs, pre.obj(), nominated, ports


#: NodeResourcesFit enabled explicitly at Filter runs before the node-only plugins, so
#: a node can fail Fit and (later in Filter order) TaintToleration or NodeUnschedulable
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


def _setup(
    objs: list[Any], pod: Pod, nominated: dict[str, list[Pod]], fit_first: bool = False
) -> Setup:
    cache = Cache()
    cache.load(objs)
    fwk = build_framework(FIT_FIRST if fit_first else default_config(), pod, cache, seed=1)
    fwk.handle.nominated_pods = nominated
    state = CycleState()
    _, s, _ = fwk.run_pre_filter(state, pod, cache.snapshot)
    assert s.is_success
    return Setup(fwk, state, pod, cache, cache.sink.table, nominated)  # type: ignore[attr-defined]


def _key(res: Any) -> Any:
    victims, status = res
    pods = None if victims is None else [p.key for p in victims.pods]
    return pods, None if victims is None else victims.num_pdb_violations, status


def _node_by_node(s: Setup, rows: np.ndarray) -> list[Any]:
    pdbs = list(s.cache.pdbs.values())
    return [
        _key(
            select_victims_on_node(
                s.fwk,
                s.state.clone(),
                s.pod,
                s.table,
                r,
                pdbs,
                s.nominated.get(s.table.names[r], ()),
            )
        )
        for r in rows.tolist()
    ]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_fit_only_equals_the_general_paths(cluster: Any, fit_first: bool) -> None:
    objs, pod, nominated, ports = cluster
    s = _setup(objs, pod, nominated, fit_first)
    assert (s.fwk.filter_names.index("NodeResourcesFit") == 0) == fit_first
    plan = fit_only_plan(s.fwk, s.state, s.pod)
    rows = s.table.order()
    pdbs = list(s.cache.pdbs.values())
    want = _node_by_node(s, rows)
    copies = select_victims_on_copies(s.fwk, s.state, s.pod, s.table, rows, pdbs, s.nominated)
    assert [_key(x) for x in copies] == want
    if ports:
        assert plan is None
        return
    assert plan is not None
    got = select_victims_fit_only(plan, s.fwk, s.state, s.pod, s.table, rows, pdbs, s.nominated)
    assert got is not None
    assert [_key(x) for x in got] == want
    # any window of the rows, in any order, answers the same per node
    part = rows[::-1][: max(1, len(rows) // 2)]
    got = select_victims_fit_only(plan, s.fwk, s.state, s.pod, s.table, part, pdbs, s.nominated)
    assert got is not None
    assert [_key(x) for x in got] == _node_by_node(s, part)


def test_pods_that_read_other_pods_get_no_plan() -> None:
    """Host ports, spread constraints and pod affinity make other plugins read the pods."""
    node = make_node("n0").capacity(cpu="1").obj()
    pods = [
        make_pod("p").req(cpu="1").priority(10).host_port(80).obj(),
        make_pod("p")
        .req(cpu="1")
        .priority(10)
        .label("a", "b")
        .spread(1, "kubernetes.io/hostname", "DoNotSchedule", {"a": "b"})
        .obj(),
        make_pod("p")
        .req(cpu="1")
        .priority(10)
        .pod_anti_affinity("kubernetes.io/hostname", {"a": "b"})
        .obj(),
    ]
    for pod in pods:
        s = _setup([make_namespace("default"), node], pod, {})
        assert fit_only_plan(s.fwk, s.state, pod) is None
    plain = make_pod("p").req(cpu="1").priority(10).obj()
    s = _setup([make_namespace("default"), node], plain, {})
    assert fit_only_plan(s.fwk, s.state, plain) is not None


def test_rows_near_int64_fall_back_to_the_copies() -> None:
    """Pods bound by hand may sum past int64 (the table's overflow ledger): the
    arithmetic declines those rows and select_victims_on_nodes still answers exactly."""
    objs: list[Any] = [make_namespace("default")]
    objs.append(make_node("n0").capacity(cpu="4", memory="8E").obj())
    objs.append(make_node("n1").capacity(cpu="4", memory="8Gi").obj())
    for i in range(3):
        objs.append(make_pod(f"big{i}").req(cpu="1", memory="4E").priority(0).node("n0").obj())
    objs.append(make_pod("small").req(cpu="3", memory="1Gi").priority(0).node("n1").obj())
    pod = make_pod("p").req(cpu="2", memory="1Gi").priority(10).obj()
    s = _setup(objs, pod, {})
    plan = fit_only_plan(s.fwk, s.state, pod)
    assert plan is not None
    rows = s.table.order()
    assert select_victims_fit_only(plan, s.fwk, s.state, pod, s.table, rows, [], {}) is None
    got = select_victims_on_nodes(s.fwk, s.state, pod, s.table, rows, [], {})
    assert [_key(x) for x in got] == _node_by_node(s, rows)


@st.composite
def reprieve_inputs(draw: Any) -> tuple[np.ndarray, ...]:
    k = draw(st.integers(0, 6))
    m = draw(st.integers(0, 3))
    counts = draw(hnp.arrays(np.int64, k, elements=st.integers(0, 5)))
    offsets = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    v = int(offsets[-1])
    small = st.integers(-3, 12)
    free = draw(hnp.arrays(np.int64, (k, m), elements=small))
    nom_free = free - draw(hnp.arrays(np.int64, (k, m), elements=st.integers(0, 4)))
    room = draw(hnp.arrays(np.int64, k, elements=st.integers(-1, 6)))
    nom_room = room - draw(hnp.arrays(np.int64, k, elements=st.integers(0, 2)))
    amount = draw(hnp.arrays(np.int64, m, elements=st.integers(1, 5)))
    req = draw(hnp.arrays(np.int64, (v, m), elements=st.integers(0, 6)))
    return free, room, nom_free, nom_room, amount, offsets, req


@settings(max_examples=500)
@given(reprieve_inputs())
def test_reprieve_kernel_equals_reference(inputs: tuple[np.ndarray, ...]) -> None:
    before = [x.copy() for x in inputs]
    got = reprieve(*inputs)
    assert got.tolist() == reprieve_reference(*inputs).tolist()
    for x, y in zip(inputs, before, strict=True):
        np.testing.assert_array_equal(x, y)  # inputs untouched


@pytest.mark.parametrize(
    ("free", "room", "req", "want"),
    [
        (5, 5, [2, 2, 2], [True, True, False]),  # 2 + 2 back, 1 left for the pod; not a 3rd
        (5, 1, [2, 2, 2], [False, False, False]),  # one pod slot, the preemptor's
        (9, 5, [2, 7, 2], [True, False, True]),  # the big one breaks the fit, the next not
    ],
    ids=["cpu-bound", "pods-bound", "skip-one"],
)
def test_reprieve_examples(free: int, room: int, req: list[int], want: list[bool]) -> None:
    """One node, one resource, the preemptor asks 1: victims come back while they fit."""
    args = (
        np.asarray([[free]]),
        np.asarray([room]),
        np.asarray([[free]]),
        np.asarray([room]),
        np.asarray([1]),
        np.asarray([0, len(req)]),
        np.asarray([[r] for r in req]),
    )
    assert reprieve(*args).tolist() == want
    assert reprieve_reference(*args).tolist() == want


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # node
            st.sampled_from([-(2**31), -1, 0, 7, 2**31 - 1]),  # priority
            st.one_of(st.none(), st.sampled_from([0.0, 1.5, 1e9])),  # start time
        ),
        max_size=12,
    )
)
def test_importance_order_sorts_like_importance_key(specs: list[Any]) -> None:
    pods = []
    for n, (_, prio, start) in enumerate(specs):
        b = make_pod(f"p{n % 3}-{n}").priority(prio)
        pods.append((b.start_time(start) if start is not None else b).obj())
    groups = np.asarray([node for node, _, _ in specs], dtype=np.int64)
    want = sorted(range(len(pods)), key=lambda i: (groups[i], importance_key(pods[i])))
    assert importance_order(pods, groups).tolist() == want
