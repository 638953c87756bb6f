"""Out-of-tree plugins for the chaos tests: one kills the Ray worker running a binding
cycle, one holds a binding cycle in flight until the test lets it go.

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
import time
from typing import Any

from cluster_sched.framework.cycle_state import CycleState

KILL_AT_LABEL = "chaos.example.com/kill-at"
#: The binding cycle HoldBinding holds: the HOLD_AT-th PreBind of the run, all processes.
HOLD_AT = 20
#: Longest hold (a liveness bound: the test releases it long before).
HOLD_PATIENCE = 120.0


def hold_keys(prefix: str) -> tuple[str, str, str]:
    """HoldBinding's keys: the PreBind counter, "held" (the held pod's key), "release"."""
    return f"{prefix}:chaos:prebinds", f"{prefix}:chaos:held", f"{prefix}:chaos:release"


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


class HoldBinding:
    """PreBind that holds the HOLD_AT-th binding cycle of the run (whichever process
    runs it) until the test sets the release key: a binding still in flight when its
    coordinator is paused. It records the held pod's key first, so the test knows when
    the hold began; every other cycle passes at once."""

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def pre_bind(self, state: CycleState, pod: Any, node_name: str) -> None:
        store = getattr(self.handle.binder, "store", None)
        if store is None:
            return
        counter, held, release = hold_keys(store.keys.prefix)
        if int(store.client.incr(counter)) != HOLD_AT:
            return
        store.client.set(held, pod.key)
        deadline = time.monotonic() + HOLD_PATIENCE
        while time.monotonic() < deadline and not store.client.exists(release):
            time.sleep(0.01)
