"""NodePorts: a pod's hostPorts must be free on the node (same protocol and port, with
0.0.0.0 conflicting with every address)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.status import SUCCESS, Code, Status, skip
from cluster_sched.framework.verdicts import NodeVerdicts
from cluster_sched.nodetable.ports import PortKey, pod_host_ports
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.names import NODE_PORTS

NAME = NODE_PORTS
STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    ports: tuple[PortKey, ...]


def conflicts(wanted: PortKey, used: PortKey) -> bool:
    """Upstream HostPortInfo.CheckConflict for one pair ("" stands for 0.0.0.0)."""
    w_ip, w_proto, w_port = wanted
    u_ip, u_proto, u_port = used
    if w_proto != u_proto or w_port != u_port:
        return False
    return w_ip == "" or u_ip == "" or w_ip == u_ip


def conflicting_columns(table: NodeTable, wanted: tuple[PortKey, ...]) -> np.ndarray:
    """Port columns any wanted port conflicts with (loop over distinct ports in use)."""
    return np.asarray(
        [p for p, used in enumerate(table.ports.values) if any(conflicts(w, used) for w in wanted)],
        dtype=np.intp,
    )


class NodePorts:
    name = NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        ports = tuple(pod_host_ports(pod))
        if not ports:
            return None, skip()
        state.write(STATE_KEY, _PreFilterState(ports))
        return None, SUCCESS

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        s: _PreFilterState | None = state.get(STATE_KEY)
        ports = s.ports if s is not None else tuple(pod_host_ports(pod))
        cols = conflicting_columns(nodes.table, ports) if ports else np.zeros(0, dtype=np.intp)
        if not len(cols):
            return NodeVerdicts.passing(len(nodes))
        fails = np.zeros(len(nodes), dtype=bool)
        for p in cols.tolist():  # distinct conflicting ports, not nodes
            fails |= nodes.take(nodes.table.port_count[p]) > 0
        return NodeVerdicts.from_mask(fails, Code.UNSCHEDULABLE, ERR_REASON)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A deleted pod may free the ports (ports are immutable: no pod updates); a new
        node has every port free, no hint needed (upstream, hints on: Node/Add only)."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        )

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Queue only when the deleted pod held (or was nominated with) a host port this
        pod wants."""
        if old is None:
            return QueueingHint.QUEUE
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        freed = pod_host_ports(old)
        wanted = pod_host_ports(pod)
        if any(conflicts(w, used) for w in wanted for used in freed):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Handle) -> NodePorts:
    return NodePorts()
