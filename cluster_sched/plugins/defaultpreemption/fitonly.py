"""SelectVictimsOnNode for many nodes when only NodeResourcesFit looks at a node's pods.

``batch`` already dry-runs independent nodes together, but it still copies their rows
(``NodeTable.subset``), moves every victim through ``add_pods`` and runs the whole
Filter once per reprieve step. When the active Filter plugins are NodeResourcesFit plus
plugins that read only the node itself (``NODE_ONLY_FILTERS``: unschedulable, name,
taints, node affinity), and no PreFilter extension runs (``nodes_independent``), all of
that reduces to arithmetic on a few int64 columns:

- the node-only plugins answer the same whatever pods the node holds: they run once,
  on the original rows (``run_filter(only=...)``);
- NodeResourcesFit answers from ``room`` (allowed pods minus pods) and, per resource
  the pod requests, ``free``; removing or adding a pod moves those by its requests.
  The verdicts of failing nodes come from ``fit.fit_failures``, the plugin's own code;
- the reprieve loop runs in ``reprieve`` (numba kernel, numpy reference).

Each node's answer (victims, their order, PDB violations, failure Status) is exactly
what ``victims.select_victims_on_node`` returns (``tests/plugins/defaultpreemption/
test_fitonly.py`` checks this on random clusters). ``fit_only_plan`` says whether the
plugins allow it for this pod; ``select_victims_fit_only`` answers None for rows it
cannot handle exactly (int64 sums near overflow), and the caller uses ``batch``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod, PodDisruptionBudget
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FilterVerdicts
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import SUCCESS, Code, Status, unresolvable
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import nodes_independent
from cluster_sched.plugins.defaultpreemption.reprieve import reprieve
from cluster_sched.plugins.defaultpreemption.victims import (
    ERR_NO_VICTIMS,
    NominatedLookup,
    Victims,
    importance_key,
    importance_order,
    nominated_for,
    nominees_at_least,
    split_by_pdb_violation,
)
from cluster_sched.plugins.names import (
    NODE_AFFINITY,
    NODE_NAME,
    NODE_RESOURCES_FIT,
    NODE_UNSCHEDULABLE,
    TAINT_TOLERATION,
)
from cluster_sched.plugins.noderesources.fit import Fit, fit_failures

__all__ = [
    "AMOUNT_LIMIT",
    "NODE_ONLY_FILTERS",
    "FitOnlyPlan",
    "fit_only_plan",
    "select_victims_fit_only",
]

#: Filter plugins whose verdict reads the node object alone, never the pods on it.
NODE_ONLY_FILTERS = frozenset({NODE_UNSCHEDULABLE, NODE_NAME, TAINT_TOLERATION, NODE_AFFINITY})

#: one node's dry-run answer, as select_victims_on_node returns it
Result = tuple[Victims | None, Status]

_NO_VICTIMS = unresolvable(ERR_NO_VICTIMS)
#: Rows whose pods' amounts (``NodeTable.amount_bound``), or nominees' requests, reach
#: this are left to the copies: below it no sum or difference here leaves int64.
AMOUNT_LIMIT = float(2**61)


@dataclass(frozen=True, slots=True)
class FitOnlyPlan:
    """What the arithmetic dry run needs from the profile for one pod."""

    #: index of NodeResourcesFit in ``fwk.filter`` (Filter order decides the status)
    fit_idx: int
    #: the other active Filter plugins (all in NODE_ONLY_FILTERS)
    others: frozenset[str]
    #: (resource, amount > 0) NodeResourcesFit checks, in its order
    checked: tuple[tuple[str, int], ...]


def fit_only_plan(fwk: Any, state: CycleState, pod: Pod) -> FitOnlyPlan | None:
    """The plan when the arithmetic dry run is exact for ``pod`` in this cycle, else None."""
    if not nodes_independent(fwk, state):
        return None
    skipped = state.skip_filter_plugins
    fit_idx = -1
    fit: Fit | None = None
    others: set[str] = set()
    for i, pl in enumerate(fwk.filter):
        if pl.name in skipped:
            continue
        if pl.name == NODE_RESOURCES_FIT and isinstance(pl, Fit):
            fit_idx, fit = i, pl
        elif pl.name in NODE_ONLY_FILTERS:
            others.add(pl.name)
        else:
            return None
    if fit is None:
        return None
    checked = tuple((n, a) for n, a in fit.filter_requests(state, pod) if a > 0)
    return FitOnlyPlan(fit_idx, frozenset(others), checked)


def _requests(pods: Sequence[Pod], names: Sequence[str]) -> np.ndarray:
    """int64[len(pods), len(names)]: each pod's request of each resource."""
    out = np.zeros((len(pods), len(names)), dtype=np.int64)
    for c, name in enumerate(names):
        out[:, c] = np.fromiter((p.requests.get(name, 0) for p in pods), np.int64, len(pods))
    return out


