"""schedulePod with OpportunisticBatching (upstream schedule_one.go's GetNodeHint /
evaluateNominatedNode / StoreScheduleResults around findNodesThatFitPod).

The scheduling cycle calls ``schedule_pod`` here with the pod's scheduling cycle and the
scheduler's clock. With the gate off (or PreFilter failing) it is exactly
``Scheduler.schedule_pod``. With it on: PreFilter, then the profile's
``framework.batch.OpportunisticBatch`` may hint the previous pod's next-best node; the
hint is Filtered like a nominated node (with nominated pods) and, if it fits, is the
host without scoring and without moving the next-start-node rotation, as upstream. If it
does not fit, its status joins the diagnosis and the attempt runs in full. A successful
full attempt leaves its other feasible nodes, sorted by score, for the next pod.

Everything here is a function of the pod, its cycle, the clock and the cluster state the
coordinator holds, so a batched loop (pods committed one by one, each with its own cycle)
takes the same decisions as the serial one.
"""

from __future__ import annotations

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.features import OPPORTUNISTIC_BATCHING
from cluster_sched.framework.batch import OpportunisticBatch
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import Diagnosis, FitError
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.signature import sign_pod
from cluster_sched.framework.status import Status
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.algorithm import NominatedPods, Scheduler
from cluster_sched.scheduler.attempt import AttemptResult
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.nodesource import LocalSource, NodeSource

__all__ = ["batch_of", "filter_rejects", "schedule_pod"]


def schedule_pod(
    algorithm: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    snapshot: object,
    nominated: NominatedPods | None,
    source: NodeSource | None,
    *,
    cycle: int,
    now: float,
) -> AttemptResult:
    """``Scheduler.schedule_pod`` with the batching hint (see the module docstring)."""
    if not fwk.handle.features.enabled(OPPORTUNISTIC_BATCHING):
        return algorithm.schedule_pod(fwk, state, pod, table, snapshot, nominated, source)
    source = source or LocalSource(table)
    num_all = table.n_nodes
    if num_all == 0:
        raise FitError(pod.key, 0, Diagnosis())
    pre = algorithm.pre_filter(fwk, state, pod, table, snapshot, source)
    if not pre[1].is_success:
        return algorithm.full_attempt(fwk, state, pod, table, snapshot, nominated, source, pre)
    batch = batch_of(algorithm, fwk)
    signature = sign_pod(fwk, pod)
    fast = algorithm.fast if source.table is table else None
    hint = batch.get_node_hint(
        signature,
        cycle,
        now,
        pod.nominated_node_name,
        lambda node: filter_rejects(fwk, state, pod, table, node, fast),
    )
    hint_status: tuple[str, Status] | None = None
    row = table.index.get(hint) if hint else None
    if row is not None:
        # The compiled answer where it holds (no nominated pods to add); the plugins'
        # verdicts for a hint that fails (its status joins the diagnosis).
        passes = None
        if fast is not None and not nominated:
            passes = fast.row_passes(fwk, state, pod, table, row)
        rows = np.asarray([row], dtype=np.int64)
        if not passes:
            passed, verdicts = algorithm._filter_rows(
                fwk, state, pod, table, rows, nominated, source
            )
            passes = bool(passed[0])
            if not passes:
                hint_status = (hint, verdicts(0))
        if passes:
            batch.store_schedule_results(signature, hint, hint, None, cycle, now)
            result = AttemptResult(hint, 1, rows, table, Diagnosis(), num_all_nodes=num_all)
            result.top_nodes = [(hint, 0)]
            return result
    result = algorithm.full_attempt(
        fwk, state, pod, table, snapshot, nominated, source, pre, hint_status
    )
    if result.suggested_host is not None:
        # An unsignable pod's list is never kept: only whether it was empty matters (the
        # flush reason), so the sort is skipped.
        others = _others_sorted(result) if signature is not None else _any_other(result)
        batch.store_schedule_results(signature, hint, result.suggested_host, others, cycle, now)
    return result


def batch_of(algorithm: Scheduler, fwk: Framework) -> OpportunisticBatch:
    """The profile's batch state (created on first use; metrics if the profile has them)."""
    batch = algorithm.batches.get(fwk.profile_name)
    if batch is None:
        hook = fwk.metrics.inc_batch if fwk.metrics.enabled else None
        batch = OpportunisticBatch(fwk.profile_name, hook)
        algorithm.batches[fwk.profile_name] = batch
    assert isinstance(batch, OpportunisticBatch)
    return batch


def filter_rejects(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    node: str,
    fast: FastPath | None = None,
) -> bool | None:
    """RunFilterPlugins on one node (no nominated pods): rejected? None if it is gone.
    ``fast``: the compiled path answers when it can."""
    row = table.index.get(node)
    if row is None:
        return None
    if fast is not None:
        passes = fast.row_passes(fwk, state, pod, table, row)
        if passes is not None:
            return not passes
    outcome = fwk.run_filter(state, pod, NodeSlice(table, np.asarray([row], dtype=np.int64)))
    return fwk.filter_status(outcome, 0).is_rejected


def _any_other(result: AttemptResult) -> list[str] | None:
    """One other feasible node, if any (stands for the unsorted list; every attempt with
    more than one feasible node scores them, though one the shards answered keeps no
    totals: ``shards.merge``)."""
    if len(result.feasible_rows) <= 1:
        return None
    name = result.table.names[int(result.feasible_rows[0])]
    if name == result.suggested_host:
        name = result.table.names[int(result.feasible_rows[1])]
    return [name] if name else None


def _others_sorted(result: AttemptResult) -> list[str] | None:
    """The feasible nodes but the chosen one, best score first (ties in evaluation
    order): what the next pod of the same signature may take (None: not scored)."""
    totals = result.total_scores
    if totals is None or len(result.feasible_rows) <= 1:
        return None
    totals = np.asarray(totals)
    order = np.lexsort((np.arange(len(totals)), -totals))
    rows = result.feasible_rows[order]
    chosen = result.table.index.get(result.suggested_host or "", -1)
    return result.table.name_array()[rows[rows != chosen]].tolist()  # type: ignore[no-any-return]
