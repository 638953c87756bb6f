"""OpportunisticBatching (upstream framework/runtime/batch.go, KEP-5598).

Consecutive pods with the same signature, placed one pod per node, need not be filtered
and scored afresh: the previous pod's feasible nodes, sorted by score, are still the
right order for the next one, minus the node the previous pod took. So after a full
attempt the rest of the sorted list is kept; the next pod gets its head as a hint when

- it comes in the very next scheduling cycle (no pod of another profile, or skipped, in
  between) and the previous one succeeded;
- its signature equals the list's (and it is signable at all);
- the list is younger than ``MAX_BATCH_AGE`` on the scheduler's clock;
- the node the previous pod took no longer fits it (Filter rejects it there): only then
  is it certain the previous choice is not the best again (1 pod per node);
- it has no nominated node (that node is tried first anyway).

The hinted node is then Filtered like a nominated node; if it passes it is the pod's
host, with no scoring (``hint_used``); otherwise the attempt runs in full and its result
replaces the list. ``scheduler_batch_attempts_total{profile,result}`` and
``scheduler_batch_cache_flushed_total{profile,reason}`` count what happened, with
upstream's labels. One instance per profile; only the coordinator's thread uses it.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cluster_sched.framework.signature import PodSignature

__all__ = [
    "BATCH_ATTEMPT_HINT_NOT_USED",
    "BATCH_ATTEMPT_HINT_USED",
    "BATCH_ATTEMPT_NO_HINT",
    "MAX_BATCH_AGE",
    "OpportunisticBatch",
]

#: upstream maxBatchAge: a kept list older than this (seconds) is not reused
MAX_BATCH_AGE = 0.5

BATCH_ATTEMPT_NO_HINT = "no_hint"
BATCH_ATTEMPT_HINT_USED = "hint_used"
BATCH_ATTEMPT_HINT_NOT_USED = "hint_not_used"

FLUSH_POD_FAILED = "pod_failed"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NODE_NOT_FULL = "node_not_full"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"

#: (kind, profile, label) -> None: the metrics hook ("attempt" or "flush")
BatchMetricsHook = Callable[[str, str, str], None]


@dataclass(slots=True)
class _BatchState:
    signature: PodSignature
    sorted_nodes: deque[str]
    creation_time: float


@dataclass(slots=True)
class _LastCycle:
    cycle: int
    chosen_node: str
    succeeded: bool = True


@dataclass(slots=True)
class OpportunisticBatch:
    """The kept list of one profile, and its counters (upstream's, plus batched_pods)."""

    profile: str
    on_metric: BatchMetricsHook | None = None
    state: _BatchState | None = None
    last: _LastCycle | None = None
    #: pods placed on a hint (upstream's test-only batchedPods)
    batched_pods: int = 0
    attempts: Counter[str] = field(default_factory=Counter)
    flushes: Counter[str] = field(default_factory=Counter)

    def get_node_hint(
        self,
        signature: PodSignature | None,
        cycle: int,
        now: float,
        nominated_node_name: str,
        last_node_rejects: Callable[[str], bool | None],
    ) -> str:
        """The hint for a pod in ``cycle`` (upstream GetNodeHint), or "" for none.
        ``last_node_rejects(node)``: Filter rejects the pod on that node (None: the
        node is gone)."""
        reason = "" if nominated_node_name else self.precheck(signature, cycle, now)
        if reason is None:
            reason = self.last_node_check(last_node_rejects)
        return self.take_hint(reason)

    def precheck(self, signature: PodSignature | None, cycle: int, now: float) -> str | None:
        """upstream batchStateCompatible up to the last chosen node's check, recording
        nothing: None if the kept list may be used so far, "" if there is none, else
        the flush reason."""
        if self.state is None or not self.state.sorted_nodes or self.last is None:
            return ""
        if cycle != self.last.cycle + 1:
            return FLUSH_POD_SKIPPED
        if not self.last.succeeded:
            return FLUSH_POD_FAILED
        if signature is None or signature != self.state.signature:
            return FLUSH_POD_INCOMPATIBLE
        if now > self.state.creation_time + MAX_BATCH_AGE:
            return FLUSH_EXPIRED
        return None

    def last_node_check(self, last_node_rejects: Callable[[str], bool | None]) -> str | None:
        """The rest of ``precheck`` (after it passed): None if the last chosen node
        rejects the pod (only then is the list's head its best node), else the reason."""
        assert self.last is not None
        rejects = last_node_rejects(self.last.chosen_node)
        if rejects is None:
            return FLUSH_NODE_MISSING
        return None if rejects else FLUSH_NODE_NOT_FULL

    def head(self) -> str:
        """The kept list's head: the hint a usable list gives ("" without one)."""
        return self.state.sorted_nodes[0] if self.state and self.state.sorted_nodes else ""

    def take_hint(self, reason: str | None) -> str:
        """Record ``precheck``/``last_node_check``'s outcome: the head of the list when
        usable (None), else the flush (a reason) and a ``no_hint`` attempt."""
        if reason is None:
            assert self.state is not None
            return self.state.sorted_nodes.popleft()
        if reason:
            self._flush(reason)
        self._count_attempt(BATCH_ATTEMPT_NO_HINT)
        return ""

    def store_schedule_results(
        self,
        signature: PodSignature | None,
        hinted_node: str,
        chosen_node: str,
        other_nodes: Sequence[str] | None,
        cycle: int,
        now: float,
    ) -> None:
        """After a successful attempt (upstream StoreScheduleResults): remember the
        cycle; keep ``other_nodes`` (sorted, best first) unless the hint was used."""
        self.last = _LastCycle(cycle, chosen_node)
        if hinted_node and hinted_node == chosen_node:
            self._count_attempt(BATCH_ATTEMPT_HINT_USED)
            self.batched_pods += 1
            return
        if hinted_node:
            self._count_attempt(BATCH_ATTEMPT_HINT_NOT_USED)
        if signature is not None and other_nodes:
            self.state = _BatchState(signature, deque(other_nodes), now)
            return
        self._flush(FLUSH_EMPTY_LIST if not other_nodes else FLUSH_POD_NOT_BATCHABLE)
        self.state = None

    def record_run(
        self,
        attempts: Counter[str],
        flushes: Counter[str],
        batched: int,
        last: tuple[int, str],
        kept: tuple[PodSignature, Sequence[str], float] | int | None,
    ) -> None:
        """What the serial cycles of a whole-batch run's pods record, at once: their
        attempt results and flushes (each counted one by one for the metrics hook), the
        pods placed on a hint, the last pod's (cycle, node), and the kept list: a new one
        (signature, nodes best first, creation time), ``k`` heads taken from the one kept
        before (an int), or None (dropped)."""
        for counts, kind, into in (
            (attempts, "attempt", self.attempts),
            (flushes, "flush", self.flushes),
        ):
            into.update(counts)
            if self.on_metric is not None:
                for label, k in counts.items():
                    for _ in range(k):
                        self.on_metric(kind, self.profile, label)
        self.batched_pods += batched
        self.last = _LastCycle(*last)
        if kept is None:
            self.state = None
        elif isinstance(kept, int):
            assert kept == 0 or (self.state is not None and kept <= len(self.state.sorted_nodes))
            for _ in range(kept):
                assert self.state is not None
                self.state.sorted_nodes.popleft()
        else:
            self.state = _BatchState(kept[0], deque(kept[1]), kept[2])

    # ------------------------------------------------------------------ internals

    def _flush(self, reason: str) -> bool:
        """Record why the kept list cannot be used (upstream logUnusableState); the list
        itself is replaced by the attempt that follows."""
        self.flushes[reason] += 1
        if self.on_metric is not None:
            self.on_metric("flush", self.profile, reason)
        return False

    def _count_attempt(self, result: str) -> None:
        self.attempts[result] += 1
        if self.on_metric is not None:
            self.on_metric("attempt", self.profile, result)
