"""SelectVictimsOnNode: the fewest lower-priority pods whose removal lets the pod fit.

On a private copy of one node (``NodeTable.subset``) and a clone of the cycle state:
remove every lower-priority pod (running the PreFilter RemovePod extensions so the
cross-node plugins' counts follow), check that the pod now passes every filter, then
reprieve pods one at a time, PDB-violating ones first and the most important first
within each group, keeping as victims only those whose return breaks the fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod, PodDisruptionBudget
from cluster_sched.api.selectors import label_selector_matches
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.status import SUCCESS, Status, error, unresolvable
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.queue.nominees import AtLeast

ERR_NO_VICTIMS = "No preemption victims found for incoming pod"

#: node name -> nominated pods (a mapping or a callable), see Handle.nominated_pods
NominatedLookup = Mapping[str, Sequence[Pod]] | Callable[[str], Sequence[Pod]] | None

_ROW0 = np.zeros(1, dtype=np.int64)


def start_time(pod: Pod) -> float:
    """upstream GetPodStartTime: status.startTime, or "now" (later than any real start)."""
    return math.inf if pod.start_time is None else pod.start_time


def importance_key(pod: Pod) -> tuple[int, float, str]:
    """Sort key, most important first: priority desc, then earlier start. Upstream's
    unstable sort leaves equal pods in any order; they are ordered by key here."""
    started = pod.start_time
    return (-pod.priority, math.inf if started is None else started, pod.key)


def importance_order(pods: Sequence[Pod], groups: np.ndarray) -> np.ndarray:
    """int64[len(pods)]: positions of ``pods`` sorted by ``groups`` (int64, one per
    pod), then most important first within a group: ``importance_key``'s order, for
    many nodes' pods in one sort."""
    n = len(pods)
    neg_priority = np.fromiter((-p.priority for p in pods), np.int64, n)
    started = np.fromiter(
        (math.inf if p.start_time is None else p.start_time for p in pods), np.float64, n
    )
    keys = np.array([p.key for p in pods], dtype=str) if n else np.zeros(0, dtype=str)
    return np.lexsort((keys, started, neg_priority, groups)).astype(np.int64)


def nominated_for(lookup: NominatedLookup, node_name: str) -> Sequence[Pod]:
    if lookup is None:
        return ()
    if callable(lookup):
        return lookup(node_name) or ()
    if type(lookup) is dict:
        return lookup.get(node_name, ())
    # One __getitem__: a Mapping's get() (and ``in`` before it) would walk a nominator
    # view's entry twice, on every node of a preemption dry run.
    try:
        return lookup[node_name]
    except KeyError:
        return ()


def nominees_at_least(lookup: NominatedLookup, priority: int) -> AtLeast | None:
    """The nominated pods of ``priority`` or more per node (``AtLeast``): the nominator's,
    kept between attempts, when ``lookup`` is its view; built afresh from another
    mapping; None for a callable (it cannot list its nodes) or no lookup."""
    if lookup is None or callable(lookup):
        return None
    at_least = getattr(lookup, "at_least", None)
    kept = at_least(priority) if at_least is not None else None
    return kept if kept is not None else AtLeast.of(lookup.items(), priority)


def filter_with_nominated(
    fwk: Any,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    node_name: str,
    nominated: Sequence[Pod],
) -> Status:
    """upstream RunFilterPluginsWithNominatedPods on row 0 of ``table``: first with the
    nominated pods of equal or higher priority added (to copies), then without them."""
    ge = [p for p in nominated if p.priority >= pod.priority and p.key != pod.key]
    if ge:
        sub = table.subset(_ROW0)
        state1 = state.clone()
        for p in ge:
            sub.add_pod(0, p)
            s = fwk.run_pre_filter_add_pod(state1, pod, p, node_name)
            if not s.is_success:
                return s
        first = fwk.filter_status(fwk.run_filter(state1, pod, NodeSlice(sub, _ROW0)), 0)
        if not first.is_success:
            return first
    return fwk.filter_status(fwk.run_filter(state, pod, NodeSlice(table, _ROW0)), 0)  # type: ignore[no-any-return]


def split_by_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """upstream filterPodsWithPDBViolation: (violating, non-violating), order kept.

    Each matching PDB's ``disruptionsAllowed`` is spent as pods are taken in order; a
    pod listed in the PDB's ``disruptedPods`` was already accounted by the API server.
    """
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    ok: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.meta.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.meta.namespace != pod.meta.namespace:
                    continue
                sel = pdb.selector
                if sel is None or (not sel.match_labels and not sel.match_expressions):
                    continue  # a nil or empty PDB selector matches nothing
                if not label_selector_matches(sel, pod.meta.labels):
                    continue
                if pod.meta.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else ok).append(pod)
    return violating, ok


@dataclass(frozen=True, slots=True)
class Victims:
    """Victims on one node, in upstream's order (reprieve order: violating group first,
    re-sorted by importance when both groups had pods), and how many violate a PDB."""

    pods: tuple[Pod, ...]
    num_pdb_violations: int


def select_victims_on_node(
    fwk: Any,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    row: int,
    pdbs: Sequence[PodDisruptionBudget],
    nominated: Sequence[Pod] = (),
) -> tuple[Victims | None, Status]:
    """Dry-run preemption on ``table``'s ``row``; ``state`` is the caller's clone."""
    node_name = table.names[row]
    assert node_name is not None
    sub = table.subset(np.asarray([row], dtype=np.int64))

    def remove(p: Pod) -> Status:
        sub.remove_pod(0, p)
        return fwk.run_pre_filter_remove_pod(state, pod, p, node_name)  # type: ignore[no-any-return]

    def add(p: Pod) -> Status:
        sub.add_pod(0, p)
        return fwk.run_pre_filter_add_pod(state, pod, p, node_name)  # type: ignore[no-any-return]

    potential = [p for p in sub.row_pods[0].values() if p.priority < pod.priority]
    for p in potential:
        s = remove(p)
        if not s.is_success:
            return None, error(s.message())
    if not potential:
        return None, unresolvable(ERR_NO_VICTIMS)
    fits = filter_with_nominated(fwk, state, pod, sub, node_name, nominated)
    if not fits.is_success:
        return None, fits
    potential.sort(key=importance_key)
    violating, non_violating = split_by_pdb_violation(potential, pdbs)
    victims: list[Pod] = []
    violations = 0

    def reprieve(p: Pod) -> bool:
        s = add(p)
        if not s.is_success:
            raise _ExtensionError(s)
        if filter_with_nominated(fwk, state, pod, sub, node_name, nominated).is_success:
            return True
        s = remove(p)
        if not s.is_success:
            raise _ExtensionError(s)
        victims.append(p)
        return False

    try:
        for p in violating:
            if not reprieve(p):
                violations += 1
        for p in non_violating:
            reprieve(p)
    except _ExtensionError as exc:
        return None, error(exc.status.message())
    if violating and non_violating:
        # As upstream: back in importance order, so victims[0] is the most important one
        # (pickOneNodeForPreemption's "lowest highest-priority victim" reads it).
        victims.sort(key=importance_key)
    return Victims(tuple(victims), violations), SUCCESS


class _ExtensionError(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status
