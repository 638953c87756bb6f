"""``--record-results``: a running coordinator writes kube-scheduler-simulator's result
annotations onto matching pods, read back with the official ``kubernetes`` client from
the API served over the same store.

Four nodes: n1 and n4 fit (and tie), n2 has an untolerated taint, n3 is too small. A
matching pod is created through the API, scheduled by the coordinator; its annotations
must name the node it was bound to as selected, explain each other node's first failing
Filter plugin, carry the feasible nodes' raw and weighted scores, the binder's success, and
one history entry. A pod that does not match gets none; one that fits nowhere gets its
failure recorded with no selected node.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from cluster_sched.config.load import load_config
from cluster_sched.kubeapi import ApiServer, ApiServerOptions
from cluster_sched.scheduler.assembly import ExecutorOptions, new_scheduler
from cluster_sched.scheduler.coordinator import Coordinator
from cluster_sched.scheduler.explain import simulator as sim
from cluster_sched.scheduler.explain.recording import ResultRecorder, install
from cluster_sched.store.store import Store
from cluster_sched.testing.builders import make_node

#: Guards a hung loop; never a performance assertion.
MAX_STEPS = 400
#: the default profile's Filter plugins this pod's PreFilter does not skip, in the
#: order the framework runs them (skipped plugins are never called: absent)
RUN = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeResourcesFit"]


def _pod(name: str, cpu: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
        },
    }


@pytest.fixture(params=[ExecutorOptions("local"), ExecutorOptions("shards", shards=2)],
                ids=["local", "shards"])  # fmt: skip
def running(
    request: pytest.FixtureRequest, redis_client: redis.Redis, tmp_path: Path
) -> Iterator[tuple[Coordinator, ResultRecorder, k8s.CoreV1Api]]:
    store = Store(redis_client)
    store.apply_many(
        [
            make_node("n1").capacity(cpu="4", pods=10).manifest(),
            make_node("n2").capacity(cpu="4", pods=10).taint("dedicated", "x").manifest(),
            make_node("n3").capacity(cpu="1", pods=10).manifest(),
            make_node("n4").capacity(cpu="4", pods=10).manifest(),
        ]
    )
    coord = new_scheduler(store, redis_client, load_config(None), options=request.param, seed=3)
    recorder = install(coord, "trace=yes", seed=3)
    coord.start()
    server = ApiServer(Store(redis_client), ApiServerOptions()).start()
    api_client = k8s_config.new_client_from_config(
        config_file=server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    )
    try:
        yield coord, recorder, k8s.CoreV1Api(api_client)
    finally:
        api_client.close()
        server.close()
        coord.close()


def _run_until(coord: Coordinator, done: Any) -> None:
    for _ in range(MAX_STEPS):
        coord.step(pop_timeout=0.01)
        coord.binder.wait_idle(5.0)  # type: ignore[attr-defined]
        coord.process_binding_outcomes()
        coord.poll_informer()
        if done():
            return
    raise AssertionError("the coordinator never got there")


def _annotations(core: k8s.CoreV1Api, name: str) -> dict[str, str]:
    return core.read_namespaced_pod(name, "default").metadata.annotations or {}


def test_a_scheduled_pod_carries_the_simulators_results(
    running: tuple[Coordinator, ResultRecorder, k8s.CoreV1Api],
) -> None:
    coord, recorder, core = running
    core.create_namespaced_pod("default", _pod("traced", "2", {"trace": "yes"}))
    core.create_namespaced_pod("default", _pod("plain", "2", {"trace": "no"}))
    _run_until(coord, lambda: sim.HISTORY in _annotations(core, "traced"))
    _run_until(coord, lambda: core.read_namespaced_pod("plain", "default").spec.node_name)

    traced = core.read_namespaced_pod("traced", "default")
    ann = traced.metadata.annotations
    # n1 and n4 tie: the dry run drew with a copy of the scheduler's RNG, so its
    # choice is the node the pod was bound to
    assert traced.spec.node_name in ("n1", "n4")
    assert ann[sim.SELECTED_NODE] == traced.spec.node_name
    filt = json.loads(ann[sim.FILTER])
    assert set(filt) == {"n1", "n2", "n3", "n4"}
    # each node shows the plugins the framework ran on it, up to its first failure
    for fit in ("n1", "n4"):
        assert list(filt[fit]) == sorted(RUN) and set(filt[fit].values()) == {"passed"}
    assert filt["n2"] == {
        "NodeUnschedulable": "passed",
        "NodeName": "passed",
        "TaintToleration": "node(s) had untolerated taint(s)",
    }
    assert filt["n3"] == {**{p: "passed" for p in RUN[:3]}, "NodeResourcesFit": "Insufficient cpu"}
    status = json.loads(ann[sim.PREFILTER_STATUS])
    assert status["NodeResourcesFit"] == "success" and status["NodePorts"] == ""  # Skip
    scores, final = json.loads(ann[sim.SCORE]), json.loads(ann[sim.FINALSCORE])
    assert set(scores) == set(final) == {"n1", "n4"} and scores["n1"] == scores["n4"]
    assert scores["n1"]["TaintToleration"] == "0"  # raw: no intolerable taints
    assert final["n1"]["TaintToleration"] == str(3 * 100)  # normalised 100 x weight 3
    assert json.loads(ann[sim.BIND]) == {"DefaultBinder": "success"}
    assert json.loads(ann[sim.RESERVE]) == {p: "success" for p in json.loads(ann[sim.RESERVE])}
    history = json.loads(ann[sim.HISTORY])
    assert history == [{k: ann[k] for k in sim.KEYS}]

    plain = core.read_namespaced_pod("plain", "default")
    assert plain.spec.node_name  # scheduled, but not selected for recording
    assert not any(
        k.startswith("kube-scheduler-simulator") for k in plain.metadata.annotations or {}
    )
    assert recorder.written == 1 and not recorder.pending
    assert recorder.disagreed == 0  # the dry run's choice was the attempt's


def test_an_unschedulable_pod_records_why_and_no_node(
    running: tuple[Coordinator, ResultRecorder, k8s.CoreV1Api],
) -> None:
    coord, recorder, core = running
    core.create_namespaced_pod("default", _pod("huge", "64", {"trace": "yes"}))
    _run_until(coord, lambda: sim.HISTORY in _annotations(core, "huge"))
    ann = _annotations(core, "huge")
    assert ann[sim.SELECTED_NODE] == ""
    filt = json.loads(ann[sim.FILTER])
    assert filt["n1"]["NodeResourcesFit"] == "Insufficient cpu"
    assert json.loads(ann[sim.SCORE]) == {} and json.loads(ann[sim.BIND]) == {}
    # PostFilter ran (no victim found): every filtered node listed, none nominated
    assert json.loads(ann[sim.POSTFILTER]) == {"n1": {}, "n2": {}, "n3": {}, "n4": {}}
    # the annotation write is an update of an unschedulable pod: it must not requeue it
    # into a loop of attempts (each would append to the history)
    for _ in range(20):
        coord.step(pop_timeout=0.01)
        coord.poll_informer()
    assert len(json.loads(_annotations(core, "huge")[sim.HISTORY])) == 1
    assert recorder.written == 1