def select_victims_fit_only(
    plan: FitOnlyPlan,
    fwk: Any,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    rows: np.ndarray,
    pdbs: Sequence[PodDisruptionBudget],
    lookup: NominatedLookup = None,
) -> list[Result] | None:
    """``select_victims_on_node`` for every row of ``rows`` (see the module doc), or None
    when the rows' sums come near int64's range. Nothing is modified.

    A node's answer is its NodeResourcesFit outcome (``_fit_outcomes``: no victims, Fit's
    failure, or the victims of the reprieve) combined with the node-only plugins'
    verdicts, which read no pods: the first failing plugin in Filter order wins."""
    rows = np.asarray(rows, dtype=np.int64)
    outcomes = _remembered_outcomes(plan, fwk, pod, table, rows, pdbs, lookup)
    if outcomes is None:
        return None
    judged = [i for i, (_, status) in enumerate(outcomes) if status is not _NO_VICTIMS]
    if not judged or not plan.others:
        return outcomes
    other = _other_verdicts(plan, fwk, state, pod, table, rows[judged])
    assert other is not None
    failed = other.codes != 0
    for j in np.flatnonzero(failed).tolist():
        i = judged[j]
        fit_failed = not outcomes[i][1].is_success
        if other.plugin_idx[j] < plan.fit_idx or not fit_failed:
            outcomes[i] = (None, other(j))
    return outcomes


#: per table, per (priority, checked, Fit's name): row -> (what the outcome was read
#: from, the outcome); see ``_remembered_outcomes``
_MEMO: weakref.WeakKeyDictionary[NodeTable, dict[Any, dict[int, tuple[Any, Result]]]] = (
    weakref.WeakKeyDictionary()
)
_MEMO_KEYS = 8


