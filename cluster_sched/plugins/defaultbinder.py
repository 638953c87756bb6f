"""DefaultBinder: writes the binding through the handle's binder (the store)."""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.status import Status, error
from cluster_sched.plugins.names import DEFAULT_BINDER

NAME = DEFAULT_BINDER


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if self._handle.binder is None:
            return error("no binder configured: nothing can write bindings")
        return self._handle.binder(pod, node_name)


def new(args: Any, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
