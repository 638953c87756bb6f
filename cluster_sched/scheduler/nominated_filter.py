"""Filter with nominated pods (upstream RunFilterPluginsWithNominatedPods), many nodes at once.

A node holding nominated pods of priority >= the pod's is filtered twice: first as if
those pods ran there (a failure is the node's answer), then as it is. After a wave of
preemptions most nodes hold a nomination, so which nodes those are, and which of their
pods count, is worked out once per search (``NominatedRows``), not once per window or
node: the nominations and the pods they name do not change during one search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
from cluster_sched.queue.nominees import AtLeast, Columns

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
    pods: Mapping[int, Sequence[Pod]]
    #: the same nominees per node (``AtLeast``) when they were read from one, the pod
    #: left out by ``except_uid``: their request sums come from its ``columns``
    kept: AtLeast | None = None
    except_uid: str | None = None

    def columns(self, table: NodeTable, names: tuple[str, ...]) -> Columns | None:
        """The nominees' counts and request sums of ``names`` per row, if ``kept``."""
        if self.kept is None:
            return None
        return self.kept.columns(table, names, AMOUNT_LIMIT, None, self.except_uid)


class _RowPods(Mapping[int, Sequence[Pod]]):
    """row -> its nominees from an ``AtLeast``, the pod ``uid`` left out, read on demand."""

    def __init__(self, kept: AtLeast, names: Sequence[str | None], rows: np.ndarray, uid: str):
        self._kept, self._names, self._uid = kept, names, uid
        self._rows = set(rows.tolist())

    def __getitem__(self, row: int) -> Sequence[Pod]:
        if row not in self._rows:
            raise KeyError(row)
        uid = self._uid
        return [p for p in self._kept.pods[self._names[row]] if p.meta.uid != uid]  # type: ignore[index]

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._rows))

    def __len__(self) -> int:
        return len(self._rows)


def nominated_rows(
    nominated: NominatedPods, table: NodeTable, pod: Pod, among: np.ndarray | None = None
) -> NominatedRows:
    """``NominatedRows`` of ``pod`` over the whole table, or only ``among`` those rows."""
    prio, uid = pod.priority, pod.uid
    if among is None or len(among) >= _FEW_ROWS:
        at_least = getattr(nominated, "at_least", None)
        kept = at_least(prio) if at_least is not None else None
        if kept is None:  # any other mapping: its nominees worked out here
            kept = AtLeast.of(nominated.items(), prio)
        col = kept.columns(table, (), AMOUNT_LIMIT, None, uid)
        count = col.count
        if col.overrides:
            count = count.copy()
            for row, (n, _) in col.overrides.items():
                count[row] = n
        rows = np.flatnonzero(count).astype(np.int64)
        return NominatedRows(rows, _RowPods(kept, table.names, rows, uid), kept, uid)
    index = table.index
    pods: dict[int, Sequence[Pod]] = {}
    for name, noms in _items_at(nominated, table, among):
        row = index.get(name)
        if row is None:
            continue
        ge = [p for p in noms if p.priority >= prio and p.uid != uid]
        if ge:
            pods[row] = ge
    rows = np.fromiter(sorted(pods), dtype=np.int64, count=len(pods))
    return NominatedRows(rows, pods)


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

    def nominees() -> list[Sequence[Pod]]:
        return [noms.pods[int(rows[i])] for i in hits.tolist()]

    if not nodes_independent(fwk, state):
        special = {
            i: _one_node(fwk, state, pod, table, int(rows[i]), ge)
            for i, ge in zip(hits.tolist(), nominees(), strict=True)
        }
        return verdicts.with_overrides(special)
    if columns:
        first = first_pass_on_columns(
            fwk, state, pod, table, rows[hits], nominees, verdicts, hits, noms.columns
        )
        if first is not None:
            return verdicts.overlay(hits, first)
    # Pass 1 for all those nodes at once on one copy of their rows (the pods added
    # touch no cycle state); pass 2 is ``verdicts``.
    sub = table.subset(rows[hits])
    ges = nominees()
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
    nominees: Callable[[], Sequence[Sequence[Pod]]],
    verdicts: FilterVerdicts,
    hits: np.ndarray,
    columns: Callable[[NodeTable, tuple[str, ...]], Columns | None] | None = None,
) -> FilterVerdicts | None:
    """Pass 1 for rows ``at`` (``verdicts``' positions ``hits``) with their nominees
    (``nominees()``, called only when ``columns`` does not know them), on arrays, when only NodeResourcesFit reads a node's pods (``fitonly``'s
    plan), else None. The node-only plugins answer pass 1 as they answered pass 2; Fit
    answers from free capacity and room less the nominees' requests (its own
    ``fit_failures``). So pass 1 fails at Fit where Fit fails with the nominees, unless a
    node-only plugin before Fit failed already: then pass 1 is pass 2's answer and is
    left passing here (``overlay`` keeps pass 2). Where Fit passes with the nominees it
    passed without them too, and pass 1 is again pass 2's answer. None also for rows
    near int64's range. ``columns`` (``NominatedRows.columns``) gives the nominees'
    counts and request sums per row without walking them, when it knows them."""
    plan = fit_only_plan(fwk, state, pod)
    if plan is None or list(verdicts.plugin_names) != list(fwk.filter_names):
        return None
    if table.overflow and table.overflow.has_any(at.tolist()):
        return None
    if table.amount_bound[at].max() >= AMOUNT_LIMIT:
        return None
    names = [n for n, _ in plan.checked]
    k = len(at)
    known = columns(table, tuple(names)) if columns is not None else None
    if known is not None:
        counts, sums, big = known.at(at)
        if big.any():
            return None
    else:
        ges = nominees()
        counts = np.fromiter(map(len, ges), dtype=np.int64, count=k)
        sums = np.zeros((len(names), k), dtype=np.int64)
        for j, ge in enumerate(ges):
            for c, name in enumerate(names):
                total = sum(p.requests.get(name, 0) for p in ge)
                if total >= AMOUNT_LIMIT:
                    return None
                sums[c, j] = total
    room = table.allowed_pods[at] - table.pod_count[at] - counts
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
