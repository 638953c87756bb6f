"""One scheduling attempt (upstream schedulePod): filter, score, select a host.

Everything here is the coordinator's view. Node evaluation goes through a ``NodeSource``
(the in-process table, or Ray shards), which answers Filter and Score for node rows in
the cluster's nodeTree order; this module owns the upstream rules on top:
``numFeasibleNodesToFind`` and the next-start-node rotation, the nominated node tried
first, nominated pods in Filter (two passes), the diagnosis, NormalizeScore over every
feasible node, weights, and reservoir sampling among the best.

OpportunisticBatching wraps ``full_attempt`` in ``scheduler.batching`` (the hint tried
first); ``hint_status`` is how a failed hint enters the diagnosis.
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import Diagnosis, FilterVerdicts, FitError
from cluster_sched.framework.instrumentation import (
    COMPILED_FILTER,
    record_compiled_phase,
    records_plugin_metrics,
)
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.snapshot import Snapshot
from cluster_sched.framework.status import Code, Status
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.scheduler.attempt import AttemptResult, PreFilterError
from cluster_sched.scheduler.extenders import (
    extenders_of,
    find_nodes_that_pass_extenders,
    needs_every_feasible_node,
    nominated_past_extenders,
    prioritize_with_extenders,
)
from cluster_sched.scheduler.fast_path import FastPath
from cluster_sched.scheduler.host_selection import (
    num_feasible_nodes_to_find,
    select_host,
)
from cluster_sched.scheduler.nodesource import LocalSource, NodeSource
from cluster_sched.scheduler.nominated_filter import (
    NominatedPods,
    NominatedRows,
    filter_with_nominated,
    nominated_rows,
)


class Scheduler:
    """Holds the cross-cycle state of schedulePod: the next start node index and RNG.

    ``fast``: the compiled path (``fast_path.FastPath``), tried first for every attempt
    on the in-process table; it takes the same decisions or declines."""

    def __init__(
        self,
        percentage_of_nodes_to_score: int | None = 0,
        rng: random.Random | None = None,
        fast: FastPath | None = None,
    ) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        #: attempts whose window started past the first node (the rotation moved it):
        #: a path counter the exactness tests assert on
        self.rotated_windows = 0
        self.rng = rng or random.Random()
        self.fast = fast
        #: profile -> its OpportunisticBatch (``scheduler.batching``; one per framework)
        self.batches: dict[str, Any] = {}

    # ------------------------------------------------------------------ the attempt

    def schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        snapshot: object,
        nominated: NominatedPods | None = None,
        source: NodeSource | None = None,
    ) -> AttemptResult:
        """Raises FitError when no node fits (after which PostFilter may run).

        ``source`` runs Filter and Score (default: on ``table`` itself); ``table`` is the
        coordinator's full replica either way.
        """
        source = source or LocalSource(table)
        if table.n_nodes == 0:
            raise FitError(pod.key, 0, Diagnosis())
        pre = self.pre_filter(fwk, state, pod, table, snapshot, source)
        return self.full_attempt(fwk, state, pod, table, snapshot, nominated, source, pre)

    def pre_filter(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        snapshot: object,
        source: NodeSource,
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """PreFilter; pods of one shape share it when the compiled path may answer on
        ``table`` (``pre_cycle``: only while the facts its Skips read are unchanged)."""
        reuse = self.fast.pre_cycle if self.fast is not None and source.table is table else None
        if (
            reuse is not None
            and isinstance(snapshot, Snapshot)
            and not records_plugin_metrics(fwk, state)  # a sampled cycle runs each plugin
        ):
            return reuse.pre_filter(fwk, state, pod, snapshot)
        return fwk.run_pre_filter(state, pod, snapshot)

    def full_attempt(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        snapshot: object,
        nominated: NominatedPods | None,
        source: NodeSource,
        pre: tuple[PreFilterResult | None, Status, set[str]],
        hint_status: tuple[str, Status] | None = None,
    ) -> AttemptResult:
        """PreFilter done (``pre``): filter the candidate nodes, score the feasible ones,
        select the host. ``hint_status``: a batching hint that failed Filter (the
        compiled path, which would not count it as evaluated, is not used then)."""
        num_all = table.n_nodes
        if (
            self.fast is not None
            and hint_status is None
            and source.table is table
            and pre[1].is_success
            and pre[0] is None
            and not records_plugin_metrics(fwk, state)
        ):
            reduced = (
                None
                if nominated
                else self._reduced_attempt(self.fast, fwk, state, pod, table, snapshot, source)
            )
            if reduced is not None:
                return reduced
            fast = self._fast_attempt(self.fast, fwk, state, pod, table, snapshot, nominated)
            if fast is not None:
                return fast
        feasible, diagnosis, evaluated = self.find_nodes_that_fit(
            fwk, state, pod, table, snapshot, nominated, source, pre=pre, hint_status=hint_status
        )
        if len(feasible) == 0:
            raise FitError(pod.key, num_all, diagnosis)
        result = AttemptResult(None, evaluated, feasible, table, diagnosis, num_all_nodes=num_all)
        if len(feasible) == 1:
            host = table.names[int(feasible[0])]
            assert host is not None  # feasible rows always hold a node
            result.suggested_host = host
            result.top_nodes = [(host, 0)]
            return result
        self.prioritize_nodes(fwk, state, pod, table, snapshot, feasible, result, source)
        return result

    def _reduced_attempt(
        self,
        fast: FastPath,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        snapshot: object,
        source: NodeSource,
    ) -> AttemptResult | None:
        """The compiled path's attempt answered by the shards' reductions of a prefetched
        batch (``shards.merge``: the same window, rotation, PreScore and RNG draw), or None."""
        reduced = getattr(source, "reduced", None)
        if reduced is None:
            return None
        n, pct = len(table.index), fwk.percentage_of_nodes_to_score
        width = num_feasible_nodes_to_find(pct if pct is not None else self.percentage_of_nodes_to_score, n)  # fmt: skip

        def pre_score(nodes: NodeSlice) -> Status:
            if fast.pre_cycle is not None and isinstance(snapshot, Snapshot):
                return fast.pre_cycle.pre_score(fwk, state, pod, snapshot, nodes)
            return fwk.run_pre_score(state, pod, snapshot, nodes)

        start = self.next_start_node_index % n
        got = reduced.take(fwk, state, pod, table, start, width, pre_score, self.rng)
        if got is None:
            return None
        rows, row, best = got
        self.next_start_node_index = (start + width) % n
        host = str(table.names[row])  # a window row always holds a node
        result = AttemptResult(host, width, rows, table, Diagnosis(), num_all_nodes=n)
        result.top_nodes = [(host, best)]
        return result

    def _fast_attempt(
        self,
        fast: FastPath,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        snapshot: object,
        nominated: NominatedPods | None,
    ) -> AttemptResult | None:
        """The compiled path (``fast_path``): the same window, rotation, PreScore order
        and host selection as the numpy path; None when it declines (nothing changed)."""
        n = len(table.index)
        pct = fwk.percentage_of_nodes_to_score
        to_find = num_feasible_nodes_to_find(
            pct if pct is not None else self.percentage_of_nodes_to_score, n
        )
        start = self.next_start_node_index % n
        started = time.time_ns()
        if fwk.instrumented:
            state.write(COMPILED_FILTER, True)
        try:
            found = fast.find_feasible(fwk, state, pod, table, nominated, to_find, start)
        finally:
            state.delete(COMPILED_FILTER)
        if found is None:
            return None
        self.rotated_windows += start > 0
        record_compiled_phase(fwk, "Filter", (started, time.time_ns()))
        feasible, evaluated = found.rows, found.evaluated
        self.next_start_node_index = (self.next_start_node_index + evaluated) % n
        result = AttemptResult(None, evaluated, feasible, table, Diagnosis(), num_all_nodes=n)
        if len(feasible) == 1:
            host = table.names[int(feasible[0])]
            assert host is not None
            result.suggested_host = host
            result.top_nodes = [(host, 0)]
            return result
        nodes = NodeSlice(table, feasible)
        if fast.pre_cycle is not None and isinstance(snapshot, Snapshot):
            s = fast.pre_cycle.pre_score(fwk, state, pod, snapshot, nodes)
        else:
            s = fwk.run_pre_score(state, pod, snapshot, nodes)
        if not s.is_success:
            raise PreFilterError(s)
        started = time.time_ns()
        scored = fast.score(fwk, state, pod, table, found)
        if scored is None:
            self.score_feasible(fwk, state, pod, table, feasible, result)
            return result
        window = (started, time.time_ns())
        record_compiled_phase(fwk, "Score", window, also=("ScoreExtensionNormalize",))
        # The kernel's tie set and the same RNG draw as select_host.
        result.total_scores = scored.totals
        host = table.names[scored.select_row(self.rng)]
        assert host is not None
        result.suggested_host = host
        result.top_nodes = [(host, scored.best)]
        return result

    def find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        snapshot: object,
        nominated: NominatedPods | None,
        source: NodeSource | None = None,
        pre: tuple[PreFilterResult | None, Status, set[str]] | None = None,
        hint_status: tuple[str, Status] | None = None,
    ) -> tuple[np.ndarray, Diagnosis, int]:
        """Feasible rows (in evaluation order), the diagnosis, and how many were evaluated.
        ``pre``: PreFilter's answer when the caller already ran it. ``hint_status``: a
        batching hint that failed Filter (it counts as evaluated, as a failed nominated
        node does)."""
        source = source or LocalSource(table)
        diagnosis = Diagnosis()
        all_rows = table.order()
        pre_res, s, narrowing = pre if pre is not None else fwk.run_pre_filter(state, pod, snapshot)
        if not s.is_success:
            if not s.is_rejected:
                raise PreFilterError(s)
            # Every node gets PreFilter's status, for PostFilter to see.
            diagnosis.node_to_status.absent_status = s
            diagnosis.pre_filter_msg = s.message()
            if s.plugin:
                diagnosis.unschedulable_plugins.add(s.plugin)
            return np.zeros(0, dtype=np.int64), diagnosis, 0
        if hint_status is not None:
            diagnosis.add_status(*hint_status)

        if pod.nominated_node_name:
            row = table.index.get(pod.nominated_node_name)
            if row is not None:
                rows = np.asarray([row], dtype=np.int64)
                passed, statuses = self._filter_rows(
                    fwk, state, pod, table, rows, nominated, source
                )
                if passed[0]:
                    # upstream evaluateNominatedNode: the extenders filter it too
                    rows = nominated_past_extenders(fwk, state, pod, table, rows, diagnosis)
                    if len(rows):
                        return rows, diagnosis, 1
                else:
                    # Upstream shares the diagnosis' NodeToStatus with
                    # evaluateNominatedNode: the failed nominated node counts as
                    # processed even if the search below never reaches it.
                    diagnosis.add_status(pod.nominated_node_name, statuses(0))

        nodes = all_rows
        if pre_res is not None and pre_res.node_names is not None:
            keep = np.isin(all_rows, table.rows_of(pre_res.node_names))
            nodes = all_rows[keep]
            plugins = "[" + " ".join(sorted(narrowing)) + "]"
            diagnosis.node_to_status.absent_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) {plugins}",),
            )
            diagnosis.unschedulable_plugins |= narrowing

        feasible, _evaluated = self._find_nodes_that_pass_filters(
            fwk, state, pod, table, nodes, diagnosis, nominated, source
        )
        processed = len(feasible) + len(diagnosis.node_to_status.statuses)
        if len(all_rows):
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_rows)
        if extenders_of(fwk):
            feasible = find_nodes_that_pass_extenders(fwk, state, pod, table, feasible, diagnosis)
            processed = len(feasible) + len(diagnosis.node_to_status.statuses)
        return feasible, diagnosis, processed

    def _find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        nodes: np.ndarray,
        diagnosis: Diagnosis,
        nominated: NominatedPods | None,
        source: NodeSource,
    ) -> tuple[np.ndarray, int]:
        n = len(nodes)
        if n == 0:
            return nodes, 0
        to_find = num_feasible_nodes_to_find(
            fwk.percentage_of_nodes_to_score
            if fwk.percentage_of_nodes_to_score is not None
            else self.percentage_of_nodes_to_score,
            n,
        )
        if not needs_every_feasible_node(fwk):
            # Without scoring (plugins or extenders) nor extender filters every feasible
            # node is as good as another: stop at the first (findNodesThatPassFilters).
            to_find = 1
        start = self.next_start_node_index % n
        self.rotated_windows += start > 0
        rotated = np.concatenate((nodes[start:], nodes[:start])) if start else nodes
        if not fwk.filter:
            return rotated[:to_find], min(to_find, n)
        if to_find >= n and n == table.size and not nominated:
            return self._filter_full_scan(fwk, state, pod, table, rotated, diagnosis, source)
        # Evaluate in windows so a big cluster stops early, as upstream's parallel
        # search cancels once enough nodes were found (deterministically here).
        # Most nodes usually pass: start with exactly what is needed, double if short.
        window = min(n, max(to_find, 64))
        feasible_parts: list[np.ndarray] = []
        found = 0
        pos = 0
        noms = nominated_rows(nominated, table, pod) if nominated else None  # once for all windows
        while pos < n and found < to_find:
            chunk = rotated[pos : pos + window]
            passed, statuses = self._filter_rows(
                fwk, state, pod, table, chunk, nominated, source, noms
            )
            cum = np.cumsum(passed)
            if found + (int(cum[-1]) if len(cum) else 0) >= to_find:
                cut = int(np.searchsorted(cum, to_find - found)) + 1
            else:
                cut = len(chunk)
            take = passed[:cut]
            feasible_parts.append(chunk[:cut][take])
            found += int(take.sum())
            failed = np.flatnonzero(~take)
            diagnosis.add_failed(table, chunk[failed], statuses, failed)
            pos += cut
            window = min(n - pos, window * 2)
        feasible = np.concatenate(feasible_parts) if feasible_parts else np.zeros(0, dtype=np.int64)
        return feasible, pos

    def _filter_full_scan(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rotated: np.ndarray,
        diagnosis: Diagnosis,
        source: NodeSource,
    ) -> tuple[np.ndarray, int]:
        """Every node is evaluated and the table has no free rows: run Filter once in
        row order (column views, no gathers), then read the answers in rotation order."""
        n = len(rotated)
        outcome = source.filter(fwk, state, pod, np.arange(n, dtype=np.int64), prefix=True)
        passed = outcome.passed
        feasible = rotated[passed[rotated]]
        failing = rotated[~passed[rotated]]
        # Outcome positions are rows here: the failing rows index both.
        diagnosis.add_failed(table, failing, FilterVerdicts.of(outcome, fwk.filter_names), failing)
        return feasible, n

    def _filter_rows(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: np.ndarray,
        nominated: NominatedPods | None,
        source: NodeSource,
        noms: NominatedRows | None = None,
    ) -> tuple[np.ndarray, FilterVerdicts]:
        """Filter ``rows``; nodes with nominated pods of priority >= the pod's (``noms``,
        if the search worked them out) get the two-pass treatment (``nominated_filter``).
        Returns the pass mask and the verdicts (callable: position -> that node's Status)."""
        if noms is None and nominated:
            noms = nominated_rows(nominated, table, pod, among=rows)
        outcome = source.filter(fwk, state, pod, rows)
        verdicts = FilterVerdicts.of(outcome, fwk.filter_names)
        if noms is not None:
            verdicts = filter_with_nominated(fwk, state, pod, table, rows, noms, verdicts)
        return verdicts.codes == 0, verdicts

    # ------------------------------------------------------------------ scoring

    def prioritize_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        snapshot: object,
        feasible: np.ndarray,
        result: AttemptResult,
        source: NodeSource | None = None,
    ) -> None:
        if fwk.score or extenders_of(fwk):
            s = fwk.run_pre_score(state, pod, snapshot, NodeSlice(table, feasible))
            if not s.is_success:
                raise PreFilterError(s)
        self.score_feasible(fwk, state, pod, table, feasible, result, source)

    def score_feasible(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        feasible: np.ndarray,
        result: AttemptResult,
        source: NodeSource | None = None,
    ) -> None:
        """Score (PreScore done), NormalizeScore, weights, and host selection."""
        k = len(feasible)
        if not fwk.score:
            # upstream: 1 for every node only when there are no extenders either
            totals = np.full(k, 0 if extenders_of(fwk) else 1, dtype=np.int64)
        else:
            src = source or LocalSource(table)
            if k == table.size:
                # All nodes feasible (a full scan): score in row order, then reorder.
                natural = src.score(fwk, state, pod, np.arange(k, dtype=np.int64), prefix=True)
                raw = {name: v[feasible] for name, v in natural.items()}
            else:
                raw = src.score(fwk, state, pod, feasible)
            normalized = fwk.normalize_scores(state, pod, raw)
            totals = fwk.weighted_total(normalized, k)
            result.raw_scores = raw
            result.scores = normalized
        if extenders_of(fwk):
            totals = totals + prioritize_with_extenders(fwk, state, pod, table, feasible)
        result.total_scores = totals
        host_idx, top = select_host(totals, self.rng)
        result.suggested_host = table.names[int(feasible[host_idx])]
        result.top_nodes = [(table.names[int(feasible[i])], int(totals[i])) for i in top]  # type: ignore[misc]
