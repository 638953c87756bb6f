"""What upstream's WorkloadExecutor runs in goroutines beside the scheduler, here ticked
on each turn of the driving loop: paced deletes, churn, and the count of pods seen
scheduled that the throughput collector samples."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cluster_sched.scheduler.stats import PlacementLog
from cluster_sched.store.store import Store
from cluster_sched.workload.perf.objects import Namer, Template, place
from cluster_sched.workload.perf.ops import Churn

__all__ = ["CHURN_INTERVAL_MS", "ChurnTask", "PacedDeletes", "SeenScheduled"]

#: Default churn interval (upstream: 500 ms).
CHURN_INTERVAL_MS = 500


class Creator(Protocol):
    """What churn needs of the workload executor."""

    store: Store
    namer: Namer

    def note_pod(self, doc: Mapping[str, Any], key: str) -> None: ...


class SeenScheduled:
    """Pods seen turning scheduled in ``namespaces`` (all if empty) that match a label
    selector, counted since creation: upstream's throughput collector counts these
    events, not the pods bound now, so pods deleted once scheduled (a steady state,
    churn) still count. Reads the watch's placement log from where it last stopped."""

    def __init__(
        self,
        log: PlacementLog,
        namespaces: list[str],
        matches: Callable[[str], bool] | None = None,
    ) -> None:
        self.log, self.matches = log, matches
        self.namespaces = set(namespaces)
        self._cursor = len(log)
        self._count = 0

    def __call__(self) -> int:
        end = len(self.log)
        if end > self._cursor:
            for _, key, node, _, _ in self.log[self._cursor : end]:
                if not node:
                    continue
                if self.namespaces and key.partition("/")[0] not in self.namespaces:
                    continue
                if self.matches is None or self.matches(key):
                    self._count += 1
            self._cursor = end
        return self._count


class PacedDeletes:
    """deletePods with deletePodsPerSecond: one pod per tick of 1/rate seconds."""

    def __init__(self, store: Store, keys: list[str], rate: int) -> None:
        self.store, self.keys, self.rate = store, keys, rate
        self.start = time.monotonic()
        self.deleted = 0

    @property
    def done(self) -> bool:
        return self.deleted >= len(self.keys)

    def tick(self, now: float) -> None:
        due = min(len(self.keys), int((now - self.start) * self.rate))
        if due > self.deleted:
            self.store.delete_many([("Pod", k) for k in self.keys[self.deleted : due]])
            self.deleted = due


class ChurnTask:
    """churn: every interval, create one object per template (mode create, up to
    ``number``) or create/delete them in a ring of ``number`` slots (mode recreate)."""

    def __init__(self, ex: Creator, op: Churn, namespace: str) -> None:
        self.ex, self.op, self.namespace = ex, op, namespace
        self.templates = [Template(p) for p in op.template_paths]
        self.interval = (op.interval_milliseconds or CHURN_INTERVAL_MS) / 1000.0
        self.start = time.monotonic()
        self.next = self.start + self.interval
        self.count = 0
        self.slots: list[list[tuple[str, str] | None]] = [
            [None] * max(op.number, 1) for _ in self.templates
        ]

    def tick(self, now: float) -> None:
        if now < self.next:
            return
        self.next = self.start + (int((now - self.start) / self.interval) + 1) * self.interval
        if self.op.mode == "create":
            if self.op.number and self.count >= self.op.number:
                return
            for t in self.templates:
                self._create(t)
        else:
            slot = self.count % self.op.number
            for i, t in enumerate(self.templates):
                held = self.slots[i][slot]
                if held is not None:
                    self.ex.store.delete(*held)
                    self.slots[i][slot] = None
                else:
                    self.slots[i][slot] = self._create(t)
        self.count += 1

    def _create(self, template: Template) -> tuple[str, str]:
        doc = template.render(self.count, 0)
        kind, key = place(doc, self.namespace, self.ex.namer)
        self.ex.note_pod(doc, key)
        self.ex.store.apply(doc)
        return kind, key
