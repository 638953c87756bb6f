"""Permit's waiting-pods map: pods a Permit plugin answered WAIT for.

The binding cycle's WaitOnPermit blocks on the entry until every waiting plugin allowed
it, any plugin rejected it, or the shortest plugin timeout passed (then it is rejected
with the timing-out plugin named, as upstream). Deadlines are read on the scheduler's
clock: on a virtual clock the driver calls ``expire`` when it jumps to a deadline
(``next_deadline``), which wakes the waiting thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from cluster_sched.clock import Clock, SystemClock
from cluster_sched.framework.status import Code, Status


@dataclass(slots=True)
class WaitingPod:
    pod_key: str
    node_name: str
    #: plugin name -> absolute deadline (seconds on ``clock``)
    pending: dict[str, float]
    #: plugin name -> the timeout it asked for, in seconds (named in the rejection)
    timeouts: dict[str, float] = field(default_factory=dict)
    clock: Clock = field(default_factory=SystemClock)
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
            remaining = deadline - self.clock.now()
            if remaining <= 0:
                self._time_out(deadline_plugin)
                continue
            self._done.wait(remaining)

    def _time_out(self, plugin: str) -> None:
        waited = go_duration(self.timeouts.get(plugin, 0.0))
        self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")

    def next_deadline(self) -> float | None:
        """The earliest plugin deadline still pending (None once decided)."""
        with self._lock:
            if self._result is not None or not self.pending:
                return None
            return min(self.pending.values())

    def expire(self, now: float) -> bool:
        """Reject with the timeout message if a deadline passed by ``now``; True if so."""
        with self._lock:
            if self._result is not None or not self.pending:
                return False
            plugin = min(self.pending, key=self.pending.__getitem__)
            if self.pending[plugin] > now:
                return False
        self._time_out(plugin)
        return True


class WaitingPods:
    """Thread-safe map pod key -> WaitingPod (upstream waitingPodsMap). ``clock`` is the
    scheduler's: Permit timeouts are measured on it."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self._lock = threading.Lock()
        self.clock: Clock = clock or SystemClock()

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

    def next_deadline(self) -> float | None:
        """The earliest Permit deadline of any waiting pod (a virtual clock's next timer)."""
        deadlines = [d for wp in self.iterate() if (d := wp.next_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def expire(self, now: float) -> int:
        """Time out every waiting pod whose deadline passed by ``now``; how many."""
        return sum(1 for wp in self.iterate() if wp.expire(now))

    def __len__(self) -> int:
        return len(self._pods)


def new_waiting_pod(
    pod_key: str, node_name: str, timeouts: dict[str, float], clock: Clock | None = None
) -> WaitingPod:
    """A waiting pod whose plugin deadlines start now on ``clock`` (the wall clock if None)."""
    clock = clock or SystemClock()
    now = clock.now()
    deadlines = {p: now + t for p, t in timeouts.items()}
    return WaitingPod(pod_key, node_name, deadlines, dict(timeouts), clock)


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
