"""The column screen of the candidate search (``search``) leaves the search's answer as it
was: on random clusters (priorities, start times, PDBs, taints, node selectors, pod
limits, an extended resource, nominated pods given as a mapping, a nominator-like view
or a callable) the candidates, the chosen node, its victims and the PostFilter status are
those of the unscreened search; a node the screen rules out is never a candidate of the
node-by-node SelectVictimsOnNode; and the per-row sums of lower-priority pods kept
between preemptions (``lower``) equal sums computed afresh after any adds and removes."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FitError
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.defaultpreemption.fitonly import fit_only_plan, select_victims_fit_only
from cluster_sched.plugins.defaultpreemption.lower import lower_columns
from cluster_sched.plugins.defaultpreemption.search import screen
from cluster_sched.plugins.defaultpreemption.victims import select_victims_on_node
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.explain.decision import build_framework
from cluster_sched.testing.builders import make_namespace, make_node, make_pdb, make_pod

GPU = "example.com/gpu"


class _View(Mapping[str, Sequence[Pod]]):
    """A nominator-like view: ``live_items`` filters by priority and uid as it reads."""

    def __init__(self, by_node: dict[str, list[Pod]]) -> None:
        self._by_node = by_node

    def __getitem__(self, node: str) -> Sequence[Pod]:
        return self._by_node[node]

    def __iter__(self) -> Any:
        return iter(self._by_node)

    def __len__(self) -> int:
        return len(self._by_node)

    def live_items(self, at_least: int, except_uid: str) -> list[tuple[str, list[Pod]]]:
        out = []
        for node, pods in self._by_node.items():
            ge = [p for p in pods if p.priority >= at_least and p.uid != except_uid]
            if ge:
                out.append((node, ge))
        return out


def _req(draw: Any, cpus: Sequence[int] = (100, 500, 900, 1500, 3000)) -> dict[str, Any]:
    req: dict[str, Any] = {"cpu": f"{draw(st.sampled_from(cpus))}m"}
    if draw(st.booleans()):
        req["memory"] = f"{draw(st.sampled_from([100, 900]))}Mi"
    if draw(st.integers(0, 4)) == 0:
        req[GPU] = draw(st.integers(0, 2))
    return req


@st.composite
def clusters(draw: Any) -> tuple[list[Any], Pod, dict[str, list[Pod]]]:
    objs: list[Any] = [make_namespace("default")]
    n_nodes = draw(st.integers(1, 8))
    for i in range(n_nodes):
        cap: dict[str, Any] = {
            "cpu": draw(st.sampled_from(["2", "4"])),
            "memory": "4Gi",
            "pods": draw(st.sampled_from([3, 5, 110])),
        }
        if draw(st.booleans()):
            cap[GPU] = draw(st.integers(0, 3))
        b = make_node(f"n{i}").capacity(cap)
        if draw(st.integers(0, 9)) == 0:
            b = b.taint("dedicated", "x")
        if draw(st.booleans()):
            b = b.label("disk", "ssd")
        objs.append(b.obj())
    k = 0
    for i in range(n_nodes):
        for _ in range(draw(st.integers(1, 6))):
            pb = (
                make_pod(f"r{k}")
                .req(_req(draw))
                .priority(draw(st.sampled_from([0, 1, 5, 10, 50, 200])))
                .node(f"n{i}")
                .phase("Running")
                .label("app", draw(st.sampled_from(["db", "web"])))
            )
            if draw(st.booleans()):
                pb = pb.start_time(float(draw(st.integers(0, 5))))
            objs.append(pb.obj())
            k += 1
    if draw(st.booleans()):
        objs.append(make_pdb("db", {"app": "db"}, disruptions_allowed=draw(st.integers(0, 2))))
    pre = (
        make_pod("p")
        .req(_req(draw, (1500, 2000, 3000)))
        .priority(draw(st.sampled_from([5, 10, 100])))
    )
    if draw(st.integers(0, 4)) == 0:
        pre = pre.node_selector("disk", "ssd")
    nominated: dict[str, list[Pod]] = {}
    for i in range(n_nodes):
        if draw(st.integers(0, 2)) == 0:
            nominated[f"n{i}"] = [
                make_pod(f"nom{i}-{j}")
                .req(_req(draw))
                .priority(draw(st.sampled_from([5, 10, 100, 300])))
                .obj()
                for j in range(draw(st.integers(1, 2)))
            ]
    return objs, pre.obj(), nominated


def _lookup(kind: str, nominated: dict[str, list[Pod]]) -> Any:
    if kind == "view":
        return _View(nominated)
    if kind == "callable":
        return lambda node: nominated.get(node, ())
    return nominated


def _setup(objs: list[Any], pod: Pod, lookup: Any, absolute: int) -> tuple[Any, Cache, Any]:
    cache = Cache()
    cache.load(objs)
    fwk = build_framework(default_config(), pod, cache, seed=3)
    fwk.handle.nominated_pods = lookup
    pl = fwk.plugins["DefaultPreemption"]
    pl.args = dataclasses.replace(
        pl.args, min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=absolute
    )
    return fwk, cache, pl


def _preempt(objs: list[Any], pod: Pod, lookup: Any, absolute: int, screened: bool) -> Any:
    fwk, cache, pl = _setup(objs, pod, lookup, absolute)
    pl.screen_nodes = screened
    table = cache.sink.table  # type: ignore[attr-defined]
    try:
        Scheduler(0, random.Random(5)).schedule_pod(fwk, CycleState(), pod, table, cache.snapshot)
    except FitError as err:
        state = CycleState()
        fwk.run_pre_filter(state, pod, cache.snapshot)
        diagnosis = err.diagnosis.node_to_status
        tables = [table]
        found = pl.find_candidates(fwk, state, pod, diagnosis, tables, cache.snapshot)
        candidates = [(c.node_name, [v.key for v in c.victims.pods]) for c in found[0]]
        fwk.handle.rng.seed(11)
        return candidates, fwk.run_post_filter(state, pod, diagnosis)
    return None  # the pod fits somewhere: no PostFilter


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(["dict", "view", "callable"]), st.sampled_from([1, 2, 3, 100]))
def test_screened_search_equals_the_full_search(cluster: Any, kind: str, absolute: int) -> None:
    objs, pod, nominated = cluster
    lookup = _lookup(kind, nominated)
    want = _preempt(objs, pod, lookup, absolute, screened=False)
    got = _preempt(objs, pod, lookup, absolute, screened=True)
    event("fits" if want is None else f"candidates {min(len(want[0]), 2)}")
    assert got == want


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(["dict", "view", "callable"]))
def test_a_node_the_screen_rules_out_is_no_candidate(cluster: Any, kind: str) -> None:
    objs, pod, nominated = cluster
    lookup = _lookup(kind, nominated)
    fwk, cache, _ = _setup(objs, pod, lookup, 100)
    state = CycleState()
    _, s, _ = fwk.run_pre_filter(state, pod, cache.snapshot)
    assert s.is_success
    plan = fit_only_plan(fwk, state, pod)
    assert plan is not None  # no pod here reads other pods
    table = cache.sink.table  # type: ignore[attr-defined]
    rows = table.order()
    keep = screen(plan, pod, table, rows, lookup)
    pdbs = list(cache.pdbs.values())
    event(f"ruled out {min(int((~keep).sum()), 3)}")
    for r in rows[~keep].tolist():
        noms = nominated.get(table.names[r], ())
        victims, status = select_victims_on_node(fwk, state.clone(), pod, table, r, pdbs, noms)
        assert victims is None and not status.is_success


def _fresh_sums(table: NodeTable, priority: int, names: list[str]) -> tuple[list[int], ...]:
    rows = table.order().tolist()
    count = [sum(1 for p in table.row_pods[r].values() if p.priority < priority) for r in rows]
    sums = [
        [
            sum(p.requests.get(n, 0) for p in table.row_pods[r].values() if p.priority < priority)
            for r in rows
        ]
        for n in names
    ]
    return count, *sums


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 4), st.sampled_from([0, 5, 10, 50])),
        max_size=30,
    ),
    st.lists(st.sampled_from([5, 10, 60]), min_size=1, max_size=4),
)
def test_lower_sums_follow_adds_and_removes(ops: list[Any], probes: list[int]) -> None:
    """ops: (node, pod slot, priority); a slot already on the node is removed instead."""
    table = NodeTable()
    for i in range(4):
        table.upsert_node(make_node(f"n{i}").capacity(cpu="8", memory="8Gi", pods=110).obj())
    names = ["cpu", "memory", GPU]
    on: dict[tuple[int, int], Pod] = {}

    def check(priority: int) -> None:
        rows = table.order()
        count, sums = lower_columns(table, priority, names, rows)
        want = _fresh_sums(table, priority, names)
        assert [count.tolist(), *sums.tolist()] == [list(w) for w in want]

    for step, (node, slot, prio) in enumerate(ops):
        row = table.index[f"n{node}"]
        pod = on.pop((node, slot), None)
        if pod is not None:
            if step % 2:
                table.remove_pod(row, pod)
            else:
                table.add_pods([row], [pod], -1)
        else:
            req = {"cpu": f"{100 + step}m", GPU: slot}
            pod = make_pod(f"x{node}-{slot}").req(req).priority(prio).obj()
            on[(node, slot)] = pod
            if step % 2:
                table.add_pod(row, pod)
            else:
                table.add_pods([row], [pod])
        check(probes[step % len(probes)])
    for p in probes:
        check(p)
    assert np.all(table.row_version >= 0)


@st.composite
def histories(draw: Any) -> tuple[list[Any], Pod, dict[str, list[Pod]], list[Any]]:
    """A cluster and a list of changes: ("add", node, pod), ("remove", node, slot),
    ("restart", node, slot, start) (the same pod object replaced, accounting unchanged),
    ("nominate", node, pod), ("denominate", node), ("resize", node, cpu)."""
    objs, pod, nominated = draw(clusters())
    nodes = [o.meta.name for o in objs if type(o).__name__ == "Node"]
    changes: list[Any] = []
    for k in range(draw(st.integers(1, 8))):
        kind = draw(
            st.sampled_from(["add", "remove", "restart", "nominate", "denominate", "resize"])
        )
        node = draw(st.sampled_from(nodes))
        if kind == "add":
            prio = draw(st.sampled_from([0, 5, 50]))
            new = make_pod(f"h{k}").req(_req(draw)).priority(prio).node(node).phase("Running")
            changes.append((kind, node, new.obj()))
        elif kind in ("remove", "restart"):
            changes.append((kind, node, draw(st.integers(0, 5)), float(draw(st.integers(0, 9)))))
        elif kind == "nominate":
            nom = make_pod(f"m{k}").req(_req(draw)).priority(draw(st.sampled_from([5, 100])))
            changes.append((kind, node, nom.obj()))
        elif kind == "resize":
            changes.append((kind, node, draw(st.sampled_from(["2", "3", "4"]))))
        else:
            changes.append((kind, node))
    return objs, pod, nominated, changes


def _apply(change: Any, cache: Cache, nominated: dict[str, list[Pod]]) -> None:
    table = cache.sink.table  # type: ignore[attr-defined]
    kind, node = change[0], change[1]
    row = table.index[node]
    pods = list(table.row_pods[row].values())
    if kind == "add":
        table.add_pod(row, change[2])
    elif kind == "remove" and pods:
        table.remove_pod(row, pods[change[2] % len(pods)])
    elif kind == "restart" and pods:
        old = pods[change[2] % len(pods)]
        cache.sink.replace_pod(node, evolve(old, start_time=change[3]))  # type: ignore[attr-defined]
    elif kind == "nominate":
        nominated.setdefault(node, []).append(change[2])
    elif kind == "denominate":
        nominated.pop(node, None)
    elif kind == "resize":
        table.upsert_node(make_node(node).capacity(cpu=change[2], memory="4Gi", pods=110).obj())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_remembered_dry_runs_follow_the_cluster(history: Any) -> None:
    """The arithmetic dry run reuses a node's earlier answer only while nothing it read
    changed: after every change its answers equal SelectVictimsOnNode's, node by node."""
    objs, pod, nominated, changes = history
    fwk, cache, _ = _setup(objs, pod, nominated, 100)
    table = cache.sink.table  # type: ignore[attr-defined]
    for change in [None, *changes]:
        if change is not None:
            _apply(change, cache, nominated)
        state = CycleState()
        fwk.run_pre_filter(state, pod, cache.snapshot)
        plan = fit_only_plan(fwk, state, pod)
        assert plan is not None
        rows = table.order()
        pdbs = list(cache.pdbs.values())
        got = select_victims_fit_only(plan, fwk, state, pod, table, rows, pdbs, nominated)
        assert got is not None
        for r, res in zip(rows.tolist(), got, strict=True):
            want = select_victims_on_node(
                fwk, state.clone(), pod, table, r, pdbs, nominated.get(table.names[r], ())
            )
            assert _answer(res) == _answer(want)


def _answer(res: Any) -> Any:
    victims, status = res
    if victims is None:
        return None, status
    return [(p.key, p.start_time) for p in victims.pods], victims.num_pdb_violations, status
