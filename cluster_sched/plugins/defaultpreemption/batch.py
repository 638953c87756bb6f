"""SelectVictimsOnNode for many nodes at once, when the nodes cannot influence each other.

Upstream dry-runs each candidate node on its own copy with its own clone of the cycle
state. The state only changes through PreFilter extensions (AddPod/RemovePod); when no
active PreFilter plugin has them (a pod without pod (anti-)affinity or spread
constraints: InterPodAffinity and PodTopologySpread returned Skip), every node's dry run
depends on that node alone. Then all of them share one copy of the rows
(``NodeTable.subset``) and one vectorised Filter per step:

1. remove every lower-priority pod of each node; nodes with none get "No preemption
   victims found"; one Filter over the others: the failing ones are not candidates;
2. reprieve in rounds: round ``j`` adds back each node's ``j``-th pod in upstream's
   order (PDB-violating pods first, then the others, each by importance); one Filter
   over the nodes that have a ``j``-th pod; where the pod no longer fits it goes out
   again and stays a victim (a PDB violation if it came from the violating group).

Nominated pods (RunFilterPluginsWithNominatedPods) are kept in a second copy of the
rows that have any of equal or higher priority: the same changes are applied to it, and
a node's status is its first pass (with them) when that fails, else its second.
Each node's result is exactly what ``victims.select_victims_on_node`` returns for it.

When NodeResourcesFit is the only active Filter that reads a node's pods, the same
answers come from arithmetic on a few columns instead (``fitonly``, tried first by
``select_victims_on_nodes``); ``select_victims_on_copies`` is the general path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod, PodDisruptionBudget
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FilterVerdicts
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import SUCCESS, Status, unresolvable
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.crossnode import nodes_independent
from cluster_sched.plugins.defaultpreemption.fitonly import fit_only_plan, select_victims_fit_only
from cluster_sched.plugins.defaultpreemption.victims import (
    ERR_NO_VICTIMS,
    NominatedLookup,
    Victims,
    importance_key,
    nominated_for,
    split_by_pdb_violation,
)

__all__ = ["nodes_independent", "select_victims_on_copies", "select_victims_on_nodes"]

#: one node's dry-run answer, as select_victims_on_node returns it
Result = tuple[Victims | None, Status]


class _Simulation:
    """The copied rows (``sub``) and, for rows with nominated pods of priority >= the
    pod's, a second copy with those pods added (``nom``, row ``nom_row[i]``)."""

    def __init__(
        self, fwk: Any, state: CycleState, pod: Pod, sub: NodeTable, nominated: list[list[Pod]]
    ) -> None:
        self.fwk = fwk
        self.state = state
        self.pod = pod
        self.sub = sub
        k = sub.size
        self.nom_row = np.full(k, -1, dtype=np.int64)
        self.nom: NodeTable | None = None
        self._nominated = nominated
        self._state1 = state

    def start_nominated(self) -> None:
        """Copy the rows holding nominated pods (after the victims' removal) and add them."""
        with_nom = [i for i, ge in enumerate(self._nominated) if ge]
        if not with_nom:
            return
        self.nom = self.sub.subset(np.asarray(with_nom, dtype=np.int64))
        self._state1 = self.state.clone()
        at: list[int] = []
        pods: list[Pod] = []
        for j, i in enumerate(with_nom):
            self.nom_row[i] = j
            at.extend([j] * len(self._nominated[i]))
            pods.extend(self._nominated[i])
        self.nom.add_pods(at, pods, 1)

    def add(self, rows: list[int], pods: list[Pod], sign: int = 1) -> None:
        """Pod ``pods[i]`` added to (``sign`` -1: removed from) local row ``rows[i]``."""
        self.sub.add_pods(rows, pods, sign)
        if self.nom is None:
            return
        nom_rows = self.nom_row[rows].tolist()
        mirrored = [(j, p) for j, p in zip(nom_rows, pods, strict=True) if j >= 0]
        if mirrored:
            self.nom.add_pods([j for j, _ in mirrored], [p for _, p in mirrored], sign)

    def filter(self, rows: np.ndarray) -> FilterVerdicts:
        """Verdicts for local ``rows`` (RunFilterPluginsWithNominatedPods per node)."""
        fwk = self.fwk
        out = fwk.run_filter(self.state, self.pod, NodeSlice(self.sub, rows))
        verdicts = FilterVerdicts.of(out, fwk.filter_names)
        if self.nom is None:
            return verdicts
        nom_rows = self.nom_row[rows]
        sel = np.flatnonzero(nom_rows >= 0)
        if not len(sel):
            return verdicts
        first = fwk.run_filter(self._state1, self.pod, NodeSlice(self.nom, nom_rows[sel]))
        return verdicts.overlay(sel, FilterVerdicts.of(first, fwk.filter_names))


