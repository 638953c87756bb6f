"""What an evaluation run reports: counts, throughput, latency percentiles, attempts.

Everything here is recorded per pod or per attempt (a dict store or a list append), never
per node, so recording costs the scheduling loop nothing it would notice; the report
(``cluster_sched.report``) turns it into figures after the run.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import overload

import numpy as np

PlacementEntry = tuple[float, str, str, int, int]


class PlacementLog:
    """``(time, pod key, node, cpu milli-cores, memory bytes)`` entries, stored as columns
    (numbers in typed arrays, the key and node strings shared with the objects that
    already hold them): 40 bytes an entry instead of a tuple and its boxed numbers (~130).
    Reads as the list of tuples it replaces: len, iteration, indexing and slices."""

    __slots__ = ("_cpu", "_keys", "_memory", "_nodes", "_times")

    def __init__(self, entries: Iterable[PlacementEntry] = ()) -> None:
        self._times = array("d")
        self._keys: list[str] = []
        self._nodes: list[str] = []
        self._cpu = array("q")
        self._memory = array("q")
        for entry in entries:
            self.append(entry)

    def append(self, entry: PlacementEntry) -> None:
        now, key, node, cpu, memory = entry
        self._times.append(now)
        self._keys.append(key)
        self._nodes.append(node)
        self._cpu.append(cpu)
        self._memory.append(memory)

    def __len__(self) -> int:
        return len(self._times)

    def _entry(self, i: int) -> PlacementEntry:
        return (self._times[i], self._keys[i], self._nodes[i], self._cpu[i], self._memory[i])

    def __iter__(self) -> Iterator[PlacementEntry]:
        return map(self._entry, range(len(self._times)))

    @overload
    def __getitem__(self, index: int) -> PlacementEntry: ...

    @overload
    def __getitem__(self, index: slice) -> list[PlacementEntry]: ...

    def __getitem__(self, index: int | slice) -> PlacementEntry | list[PlacementEntry]:
        if isinstance(index, slice):
            return [self._entry(i) for i in range(*index.indices(len(self._times)))]
        return self._entry(range(len(self._times))[index])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PlacementLog | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PlacementLog({list(self)!r})"

    def columns(self) -> LogColumns:
        """The entries as columns (numbers as numpy arrays, copies), in log order: the
        report replays a million-entry log with array operations, not one tuple per
        entry (``__iter__`` builds a tuple and boxes three numbers per entry)."""
        return LogColumns(
            times=np.array(self._times, dtype=np.float64),
            keys=self._keys,
            nodes=self._nodes,
            cpu=np.array(self._cpu, dtype=np.int64),
            memory=np.array(self._memory, dtype=np.int64),
        )


@dataclass(frozen=True, slots=True)
class LogColumns:
    """A ``PlacementLog`` as columns (``PlacementLog.columns``); ``keys`` and ``nodes``
    are the log's own lists (read them, do not change them)."""

    times: np.ndarray
    keys: list[str]
    nodes: list[str]
    cpu: np.ndarray
    memory: np.ndarray


class FailureLog:
    """Every failed scheduling attempt as ``(time, pod key, FailedScheduling message)``,
    in columns: the time in a typed array, the key shared with the stats' dicts, the
    message as an index into the distinct messages (a run repeats a few dozen of them):
    ~24 bytes an attempt. The report replays it into the waiting reasons over time."""

    __slots__ = ("_ids", "_keys", "_messages", "_times", "messages")

    def __init__(self) -> None:
        self._times = array("d")
        self._keys: list[str] = []
        self._ids = array("l")
        self._messages: dict[str, int] = {}
        #: the distinct messages, by index
        self.messages: list[str] = []

    def append(self, now: float, key: str, message: str) -> None:
        index = self._messages.get(message)
        if index is None:
            index = self._messages[message] = len(self.messages)
            self.messages.append(message)
        self._times.append(now)
        self._keys.append(key)
        self._ids.append(index)

    def __len__(self) -> int:
        return len(self._times)

    def __iter__(self) -> Iterator[tuple[float, str, int]]:
        return zip(self._times, self._keys, self._ids, strict=True)


