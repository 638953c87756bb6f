"""Permit's waiting-pods map: pods a Permit plugin answered WAIT for.

The binding cycle's WaitOnPermit blocks on the entry until every waiting plugin allowed
it, any plugin rejected it, or the shortest plugin timeout passed (then it is rejected
with the timing-out plugin named, as upstream).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from cluster_sched.framework.status import Code, Status


@dataclass(slots=True)
class WaitingPod:
    pod_key: str
    node_name: str
    #: plugin name -> absolute deadline (monotonic seconds)
    pending: dict[str, float]
    #: plugin name -> the timeout it asked for, in seconds (named in the rejection)
    timeouts: dict[str, float] = field(default_factory=dict)
    _done: threading.Event = field(default_factory=threading.Event)
    _result: Status | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def allow(self, plugin: str) -> None:
        with self._lock:
            self.pending.pop(plugin, None)
            if not self.pending and self._result is None:
                self._result = Status()
                self._done.set()

    def reject(self, plugin: str, message: str) -> None:
        with self._lock:
            if self._result is None:
                self._result = Status(Code.UNSCHEDULABLE, (message,), plugin)
                self._done.set()

    def wait(self) -> Status:
        """Block until allowed, rejected or timed out (WaitOnPermit)."""
        while True:
            with self._lock:
                if self._result is not None:
                    return self._result
                deadline_plugin = min(self.pending, key=self.pending.__getitem__)
                deadline = self.pending[deadline_plugin]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                waited = go_duration(self.timeouts.get(deadline_plugin, 0.0))
                self.reject(
                    deadline_plugin,
                    f"rejected due to timeout after waiting {waited} at plugin {deadline_plugin}",
                )
                continue
            self._done.wait(remaining)


class WaitingPods:
    """Thread-safe map pod key -> WaitingPod (upstream waitingPodsMap)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self._lock = threading.Lock()

    def add(self, pod: WaitingPod) -> None:
        with self._lock:
            self._pods[pod.pod_key] = pod

    def remove(self, pod_key: str) -> None:
        with self._lock:
            self._pods.pop(pod_key, None)

    def get(self, pod_key: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(pod_key)

    def iterate(self) -> list[WaitingPod]:
        with self._lock:
            return list(self._pods.values())

    def reject(self, pod_key: str, plugin: str, message: str) -> bool:
        """Reject a waiting pod (preemption uses this for victims); False if not waiting."""
        wp = self.get(pod_key)
        if wp is None:
            return False
        wp.reject(plugin, message)
        return True

    def __len__(self) -> int:
        return len(self._pods)


def new_waiting_pod(pod_key: str, node_name: str, timeouts: dict[str, float]) -> WaitingPod:
    now = time.monotonic()
    return WaitingPod(pod_key, node_name, {p: now + t for p, t in timeouts.items()}, dict(timeouts))


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()``: ``0s``, ``1.5ms``, ``100µs``, ``2s``, ``1m30s``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, u = ("-", -ns) if ns < 0 else ("", ns)

    def frac(v: int, digits: int) -> str:
        whole, rest = divmod(v, 10**digits)
        tail = f"{rest:0{digits}d}".rstrip("0")
        return f"{whole}.{tail}" if tail else str(whole)

    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{frac(u, 3)}µs"
    if u < 1_000_000_000:
        return f"{sign}{frac(u, 6)}ms"
    hours, rem = divmod(u, 3_600 * 10**9)
    minutes, rem = divmod(rem, 60 * 10**9)
    out = f"{hours}h" if hours else ""
    if hours or minutes:
        out += f"{minutes}m"
    return f"{sign}{out}{frac(rem, 9)}s"
