"""Filter with nominated pods (upstream RunFilterPluginsWithNominatedPods), many nodes at once.

A node holding nominated pods of priority >= the pod's is filtered twice: first as if
those pods ran there (a failure is the node's answer), then as it is. After a wave of
preemptions most nodes hold a nomination, so which nodes those are, and which of their
pods count, is worked out once per search (``NominatedRows``), not once per window or
node: the nominations and the pods they name do not change during one search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.errors import SchedulerError
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FilterVerdicts
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Status
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import nodes_independent
from cluster_sched.plugins.defaultpreemption.fitonly import AMOUNT_LIMIT, fit_only_plan
from cluster_sched.plugins.noderesources.fit import fit_failures
from cluster_sched.queue.nominees import AtLeast

#: node name -> pods nominated to it, only for nodes that have any (the nominator's view
#: for this cycle). A mapping, so Filter touches only those few nodes individually.
NominatedPods = Mapping[str, Sequence[Pod]]

#: looked up node by node (not by a walk over every nomination) below this many rows
_FEW_ROWS = 8


@dataclass(frozen=True, slots=True)
class NominatedRows:
    """The rows ``pod`` is filtered twice on, sorted, and per row the nominated pods
    that count there (priority >= the pod's, not the pod itself), in nomination order."""

    rows: np.ndarray
    pods: dict[int, Sequence[Pod]]
    #: the same nominees per node with their request sums (``AtLeast.totals``), when
    #: they were read from one (the pod is left out by ``except_uid``)
    kept: AtLeast | None = None
    except_uid: str | None = None

    def totals(self, table: NodeTable, names: tuple[str, ...]) -> dict[int, tuple[int, ...]] | None:
        """row -> the request sums of ``names`` of its nominees, if ``kept`` knows them."""
        if self.kept is None:
            return None
        index = table.index
        out: dict[int, tuple[int, ...]] = {}
        for name, (_, sums) in self.kept.totals(names, None, self.except_uid).items():
            row = index.get(name)
            if row is not None:
                out[row] = sums
        return out


def nominated_rows(
    nominated: NominatedPods, table: NodeTable, pod: Pod, among: np.ndarray | None = None
) -> NominatedRows:
    """``NominatedRows`` of ``pod`` over the whole table, or only ``among`` those rows."""
    index = table.index
    prio, uid = pod.priority, pod.uid
    items: Iterable[tuple[str, Sequence[Pod]]]
    filtered = False
    kept: AtLeast | None = None
    if among is not None and len(among) < _FEW_ROWS:
        items = _items_at(nominated, table, among)
    else:
        at_least = getattr(nominated, "at_least", None)
        kept = at_least(prio) if at_least is not None else None
        if kept is None:  # any other mapping: its nominees worked out here
            kept = AtLeast.of(nominated.items(), prio)
        items, filtered = kept.items(except_uid=uid), True  # filtered as it is read
    pods: dict[int, Sequence[Pod]] = {}
    for name, noms in items:
        row = index.get(name)
        if row is None:
            continue
        ge = noms if filtered else [p for p in noms if p.priority >= prio and p.uid != uid]
        if ge:
            pods[row] = ge
    rows = np.fromiter(sorted(pods), dtype=np.int64, count=len(pods))
    return NominatedRows(rows, pods, kept, uid)


def _items_at(
    nominated: NominatedPods, table: NodeTable, rows: np.ndarray
) -> Iterable[tuple[str, Sequence[Pod]]]:
    for row in rows.tolist():
        name = table.names[row]
        if name is None:
            continue
        try:  # one __getitem__: ``in`` then ``[]`` would walk a view's entry twice
            yield name, nominated[name]
        except KeyError:
            continue


def filter_with_nominated(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    rows: np.ndarray,
    noms: NominatedRows,
    verdicts: FilterVerdicts,
    columns: bool = True,
) -> FilterVerdicts:
    """``verdicts`` (Filter of ``rows`` as they are: the second pass) with each row of
    ``noms`` answering its first pass, with its nominated pods added, where that fails.
    ``columns`` False always runs pass 1 on copies of the rows (the tests' reference)."""
    hits = np.flatnonzero(np.isin(rows, noms.rows)) if len(noms.rows) else noms.rows
    if not len(hits):
        return verdicts
    ges = [noms.pods[int(rows[i])] for i in hits.tolist()]
    if not nodes_independent(fwk, state):
        special = {
            i: _one_node(fwk, state, pod, table, int(rows[i]), ge)
            for i, ge in zip(hits.tolist(), ges, strict=True)
        }
        return verdicts.with_overrides(special)
    if columns:
        first = first_pass_on_columns(
            fwk, state, pod, table, rows[hits], ges, verdicts, hits, noms.totals
        )
        if first is not None:
            return verdicts.overlay(hits, first)
    # Pass 1 for all those nodes at once on one copy of their rows (the pods added
    # touch no cycle state); pass 2 is ``verdicts``.
    sub = table.subset(rows[hits])
    sub.add_pods([j for j, ge in enumerate(ges) for _ in ge], [p for ge in ges for p in ge], 1)
    first = fwk.run_filter(state, pod, NodeSlice(sub, np.arange(len(hits), dtype=np.int64)))
    return verdicts.overlay(hits, FilterVerdicts.of(first, fwk.filter_names))


def _one_node(
    fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, row: int, ge: Sequence[Pod]
) -> Status:
    """Pass 1 with the nominated pods added (state and node), pass 2 without them."""
    sub = table.subset(np.asarray([row], dtype=np.int64))
    state1 = state.clone()
    node_name = table.names[row]
    assert node_name is not None
    for p in ge:
        sub.add_pod(0, p)
        s = fwk.run_pre_filter_add_pod(state1, pod, p, node_name)
        if not s.is_success:
            # upstream addGENominatedPods: an AddPod failure fails the whole attempt
            raise SchedulerError(s.message())
    first = fwk.run_filter(state1, pod, NodeSlice(sub, np.zeros(1, dtype=np.int64)))
    if not fwk.filter_status(first, 0).is_success:
        return fwk.filter_status(first, 0)
    rows = np.asarray([row], dtype=np.int64)
    return fwk.filter_status(fwk.run_filter(state, pod, NodeSlice(table, rows)), 0)


def first_pass_on_columns(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    at: np.ndarray,
    ges: Sequence[Sequence[Pod]],
    verdicts: FilterVerdicts,
    hits: np.ndarray,
    totals: Callable[[NodeTable, tuple[str, ...]], dict[int, tuple[int, ...]] | None] | None = None,
) -> FilterVerdicts | None:
    """Pass 1 for rows ``at`` (``verdicts``' positions ``hits``) with their nominees
    ``ges``, on arrays, when only NodeResourcesFit reads a node's pods (``fitonly``'s
    plan), else None. The node-only plugins answer pass 1 as they answered pass 2; Fit
    answers from free capacity and room less the nominees' requests (its own
    ``fit_failures``). So pass 1 fails at Fit where Fit fails with the nominees, unless a
    node-only plugin before Fit failed already: then pass 1 is pass 2's answer and is
    left passing here (``overlay`` keeps pass 2). Where Fit passes with the nominees it
    passed without them too, and pass 1 is again pass 2's answer. None also for rows
    near int64's range. ``totals`` (``NominatedRows.totals``) gives the nominees'
    request sums per row without walking them, when it knows them."""
    plan = fit_only_plan(fwk, state, pod)
    if plan is None or list(verdicts.plugin_names) != list(fwk.filter_names):
        return None
    if table.overflow and table.overflow.has_any(at.tolist()):
        return None
    if table.amount_bound[at].max() >= AMOUNT_LIMIT:
        return None
    names = [n for n, _ in plan.checked]
    k = len(at)
    sums = np.zeros((len(names), k), dtype=np.int64)
    known = totals(table, tuple(names)) if totals is not None else None
    for j, ge in enumerate(ges):
        row_sums = known.get(int(at[j])) if known is not None else None
        for c, name in enumerate(names):
            total = (
                row_sums[c] if row_sums is not None else sum(p.requests.get(name, 0) for p in ge)
            )
            if total >= AMOUNT_LIMIT:
                return None
            sums[c, j] = total
    room = table.allowed_pods[at] - table.pod_count[at]
    room -= np.fromiter(map(len, ges), dtype=np.int64, count=k)
    allocs: list[np.ndarray] = []
    frees: list[np.ndarray] = []
    zero = np.zeros(k, dtype=np.int64)
    for c, name in enumerate(names):
        col = table.resources.get(name)
        free = table.free[col][at] if col >= 0 else zero
        if ((free >= AMOUNT_LIMIT) | (free <= -AMOUNT_LIMIT)).any():
            return None
        allocs.append(table.allocatable[col][at] if col >= 0 else zero)
        frees.append(free - sums[c])
    v = fit_failures(room, allocs, frees, plan.checked)
    codes = v.codes.copy()
    earlier = (verdicts.codes[hits] != 0) & (verdicts.plugin_idx[hits] < plan.fit_idx)
    codes[earlier] = 0
    plugin_idx = np.full(k, plan.fit_idx, dtype=verdicts.plugin_idx.dtype)
    return FilterVerdicts(codes, v.reason_ids, plugin_idx, v.reasons, verdicts.plugin_names)
