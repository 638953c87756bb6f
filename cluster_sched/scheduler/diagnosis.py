"""Diagnosis of a failed attempt and the FitError message, in upstream's grammar."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from cluster_sched.framework.interfaces import NodeToStatus
from cluster_sched.framework.status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
#: upstream ErrNoNodesAvailable: the cluster has no node at all.
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass(slots=True)
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    #: plugins that rejected the pod (the queue requeues on their events)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_status(self, node: str, status: Status) -> None:
        self.node_to_status.statuses[node] = status
        self.add_plugin_status(status)

    def add_plugin_status(self, status: Status) -> None:
        """upstream Diagnosis.AddPluginStatus: rejecting plugins (Pending included) are
        unschedulable plugins; Pending ones are pending plugins too."""
        if not status.plugin:
            return
        if status.is_rejected:
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """upstream FitError.Error(): a sorted histogram of reasons, PreFilter's message
    instead when PreFilter rejected, then PostFilter's (preemption) message."""
    if num_all_nodes == 0:
        # upstream schedulePod returns ErrNoNodesAvailable, not a FitError (no PostFilter)
        return ERR_NO_NODES_AVAILABLE
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        msg += f" {diagnosis.pre_filter_msg}."
    else:
        reasons: Counter[str] = Counter()
        statuses = diagnosis.node_to_status.statuses
        for status in statuses.values():
            reasons.update(status.reasons)
        absent = diagnosis.node_to_status.absent_status
        if len(statuses) < num_all_nodes and absent is not None:
            for reason in absent.reasons:
                reasons[reason] += num_all_nodes - len(statuses)
        histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        # No period of its own: PostFilter messages end with one ("preemption: 0/3 nodes
        # are available: ... ." is itself a FitError message).
        msg += f" {diagnosis.post_filter_msg}"
    return msg


class FitError(Exception):
    """No node fits the pod; ``str()`` is the FailedScheduling event message."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__()

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)
