"""An out-of-tree plugin that kills the Ray worker running a binding cycle (chaos tests).

``tests.testing_plugins.cs_chaos_plugins:KillBindingWorker`` in a profile: for a pod
labelled ``KILL_AT_LABEL: PreBind`` (or ``PostBind``), the binding task's worker process
SIGKILLs itself at that extension point, once per pod (a marker key in the store's Redis,
so the requeued pod binds on its second try). PreBind: none of the task's bindings were
written. PostBind: the task's bindings and their Scheduled events were written together,
then the worker died before answering. Only ever in a Ray worker process: in the driver
(the in-process executor, the test itself) it does nothing.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from cluster_sched.framework.cycle_state import CycleState

KILL_AT_LABEL = "chaos.example.com/kill-at"


def _in_ray_worker() -> bool:
    try:
        from ray._private import worker
    except ImportError:  # pragma: no cover - ray is a dependency
        return False
    return bool(worker.global_worker.mode == worker.WORKER_MODE)


class KillBindingWorker:
    """PreBind/PostBind that kill their own Ray worker for the labelled pods."""

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def _maybe_kill(self, pod: Any, point: str) -> None:
        if pod.labels.get(KILL_AT_LABEL) != point or not _in_ray_worker():
            return
        store = getattr(self.handle.binder, "store", None)
        if store is None:
            return
        marker = f"{store.keys.prefix}:chaos:killed:{pod.key}:{point}"
        if store.client.set(marker, "1", nx=True):
            os.kill(os.getpid(), signal.SIGKILL)

    def pre_bind(self, state: CycleState, pod: Any, node_name: str) -> None:
        self._maybe_kill(pod, "PreBind")

    def post_bind(self, state: CycleState, pod: Any, node_name: str) -> None:
        self._maybe_kill(pod, "PostBind")
