"""NodePorts: upstream HostPortInfo.CheckConflict rules, sidecar ports, Skip."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import Code
from cluster_sched.nodetable.ports import pod_host_ports
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.nodeports import ERR_REASON, NodePorts
from cluster_sched.testing.builders import make_node, make_pod


def _pod(name: str, *ports: tuple[int, str, str]) -> Pod:
    b = make_pod(name)
    for port, protocol, ip in ports:
        b = b.host_port(port, protocol=protocol, host_ip=ip)
    return b.obj()


def _fits(existing: list[Pod], wanted: Pod) -> bool:
    table = NodeTable()
    row = table.upsert_node(make_node("n").capacity(pods=10).obj())
    for p in existing:
        table.add_pod(row, p)
    state, plugin = CycleState(), NodePorts()
    _, status = plugin.pre_filter(state, wanted, None)
    if status.is_skip:
        return True
    verdicts = plugin.filter(state, wanted, NodeSlice(table, np.asarray([row])))
    if verdicts.passed[0]:
        return True
    assert verdicts.codes[0] == Code.UNSCHEDULABLE and verdicts.reasons_of(0) == (ERR_REASON,)
    return False


TCP, UDP = "TCP", "UDP"


@pytest.mark.parametrize(
    ("used", "wanted", "fits"),
    [
        # upstream node_ports_test.go TestNodePorts / HostPortInfo tests
        ([], [(8080, TCP, "")], True),
        ([(8080, TCP, "127.0.0.1")], [(8080, UDP, "127.0.0.1")], True),
        ([(8080, TCP, "127.0.0.1")], [(8080, TCP, "127.0.0.1")], False),
        ([(8080, TCP, "127.0.0.1")], [(8080, TCP, "127.0.0.2")], True),
        ([(8080, TCP, "127.0.0.1")], [(8081, TCP, "127.0.0.1")], True),
        ([(8080, TCP, "127.0.0.1")], [(8080, TCP, "0.0.0.0")], False),
        ([(8080, TCP, "127.0.0.1")], [(8080, TCP, "")], False),  # "" is 0.0.0.0
        ([(8080, TCP, "0.0.0.0")], [(8080, TCP, "127.0.0.1")], False),
        ([(8080, TCP, "")], [(8080, TCP, "10.0.0.1")], False),
        ([(8080, UDP, "0.0.0.0")], [(8080, TCP, "127.0.0.1")], True),
        (
            [(8080, TCP, "0.0.0.0"), (8081, UDP, "0.0.0.0")],
            [(8082, TCP, ""), (8081, UDP, "10.0.0.1")],
            False,
        ),
        ([(53, "SCTP", "")], [(53, TCP, ""), (53, UDP, "")], True),
        ([(53, "SCTP", "")], [(53, "SCTP", "1.2.3.4")], False),
    ],
    ids=lambda v: str(v),
)
def test_host_ip_rules(
    used: list[tuple[int, str, str]], wanted: list[tuple[int, str, str]], fits: bool
) -> None:
    existing = [_pod(f"e{i}", p) for i, p in enumerate(used)]
    assert _fits(existing, _pod("w", *wanted)) is fits


def _with_init(name: str, restart_policy: str | None, host_port: int = 9000) -> Pod:
    doc = make_pod(name).manifest()
    init: dict[str, Any] = {
        "name": "init",
        "image": "x",
        "ports": [{"containerPort": 1, "hostPort": host_port}],
    }
    if restart_policy:
        init["restartPolicy"] = restart_policy
    doc["spec"]["initContainers"] = [init]
    return parse_pod(doc, source="<test>")


@pytest.mark.parametrize(
    ("restart_policy", "counts"),
    [("Always", True), (None, False)],
    ids=["sidecar-ports-count", "init-container-ports-do-not"],
)
def test_init_container_ports(restart_policy: str | None, counts: bool) -> None:
    """upstream GetHostPorts: sidecars run for the pod's life, so their ports are in use."""
    pod = _with_init("side", restart_policy)
    assert bool(pod_host_ports(pod)) is counts
    assert _fits([pod], _pod("w", (9000, TCP, ""))) is not counts  # as an existing pod
    assert _fits([_pod("e", (9000, TCP, ""))], pod) is not counts  # as the incoming pod


def test_pod_without_host_ports_is_skipped() -> None:
    state = CycleState()
    _, status = NodePorts().pre_filter(state, make_pod("p").obj(), None)
    assert status.is_skip


def test_removing_the_pod_frees_its_port() -> None:
    table = NodeTable()
    row = table.upsert_node(make_node("n").capacity(pods=10).obj())
    user = _pod("user", (80, TCP, ""))
    table.add_pod(row, user)
    wanted = _pod("w", (80, TCP, "10.1.1.1"))
    state, plugin = CycleState(), NodePorts()
    plugin.pre_filter(state, wanted, None)
    assert not plugin.filter(state, wanted, NodeSlice(table, np.asarray([row]))).passed[0]
    table.remove_pod(row, user)
    assert plugin.filter(state, wanted, NodeSlice(table, np.asarray([row]))).passed[0]
