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

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.batch import OpportunisticBatch
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.signature import PodSignature
from cluster_sched.kernels.run import HintedRun
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.batching import filter_rejects

if TYPE_CHECKING:
    from cluster_sched.scheduler.schedule_one import SchedulingCycle

__all__ = ["HintReplay", "kept_list"]

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
    would not take the kernel's hint decision at ``now``."""

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

    def __call__(self, i: int, cycle: int, now: float) -> bool:
        bt, names = self._bt, self._table.names
        reason = bt.precheck(self._signature, cycle, now)
        if reason is None:
            reason = bt.last_node_check(lambda node: self._last_rejects(i, node))
        hint_row = self._hints[i]
        if (bt.head() if reason is None else "") != (names[hint_row] if hint_row >= 0 else ""):
            return False
        hint = bt.take_hint(reason)
        host = names[self._hosts[i]]
        assert host is not None
        if hint:
            bt.store_schedule_results(self._signature, hint, hint, None, cycle, now)
            return True
        rows = self._hinted.kept(i)
        others = self._table.name_array()[rows].tolist() if len(rows) else None
        bt.store_schedule_results(self._signature, "", host, others, cycle, now)
        return True

    def _last_rejects(self, i: int, node: str) -> bool | None:
        """The kernel's verdict on the last chosen node when it asked; else the check
        ``batching`` makes (the table holds the run's earlier pods, assumed)."""
        asked = self._rejects[i]
        if asked >= 0:
            return bool(asked)
        fast = self._sc.algorithm.fast
        return filter_rejects(self._fwk, self._states[i], self._pods[i], self._table, node, fast)