def _remembered_outcomes(
    plan: FitOnlyPlan,
    fwk: Any,
    pod: Pod,
    table: NodeTable,
    rows: np.ndarray,
    pdbs: Sequence[PodDisruptionBudget],
    lookup: NominatedLookup,
) -> list[Result] | None:
    """``_fit_outcomes`` of ``rows``, reusing a row's earlier outcome for a pod of the same
    priority and checked requests while the row holds the very same pod objects (by
    identity: a replaced object may start later), the same nominees count there, and the
    node is unchanged (``node_version``). With PDBs nothing is reused (their budgets
    change with pods elsewhere)."""
    fit_name = fwk.filter_names[plan.fit_idx]
    if pdbs:
        return _fit_outcomes(plan, fit_name, pod, table, rows, pdbs, lookup)
    by_shape = _MEMO.get(table)
    if by_shape is None:
        by_shape = _MEMO[table] = {}
    shape = (pod.priority, plan.checked, fit_name)
    memo = by_shape.get(shape)
    if memo is None:
        if len(by_shape) >= _MEMO_KEYS:
            by_shape.pop(next(iter(by_shape)))
        memo = by_shape[shape] = {}
    row_pods, names, versions = table.row_pods, table.names, table.row_version
    node_version = table.node_version
    nominees = _nominees_on(pod, lookup)
    out: list[Result | None] = [None] * len(rows)
    missed: list[int] = []
    reads: list[tuple[Any, ...]] = []
    for i, r in enumerate(rows.tolist()):
        name = names[r]
        assert name is not None
        read = (
            int(versions[r]),
            node_version,
            tuple(row_pods[r].values()),
            tuple(nominees(name)),
        )
        hit = memo.get(r)
        if hit is not None and _same(hit[0], read):
            out[i] = hit[1]
        else:
            missed.append(i)
            reads.append(read)
    if missed:
        got = _fit_outcomes(plan, fit_name, pod, table, rows[missed], pdbs, lookup)
        if got is None:
            return None
        for i, read, res in zip(missed, reads, got, strict=True):
            out[i] = res
            memo[int(rows[i])] = (read, res)
    return out  # type: ignore[return-value]


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Same row version, node version, pod objects and nominee objects (by identity)."""
    if a[0] != b[0] or a[1] != b[1] or len(a[2]) != len(b[2]) or len(a[3]) != len(b[3]):
        return False
    return all(x is y for x, y in zip(a[2], b[2], strict=True)) and all(
        x is y for x, y in zip(a[3], b[3], strict=True)
    )


def _nominees_on(pod: Pod, lookup: NominatedLookup) -> Callable[[str], Sequence[Pod]]:
    """node name -> RunFilterPluginsWithNominatedPods' nominees there: priority >= the
    pod's, not the pod (by namespace/name). From ``nominees_at_least`` when the lookup
    lists its nodes (worked out once, not per node)."""
    kept = nominees_at_least(lookup, pod.priority)
    if kept is not None:
        key = pod.key
        return lambda name: kept.on(name, key)
    prio, ns, nm = pod.priority, pod.meta.namespace, pod.meta.name
    return lambda name: [
        p
        for p in nominated_for(lookup, name)
        if p.priority >= prio and (p.meta.name != nm or p.meta.namespace != ns)
    ]


def _fit_outcomes(
    plan: FitOnlyPlan,
    fit_name: str,
    pod: Pod,
    table: NodeTable,
    rows: np.ndarray,
    pdbs: Sequence[PodDisruptionBudget],
    lookup: NominatedLookup,
) -> list[Result] | None:
    """Per row: ``(None, no victims)``, ``(None, NodeResourcesFit's failure)`` once every
    lower-priority pod is gone (with the nominees, if that pass fails), or the victims
    the reprieve leaves; None when the rows' sums come near int64's range."""
    k = len(rows)
    prio = pod.priority
    row_pods, names = table.row_pods, table.names
    rows_list = rows.tolist()
    mine = [[p for p in row_pods[r].values() if p.priority < prio] for r in rows_list]
    results: list[Result | None] = [None if ps else (None, _NO_VICTIMS) for ps in mine]
    alive = [i for i in range(k) if mine[i]]
    if not alive:
        return results  # type: ignore[return-value]
    potential = [mine[i] for i in alive]
    at = rows[alive]
    if table.overflow and table.overflow.has_any(at.tolist()):
        return None
    if table.amount_bound[at].max() >= AMOUNT_LIMIT:
        return None
    nom_flat: list[Pod] = []
    nom_owner: list[int] = []
    if lookup is not None:
        nominees = _nominees_on(pod, lookup)
        for j, i in enumerate(alive):
            found = nominees(names[rows_list[i]])  # type: ignore[arg-type]
            nom_flat.extend(found)
            nom_owner.extend([j] * len(found))

    # Fit's inputs after removing every lower-priority pod: plain, and with the nominees.
    res_names = [n for n, _ in plan.checked]
    amount = np.asarray([a for _, a in plan.checked], dtype=np.int64)
    a = len(alive)
    cols = [table.resources.get(n) for n in res_names]
    alloc = np.zeros((a, len(cols)), dtype=np.int64)
    free = np.zeros((a, len(cols)), dtype=np.int64)
    for c, col in enumerate(cols):
        if col >= 0:
            alloc[:, c] = table.allocatable[col][at]
            free[:, c] = table.free[col][at]
    counts = np.fromiter(map(len, potential), np.int64, a)
    offsets = np.zeros(a + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = [p for ps in potential for p in ps]
    req = _requests(flat, res_names)
    if len(cols):
        free += np.add.reduceat(req, offsets[:-1], axis=0)
    room = table.allowed_pods[at] - table.pod_count[at] + counts
    nom_free, nom_room = free.copy(), room.copy()
    has_nom = np.zeros(a, dtype=bool)
    if nom_flat:
        owner = np.asarray(nom_owner, dtype=np.int64)
        nom_req = _requests(nom_flat, res_names)
        approx = np.zeros((a, len(cols)))
        np.add.at(approx, owner, nom_req.astype(np.float64))
        if len(cols) and approx.max() >= AMOUNT_LIMIT:
            return None
        added = np.zeros((a, len(cols)), dtype=np.int64)
        np.add.at(added, owner, nom_req)
        nom_free -= added
        nom_room -= np.bincount(owner, minlength=a)
        has_nom[owner] = True

    # NodeResourcesFit after the removal. RunFilterPluginsWithNominatedPods: the pass with
    # the nominees first, if it fails (it fails whenever the plain pass does).
    fails = (room < 1) | (free < amount).any(axis=1)
    nom_fails = (nom_room < 1) | (nom_free < amount).any(axis=1)
    use_nom = has_nom & nom_fails
    use_plain = ~use_nom & fails
    for mask, r, f in ((use_nom, nom_room, nom_free), (use_plain, room, free)):
        if mask.any():
            where = np.flatnonzero(mask)
            _put(results, alive, where.tolist(), _fit_failures(r, alloc, f, where, plan, fit_name))
    passing = np.flatnonzero(~(use_nom | use_plain)).tolist()
    if not passing:
        return results  # type: ignore[return-value]

    # Reprieve order per node: PDB-violating pods first, then the others, by importance.
    sel = np.asarray(passing, dtype=np.int64)
    c_offsets = np.zeros(len(passing) + 1, dtype=np.int64)
    np.cumsum(counts[sel], out=c_offsets[1:])
    total = int(c_offsets[-1])
    group = np.repeat(np.arange(len(passing), dtype=np.int64), counts[sel])
    picked = (np.arange(total, dtype=np.int64) - c_offsets[group] + offsets[sel][group]).tolist()
    ordered: list[int] = [picked[v] for v in importance_order([flat[v] for v in picked], group)]
    n_violating = [0] * len(passing)
    if pdbs:
        bounds = c_offsets.tolist()
        for n in range(len(passing)):
            seg = ordered[bounds[n] : bounds[n + 1]]
            violating, ok = split_by_pdb_violation([flat[v] for v in seg], pdbs)
            index = {id(flat[v]): v for v in seg}
            ordered[bounds[n] : bounds[n + 1]] = [index[id(p)] for p in (*violating, *ok)]
            n_violating[n] = len(violating)
    kept = reprieve(
        free[sel], room[sel], nom_free[sel], nom_room[sel], amount, c_offsets, req[ordered]
    ).tolist()
    bounds = c_offsets.tolist()
    for n, j in enumerate(passing):
        start, end = bounds[n], bounds[n + 1]
        victims = [flat[ordered[v]] for v in range(start, end) if not kept[v]]
        violations = 0
        if n_violating[n]:
            violations = sum(1 for v in range(start, start + n_violating[n]) if not kept[v])
        if 0 < n_violating[n] < end - start:
            victims.sort(key=importance_key)  # both groups non-empty, as upstream
        results[alive[j]] = (Victims(tuple(victims), violations), SUCCESS)
    return results  # type: ignore[return-value]


def _put(results: list[Any], alive: list[int], where: list[int], answers: list[Any]) -> None:
    """Node ``alive[where[n]]`` answers ``answers[n]``."""
    for j, answer in zip(where, answers, strict=True):
        results[alive[j]] = answer


def _other_verdicts(
    plan: FitOnlyPlan, fwk: Any, state: CycleState, pod: Pod, table: NodeTable, at: np.ndarray
) -> FilterVerdicts | None:
    """The node-only plugins' verdicts on the original rows (the pods do not matter)."""
    if not plan.others:
        return None
    out = fwk.run_filter(state, pod, NodeSlice(table, at), only=plan.others)
    return FilterVerdicts.of(out, fwk.filter_names)


def _fit_failures(
    room: np.ndarray,
    alloc: np.ndarray,
    free: np.ndarray,
    at: np.ndarray,
    plan: FitOnlyPlan,
    plugin: str,
) -> list[Result]:
    """``(None, NodeResourcesFit's Status)`` for nodes ``at`` of these arrays, all
    failing (the plugin's own ``fit_failures``; nodes failing alike share one answer)."""
    m = len(plan.checked)
    v = fit_failures(
        room[at], [alloc[at, c] for c in range(m)], [free[at, c] for c in range(m)], plan.checked
    )
    combo = v.codes.astype(np.int64) * len(v.reasons) + v.reason_ids
    uniq, first, inverse = np.unique(combo, return_index=True, return_inverse=True)
    distinct = np.empty(len(uniq), dtype=object)
    for u, n in enumerate(first.tolist()):
        distinct[u] = (None, Status(Code(int(v.codes[n])), v.reasons_of(n), plugin))
    return distinct[inverse.reshape(-1)].tolist()  # type: ignore[no-any-return]
