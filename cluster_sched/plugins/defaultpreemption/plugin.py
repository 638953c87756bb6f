"""DefaultPreemption: the PostFilter that finds lower-priority pods to evict.

Flow (upstream Evaluator.Preempt): check the pod may preempt at all; collect the nodes
whose Filter status was Unschedulable; dry-run SelectVictimsOnNode on them from a
random offset (``handle.rng``) until enough candidates are found; let the extenders
with a preemptVerb shrink them (``extenders``); pick the best candidate; hand it to
the optional ``PreemptionExecutor`` (absent in ``explain``, which makes this a pure
dry run); return the nominated node and the victims.

The dry runs need the profile's Framework to run filters on simulated nodes. It is
read from ``handle.framework`` at PostFilter time (plugins are built before their
Framework exists), so whoever builds a Framework sets it there.
Every status message is prefixed "preemption: ", as upstream's PostFilter does.

PreEnqueue (SchedulerAsyncPreemption): while the executor is still deleting a
preemptor's victims the preemptor is gated with upstream's message, and the plugin
registers Pod/Delete so the victims' deletions release it. With the gate off PreEnqueue
always admits and nothing is registered, as upstream.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.config.plugin_args import DefaultPreemptionArgs
from cluster_sched.errors import SchedulerError
from cluster_sched.features import ASYNC_PREEMPTION
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import Diagnosis, fit_error_message, node_codes
from cluster_sched.framework.events import ActionType, ClusterEvent, EventResource
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import NodeToStatus, PostFilterResult
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import tables_of
from cluster_sched.plugins.defaultpreemption.batch import (
    nodes_independent,
    select_victims_on_nodes,
)
from cluster_sched.plugins.defaultpreemption.candidates import Candidate, num_candidates, pick_one
from cluster_sched.plugins.defaultpreemption.extenders import call_extenders
from cluster_sched.plugins.defaultpreemption.search import screen_rows
from cluster_sched.plugins.defaultpreemption.victims import (
    Victims,
    importance_key,
    nominated_for,
    select_victims_on_node,
)
from cluster_sched.plugins.names import DEFAULT_PREEMPTION

NAME = DEFAULT_PREEMPTION
ERR_NOT_HELPFUL = "Preemption is not helpful for scheduling"
ERR_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
MESSAGE_PREFIX = "preemption: "
ERR_WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
_DEFAULT_ABSENT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def _status_of(diagnosis: NodeToStatus, name: str) -> Status:
    st = diagnosis.statuses.get(name)
    if st is not None:
        return st
    return diagnosis.absent_status or _DEFAULT_ABSENT


class DefaultPreemption:
    name = NAME
    #: rule nodes out on columns before dry-running them when that is exact (``search``);
    #: False keeps to the window-by-window search (the tests' reference)
    screen_nodes = True

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle) -> None:
        self.args = args
        self._handle = handle

    # ------------------------------------------------------------------ PreEnqueue

    def pre_enqueue(self, pod: Pod) -> Status:
        """upstream PreEnqueue: hold a preemptor whose victims are still being deleted."""
        if not self._handle.features.enabled(ASYNC_PREEMPTION):
            return SUCCESS
        running = getattr(self._handle.preemption_executor, "is_pod_running_preemption", None)
        if running is not None and running(pod):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_WAITING_FOR_PREEMPTION,))
        return SUCCESS

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        """A victim's deletion may end the wait PreEnqueue imposed (async only)."""
        if self._handle.features.enabled(ASYNC_PREEMPTION):
            return (ClusterEvent(EventResource.POD, ActionType.DELETE),)
        return ()

    # ------------------------------------------------------------------ PostFilter

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        result, status = self.preempt(state, pod, diagnosis)
        if status.reasons and status.message():
            return result, Status(status.code, (MESSAGE_PREFIX + status.message(),), status.plugin)
        return result, status

    def preempt(
        self, state: CycleState, pod: Pod, diagnosis: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        snapshot = self._handle.snapshot
        tables = tables_of(snapshot)
        ok, why = self.pod_eligible_to_preempt_others(
            pod, _status_of(diagnosis, pod.nominated_node_name), tables
        )
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, (why,))
        num_all = sum(t.n_nodes for t in tables)
        if num_all == 0:
            return None, Status(Code.ERROR, ("no nodes available",))
        fwk = self._handle.framework
        if fwk is None:
            return None, Status(Code.ERROR, ("the Framework is not set on the plugin's handle",))
        candidates, statuses, errors = self.find_candidates(
            fwk, state, pod, diagnosis, tables, snapshot
        )
        if not candidates:
            if errors:
                return None, Status(Code.ERROR, (errors[0],))
            fit = Diagnosis(
                node_to_status=NodeToStatus(
                    statuses, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NOT_HELPFUL,))
                )
            )
            # A result with an empty node clears the pod's stale nomination, if any.
            return PostFilterResult(""), Status(
                Code.UNSCHEDULABLE, (fit_error_message(num_all, fit),)
            )
        # upstream: the extenders may shrink the candidates before the best is chosen
        candidates, s = call_extenders(self._handle.extenders, pod, candidates, tables, state)
        if not s.is_success:
            return None, s
        best = pick_one(candidates)
        if best is None or not best.node_name:
            return None, Status(Code.UNSCHEDULABLE, ("no candidate node for preemption",))
        executor = self._handle.preemption_executor
        if executor is not None:
            s = executor.prepare_candidate(pod, best.node_name, list(best.victims.pods))
            if not s.is_success:
                return None, s
        # Reported most important first (victim selection itself keeps upstream's
        # PDB-violating-first order, which pickOneNodeForPreemption reads).
        victims = sorted(best.victims.pods, key=importance_key)
        return PostFilterResult(best.node_name, tuple(p.key for p in victims)), SUCCESS

    # ------------------------------------------------------------------ steps

    def pod_eligible_to_preempt_others(
        self, pod: Pod, nominated_status: Status, tables: list[NodeTable]
    ) -> tuple[bool, str]:
        """upstream PodEligibleToPreemptOthers: not with preemptionPolicy Never; not while
        a lower-priority pod is terminating on the node it already nominated (its earlier
        victims are still leaving), unless that node became unresolvable for it."""
        if pod.preemption_policy == "Never":
            return False, ERR_POLICY_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            for t in tables:
                row = t.index.get(nominated)
                if row is None:
                    continue
                for p in t.row_pods[row].values():
                    if p.priority < pod.priority and p.meta.deletion_timestamp is not None:
                        return False, ERR_TERMINATING_ON_NOMINATED
        return True, ""

    def potential_nodes(
        self, diagnosis: NodeToStatus, tables: list[NodeTable]
    ) -> list[tuple[NodeTable, np.ndarray]]:
        """Nodes whose status is Unschedulable, in nodeTree order: per table, its rows."""
        absent = (diagnosis.absent_status or _DEFAULT_ABSENT).code
        out: list[tuple[NodeTable, np.ndarray]] = []
        for t in tables:
            order = t.order()
            codes = node_codes(diagnosis, t, int(absent))
            rows = order[codes[order] == Code.UNSCHEDULABLE]
            if len(rows):
                out.append((t, rows))
        return out

    def find_candidates(
        self,
        fwk: Any,
        state: CycleState,
        pod: Pod,
        diagnosis: NodeToStatus,
        tables: list[NodeTable],
        snapshot: Any,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """upstream findCandidates + DryRunPreemption: (candidates, failed nodes'
        statuses, error messages).

        Nodes are dry-run in upstream's order (from a random offset) and the search
        stops at the same node as upstream's would: once it holds ``num_candidates``
        candidates of which at least one violates no PDB. When the nodes cannot
        influence each other (``batch.nodes_independent``) they are simulated in
        growing windows, all nodes of a window at once; the answers are then read in
        order, so the candidates are the ones the node-by-node search would find. When
        moreover only NodeResourcesFit reads the nodes' pods, nodes that cannot be
        candidates are ruled out on columns first (``search``).
        """
        per_table = self.potential_nodes(diagnosis, tables)
        if not per_table:
            return [], {}, []
        owners = np.concatenate(
            [np.full(len(rows), ti, dtype=np.int64) for ti, (_, rows) in enumerate(per_table)]
        )
        all_rows = np.concatenate([rows for _, rows in per_table])
        pdbs = list((getattr(snapshot, "pdbs", None) or {}).values())
        n = len(all_rows)
        offset = self._handle.rng.randrange(n)
        wanted = num_candidates(
            n, self.args.min_candidate_nodes_percentage, self.args.min_candidate_nodes_absolute
        )
        lookup = self._handle.nominated_pods
        batched = nodes_independent(fwk, state)
        order = np.roll(np.arange(n, dtype=np.int64), -offset)
        search = (fwk, state, pod, per_table, owners, all_rows, pdbs, lookup, batched, wanted)
        if batched and self.screen_nodes:
            keep = screen_rows(
                fwk, state, pod, [t for t, _ in per_table], owners[order], all_rows[order], lookup
            )
            if keep is not None:
                found = self._search(*search, order[keep])
                if found[0]:
                    return found
                # the statuses of the nodes left out make the FitError message
        return self._search(*search, order)

    def _search(
        self,
        fwk: Any,
        state: CycleState,
        pod: Pod,
        per_table: list[tuple[NodeTable, np.ndarray]],
        owners: np.ndarray,
        all_rows: np.ndarray,
        pdbs: list[Any],
        lookup: Any,
        batched: bool,
        wanted: int,
        order: np.ndarray,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """The dry runs of ``find_candidates`` over the potential nodes ``order`` (indexes
        into ``owners``/``all_rows``), in that order."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        n = len(order)
        pos = 0
        hits = 0  # nodes that turned out to be candidates
        window = max(wanted, 1)
        while pos < n:
            chunk = order[pos : pos + window] if batched else order[pos : pos + 1]
            pos += len(chunk)
            for (table, row), (victims, status) in self._dry_run(
                fwk, state, pod, per_table, owners[chunk], all_rows[chunk], pdbs, lookup, batched
            ):
                name = table.names[row]
                assert name is not None
                if status.is_success and victims is not None and victims.pods:
                    hits += 1
                    bucket = violating if victims.num_pdb_violations else non_violating
                    if len(bucket) < wanted:  # upstream's candidate lists hold at most `wanted`
                        bucket.append(Candidate(name, victims))
                    if non_violating and len(non_violating) + len(violating) >= wanted:
                        return non_violating + violating, statuses, errors
                    continue
                if status.is_success:
                    status = Status(
                        Code.ERROR, (f'expected at least one victim pod on node "{name}"',)
                    )
                if status.code == Code.ERROR:
                    errors.append(status.message())
                statuses[name] = status
            # Next window: what the candidates still missing need at the rate seen so far.
            missing = wanted - len(non_violating) - len(violating)
            if hits and missing > 0:
                window = int(missing * pos / hits * 1.25) + 16
            else:
                window *= 2
        return non_violating + violating, statuses, errors

    @staticmethod
    def _dry_run(
        fwk: Any,
        state: CycleState,
        pod: Pod,
        per_table: list[tuple[NodeTable, np.ndarray]],
        owners: np.ndarray,
        rows: np.ndarray,
        pdbs: list[Any],
        lookup: Any,
        batched: bool,
    ) -> Iterable[tuple[tuple[NodeTable, int], tuple[Victims | None, Status]]]:
        """SelectVictimsOnNode for ``rows`` (of the tables ``owners`` names), in order.
        Node by node, the answers are computed as they are read, so a search that stops
        early never evaluates the rest."""

        def each() -> Iterator[tuple[tuple[NodeTable, int], tuple[Victims | None, Status]]]:
            for ti, row in zip(owners.tolist(), rows.tolist(), strict=True):
                table = per_table[ti][0]
                name = table.names[row]
                assert name is not None
                res = select_victims_on_node(
                    fwk, state.clone(), pod, table, row, pdbs, nominated_for(lookup, name)
                )
                yield (table, row), res

        if not batched:
            return each()
        answers: list[Any] = [None] * len(rows)
        try:
            for ti in np.unique(owners).tolist():
                at = np.flatnonzero(owners == ti)
                table = per_table[ti][0]
                many = select_victims_on_nodes(fwk, state, pod, table, rows[at], pdbs, lookup)
                for a, r, x in zip(at.tolist(), rows[at].tolist(), many, strict=True):
                    answers[a] = ((table, r), x)
        except SchedulerError:
            # A Filter error on some node of the window: go node by node, so that it
            # surfaces only if the search reaches that node, as it would upstream.
            return each()
        return answers


def new(args: DefaultPreemptionArgs | None, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args or DefaultPreemptionArgs(), handle)