@dataclass(slots=True)
class RunStats:
    """Filled by the coordinator as pods move; read by the workload runner."""

    enqueued_at: dict[str, float] = field(default_factory=dict)
    bound_at: dict[str, float] = field(default_factory=dict)
    bound_node: dict[str, str] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    #: seconds each scheduling attempt (pop → assume or failure) took (a float64 array:
    #: 8 bytes an attempt, not a boxed float's 32)
    attempt_seconds: array[float] = field(default_factory=lambda: array("d"))
    first_pop: float | None = None
    last_bind: float | None = None
    #: this process's CPU seconds (``cpu_clock``) at the first pop and at the last bind:
    #: CPU per pod moves far less than throughput when the host is shared. Reading the
    #: process's CPU clock costs microseconds with many threads, so a bind reads it only
    #: when ``cpu_read_interval`` seconds of ``wall_clock`` passed since the last reading:
    #: the last bind's figure misses at most that interval's CPU (1 ms; a run is seconds).
    first_pop_cpu: float | None = None
    last_bind_cpu: float | None = None
    cpu_clock: Callable[[], float] = time.process_time
    wall_clock: Callable[[], float] = time.monotonic
    cpu_read_interval: float = 0.001
    _last_cpu_read: float = field(default=float("-inf"), init=False, repr=False)
    preempted: set[str] = field(default_factory=set)
    preemptors: set[str] = field(default_factory=set)
    failed_attempts: int = 0
    errors: int = 0
    #: the FailedScheduling message of each pod's latest failed attempt: why a pod that
    #: ends the run unbound is unschedulable (the report parses its reason histogram)
    last_failure: dict[str, str] = field(default_factory=dict)
    #: every failed attempt, timed at its pod's pop (``last_pop``)
    failure_log: FailureLog = field(default_factory=FailureLog)
    #: when the latest pod was popped (a failure is timed at it: in virtual time an
    #: attempt takes no time, on the real clock it is a few milliseconds early)
    last_pop: float = 0.0
    #: extended-resource requests (``vendor/name`` -> amount) of the pods seen bound that
    #: make any: the GPU figures of a trace replay (cpu and memory are in the log)
    extended_requests: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the placement timeline, in the order the watch saw it: ``(time, pod key, node,
    #: cpu milli-cores, memory bytes)`` when a pod is seen bound, ``(time, pod key, "",
    #: 0, 0)`` when a bound pod leaves its node (utilisation over time is replayed from it)
    placement_log: PlacementLog = field(default_factory=PlacementLog)
    #: namespace -> pods bound there now (what an informer's lister would count), kept
    #: incrementally so "are these pods bound yet" is O(1) while a workload runs
    bound_per_namespace: dict[str, int] = field(default_factory=dict)

    def on_enqueue(self, key: str, now: float) -> None:
        self.enqueued_at.setdefault(key, now)

    def on_pop(self, key: str, now: float) -> None:
        self.last_pop = now
        if self.first_pop is None:
            self.first_pop = now
            self.first_pop_cpu = self.cpu_clock()
        self.attempts[key] = self.attempts.get(key, 0) + 1

    def on_bound(
        self,
        key: str,
        node: str,
        now: float,
        cpu: int = 0,
        memory: int = 0,
        extended: dict[str, int] | None = None,
    ) -> None:
        if extended:
            self.extended_requests[key] = extended
        if key not in self.bound_node:
            ns = key.partition("/")[0]
            self.bound_per_namespace[ns] = self.bound_per_namespace.get(ns, 0) + 1
        self.bound_at[key] = now
        self.bound_node[key] = node
        self.placement_log.append((now, key, node, cpu, memory))
        if key in self.attempts:
            self.last_bind = now
            wall = self.wall_clock()
            if wall - self._last_cpu_read >= self.cpu_read_interval:
                self._last_cpu_read = wall
                self.last_bind_cpu = self.cpu_clock()

    def on_unbound(self, key: str, now: float | None = None) -> None:
        if self.bound_node.pop(key, None) is not None:
            ns = key.partition("/")[0]
            self.bound_per_namespace[ns] -= 1
            if now is not None:
                self.placement_log.append((now, key, "", 0, 0))

    def on_failure(self, key: str, message: str) -> None:
        self.last_failure[key] = message
        self.failure_log.append(self.last_pop, key, message)

    def on_preempted(self, victims: list[str], preemptor: str) -> None:
        self.preempted.update(victims)
        self.preemptors.add(preemptor)

    def summary(self, unschedulable: int) -> dict[str, object]:
        scheduled = [k for k in self.bound_node if k in self.attempts]
        latencies = np.asarray(
            [self.bound_at[k] - self.enqueued_at[k] for k in scheduled if k in self.enqueued_at],
            dtype=np.float64,
        )
        span = (
            (self.last_bind - self.first_pop)
            if self.first_pop is not None and self.last_bind is not None
            else 0.0
        )
        cpu_span = (
            self.last_bind_cpu - self.first_pop_cpu
            if self.first_pop_cpu is not None and self.last_bind_cpu is not None
            else 0.0
        )
        attempts = np.asarray(list(self.attempts.values()) or [0], dtype=np.float64)
        attempt_ms = np.asarray(self.attempt_seconds or [0.0]) * 1e3

        def pct(a: np.ndarray, q: float) -> float:
            return round(float(np.percentile(a, q)), 3) if len(a) else 0.0

        return {
            "scheduled": len(scheduled),
            "unschedulable": unschedulable,
            "preempted": len(self.preempted),
            "throughput": round(len(scheduled) / span, 1) if span > 0 else float(len(scheduled)),
            "latency_ms": {
                "p50": pct(latencies * 1e3, 50),
                "p90": pct(latencies * 1e3, 90),
                "p99": pct(latencies * 1e3, 99),
            },
            "attempt_latency_ms": {
                "p50": pct(attempt_ms, 50),
                "p90": pct(attempt_ms, 90),
                "p99": pct(attempt_ms, 99),
            },
            "attempts_per_pod": {
                "mean": round(float(attempts.mean()), 3),
                "max": int(attempts.max()),
            },
            "duration_s": round(span, 3),
            "process_cpu_us_per_pod": (
                round(cpu_span / len(scheduled) * 1e6, 1) if scheduled else 0.0
            ),
        }
