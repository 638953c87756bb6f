"""OpportunisticBatching in a whole-batch run (``whole_batch``, issue 26 finding 4).

With the gate on, a signed pod is decided by ``scheduler.batching``: the previous pod's
kept list hints its head when the previous host rejects the pod, and a scored attempt
keeps its other feasible nodes, sorted, for the next pods. ``kernels.run``'s hinted run
takes the same decisions for a run of one shape (one signature:
``framework.signature.signature_follows_shape``) in consecutive cycles; here the list
goes in (``kept_list``) and the profile's ``OpportunisticBatch`` is replayed pod by pod
from the kernel's answers (``HintReplay``), recording what the serial cycles record:
``no_hint``/``hint_used`` attempts, flush reasons, the kept list, the last cycle.

The kernel cannot know each pod's clock reading: it assumes the list does not expire
within the run. The replay checks the real reading first (``OpportunisticBatch.precheck``,
which records nothing); where the serial cycle would hint another node than the kernel
did, the run ends before that pod and the ordinary cycle takes it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.batch import (
    BATCH_ATTEMPT_HINT_USED,
    BATCH_ATTEMPT_NO_HINT,
    FLUSH_EMPTY_LIST,
    FLUSH_EXPIRED,
    FLUSH_NODE_NOT_FULL,
    FLUSH_POD_NOT_BATCHABLE,
    MAX_BATCH_AGE,
    OpportunisticBatch,
)
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.signature import PodSignature
from cluster_sched.kernels.run import HintedRun, RunResult
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.batching import filter_rejects

if TYPE_CHECKING:
    from cluster_sched.scheduler.schedule_one import SchedulingCycle

__all__ = ["HintReplay", "UnsignedReplay", "kept_list"]

_NONE = np.zeros(0, dtype=np.int64)


def kept_list(
    bt: OpportunisticBatch, signature: PodSignature, cycle: int, now: float, table: NodeTable
) -> tuple[np.ndarray, int]:
    """The kept list's rows (-1: a node gone) and the last chosen node's row (-1: gone)
    when the run's first pod, in ``cycle`` at ``now``, may take a hint from it; else
    (empty, -1)."""
    if bt.precheck(signature, cycle, now) is not None:
        return _NONE, -1
    assert bt.state is not None and bt.last is not None
    index = table.index
    nodes = bt.state.sorted_nodes
    rows = np.fromiter((index.get(name, -1) for name in nodes), dtype=np.int64, count=len(nodes))
    return rows, index.get(bt.last.chosen_node, -1)


class HintReplay:
    """``replay(i, cycle, now)``: the batch bookkeeping of the run's pod ``i`` as
    ``batching.schedule_pod`` records it; False (nothing recorded) when the serial cycle
    would not take the kernel's hint decision at ``now``. ``finish(count)`` records the
    first ``count`` pods' (the caller's exits all call it).

    The first pod is replayed through ``OpportunisticBatch`` itself (its list came from
    before the run: any flush reason may apply). For the others every check but the
    clock's is known from the run (consecutive cycles, one signature, the previous pod
    placed on a node that exists), and the kernel answered the last node's: only the
    expiry is checked per pod, the rest is counted and recorded once by ``finish``."""

    def __init__(
        self,
        sc: SchedulingCycle,
        fwk: Framework,
        bt: OpportunisticBatch,
        signature: PodSignature,
        hinted: HintedRun,
        pods: Sequence[Pod],
        states: Sequence[CycleState],
    ) -> None:
        self._sc, self._fwk, self._bt, self._signature = sc, fwk, bt, signature
        self._hinted, self._pods, self._states = hinted, pods, states
        self._table = sc.source.table
        self._hosts = hinted.run.hosts.tolist()
        self._hints = hinted.hints.tolist()
        self._rejects = hinted.rejects.tolist()
        self._kept_len = hinted.list_len.tolist()
        self._attempts: Counter[str] = Counter()
        self._flushes: Counter[str] = Counter()
        self._batched = 0
        #: when the list pods after the first would use stops being usable
        self._expires = math.inf
        #: the list the last pod left: a pod of the run whose attempt kept it, -1 the
        #: one recorded for the first pod, -2 none
        self._list_of = -1
        self._creation = 0.0
        #: hints taken from that list by pods after the first
        self._taken = 0
        self._last: tuple[int, str] | None = None

    def __call__(self, i: int, cycle: int, now: float) -> bool:
        if i == 0:
            return self._first(cycle, now)
        if self._rejects[i] >= 0:  # a list is kept (the kernel asked the last node)
            if now > self._expires:
                if self._hints[i] >= 0:
                    return False
                self._flushes[FLUSH_EXPIRED] += 1
            elif self._rejects[i] == 0:
                self._flushes[FLUSH_NODE_NOT_FULL] += 1
            else:  # the hint: the pod's host
                self._attempts[BATCH_ATTEMPT_HINT_USED] += 1
                self._batched += 1
                self._taken += 1
                self._last = (cycle, self._table.names[self._hosts[i]] or "")
                return True
        self._attempts[BATCH_ATTEMPT_NO_HINT] += 1
        if self._kept_len[i]:
            self._list_of, self._creation, self._taken = i, now, 0
            self._expires = now + MAX_BATCH_AGE
        else:
            self._flushes[FLUSH_EMPTY_LIST] += 1
            self._list_of, self._expires = -2, math.inf
        self._last = (cycle, self._table.names[self._hosts[i]] or "")
        return True

    def finish(self, count: int) -> None:
        """Record pods 1..count-1 (the first is recorded as it is replayed)."""
        if count <= 1 or self._last is None:
            return
        kept: tuple[PodSignature, Sequence[str], float] | int | None
        if self._list_of == -2:
            kept = None
        elif self._list_of == -1:
            kept = self._taken
        else:
            rows = self._hinted.kept(self._list_of)[self._taken :]
            kept = (self._signature, self._table.name_array()[rows].tolist(), self._creation)
        self._bt.record_run(self._attempts, self._flushes, self._batched, self._last, kept)

    def _first(self, cycle: int, now: float) -> bool:
        """The first pod, through ``OpportunisticBatch`` (as ``batching`` calls it)."""
        bt, names = self._bt, self._table.names
        reason = bt.precheck(self._signature, cycle, now)
        if reason is None:
            reason = bt.last_node_check(lambda node: self._last_rejects(0, node))
        hint_row = self._hints[0]
        if (bt.head() if reason is None else "") != (names[hint_row] if hint_row >= 0 else ""):
            return False
        hint = bt.take_hint(reason)
        host = names[self._hosts[0]]
        assert host is not None
        if hint:
            bt.store_schedule_results(self._signature, hint, hint, None, cycle, now)
        else:
            rows = self._hinted.kept(0)
            others = self._table.name_array()[rows].tolist() if len(rows) else None
            bt.store_schedule_results(self._signature, "", host, others, cycle, now)
        if bt.state is not None:
            self._expires = bt.state.creation_time + MAX_BATCH_AGE
        return True

    def _last_rejects(self, i: int, node: str) -> bool | None:
        """The kernel's verdict on the last chosen node when it asked; else the check
        ``batching`` makes (the table holds the run's earlier pods, assumed)."""
        asked = self._rejects[i]
        if asked >= 0:
            return bool(asked)
        fast = self._sc.algorithm.fast
        return filter_rejects(self._fwk, self._states[i], self._pods[i], self._table, node, fast)


class UnsignedReplay:
    """The batch bookkeeping of a run of unsignable pods with the gate on (``replay``,
    ``finish`` as ``HintReplay``'s): each gets no hint, and its attempt's list, never
    kept, is flushed as not batchable (empty: a lone feasible node). The first pod goes
    through ``OpportunisticBatch`` (a list from before the run is flushed by its
    reason); after it no list is kept, so the rest is counted and recorded once."""

    def __init__(self, bt: OpportunisticBatch, table: NodeTable, result: RunResult) -> None:
        self._bt, self._names = bt, table.names
        self._hosts, self._found = result.hosts.tolist(), result.found.tolist()
        self._attempts: Counter[str] = Counter()
        self._flushes: Counter[str] = Counter()
        self._last: tuple[int, int] | None = None

    def __call__(self, i: int, cycle: int, now: float) -> bool:
        several = self._found[i] >= 2
        if i == 0:
            host = self._names[self._hosts[0]]
            assert host is not None
            self._bt.get_node_hint(None, cycle, now, "", lambda _node: None)
            other = [host] if several else None  # only its emptiness is read
            self._bt.store_schedule_results(None, "", host, other, cycle, now)
            return True
        self._attempts[BATCH_ATTEMPT_NO_HINT] += 1
        self._flushes[FLUSH_POD_NOT_BATCHABLE if several else FLUSH_EMPTY_LIST] += 1
        self._last = (cycle, i)
        return True

    def finish(self, count: int) -> None:
        """Record pods 1..count-1 (the first is recorded as it is replayed)."""
        if count <= 1 or self._last is None:
            return
        cycle, i = self._last
        last = (cycle, self._names[self._hosts[i]] or "")
        self._bt.record_run(self._attempts, self._flushes, 0, last, None)