def select_victims_on_nodes(
    fwk: Any,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    rows: np.ndarray,
    pdbs: Sequence[PodDisruptionBudget],
    lookup: NominatedLookup = None,
) -> list[Result]:
    """Dry-run preemption on ``rows`` of ``table`` together (only valid when
    ``nodes_independent``): on resource arrays when only NodeResourcesFit reads the
    nodes' pods (``fitonly``), else on copied rows (``select_victims_on_copies``).
    ``state`` is not modified."""
    plan = fit_only_plan(fwk, state, pod)
    if plan is not None:
        out = select_victims_fit_only(plan, fwk, state, pod, table, rows, pdbs, lookup)
        if out is not None:
            return out
    return select_victims_on_copies(fwk, state, pod, table, rows, pdbs, lookup)


def select_victims_on_copies(
    fwk: Any,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    rows: np.ndarray,
    pdbs: Sequence[PodDisruptionBudget],
    lookup: NominatedLookup = None,
) -> list[Result]:
    """Dry-run preemption on ``rows`` of ``table`` together on one copy of the rows
    (see the module doc; only valid when ``nodes_independent``)."""
    rows = np.asarray(rows, dtype=np.int64)
    k = len(rows)
    results: list[Result | None] = [None] * k
    if not k:
        return []
    sub = table.subset(rows)
    state = state.clone()
    names = sub.names
    potential: list[list[Pod]] = []
    nominated: list[list[Pod]] = []
    removed_at: list[int] = []
    removed: list[Pod] = []
    for i in range(k):
        mine = [p for p in sub.row_pods[i].values() if p.priority < pod.priority]
        removed_at.extend([i] * len(mine))
        removed.extend(mine)
        potential.append(mine)
        name = names[i]
        ge: list[Pod] = []
        if mine and name is not None:
            ge = [
                p
                for p in nominated_for(lookup, name)
                if p.priority >= pod.priority and p.key != pod.key
            ]
        nominated.append(ge)
        if not mine:
            results[i] = (None, unresolvable(ERR_NO_VICTIMS))
    sub.add_pods(removed_at, removed, -1)
    sim = _Simulation(fwk, state, pod, sub, nominated)
    sim.start_nominated()

    alive = np.asarray([i for i in range(k) if potential[i]], dtype=np.int64)
    if len(alive):
        verdicts = sim.filter(alive)
        for f in np.flatnonzero(verdicts.codes != 0).tolist():
            results[int(alive[f])] = (None, verdicts(f))
        alive = alive[verdicts.codes == 0]

    # Upstream's reprieve order per node: violating pods first, then the others.
    order: dict[int, list[Pod]] = {}
    n_violating: dict[int, int] = {}
    for i in alive.tolist():
        pods = sorted(potential[i], key=importance_key)
        violating, non_violating = split_by_pdb_violation(pods, pdbs)
        order[i] = violating + non_violating
        n_violating[i] = len(violating)
    victims: dict[int, list[Pod]] = {i: [] for i in order}
    violations = dict.fromkeys(order, 0)
    rounds = max((len(v) for v in order.values()), default=0)
    for j in range(rounds):
        now_list = [i for i in alive.tolist() if len(order[i]) > j]
        sim.add(now_list, [order[i][j] for i in now_list])
        now = np.asarray(now_list, dtype=np.int64)
        verdicts = sim.filter(now)
        back_at: list[int] = []
        back: list[Pod] = []
        for f in np.flatnonzero(verdicts.codes != 0).tolist():
            i = now_list[f]
            p = order[i][j]
            back_at.append(i)
            back.append(p)
            victims[i].append(p)
            if j < n_violating[i]:
                violations[i] += 1
        sim.add(back_at, back, -1)
    for i in order:
        if 0 < n_violating[i] < len(order[i]):
            victims[i].sort(key=importance_key)  # both groups non-empty, as upstream
        results[i] = (Victims(tuple(victims[i]), violations[i]), SUCCESS)
    out = [r for r in results if r is not None]
    assert len(out) == k
    return out
