"""The candidate search (upstream DryRunPreemption) when only NodeResourcesFit reads the
nodes' pods (``fitonly``): most nodes are ruled out on columns, the rest dry-run as before.

``find_candidates`` dry-runs nodes in upstream's order until it holds enough candidates.
Late in a wave of preemptions most nodes cannot become one (their lower-priority pods do
not free enough), so the search reads hundreds of nodes per preemption, and dry-running
each (``select_victims_fit_only``) walks its pods in Python. A node is a candidate only
if the pod fits once every lower-priority pod is gone; that test is arithmetic on the
per-row sums of those pods (``lower.lower_columns``, kept between preemptions). A node
failing it is not a candidate whatever else holds (nominated pods and the node-only
Filter plugins can only fail it further), so ``screen`` leaves out only nodes the dry
run would reject; ``find_candidates`` dry-runs the others as before, in the same order,
and the same stop rule picks the same candidates.

What the left-out nodes' statuses would say matters only when no node is a candidate
(the FitError message); then ``find_candidates`` searches again over every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.defaultpreemption.fitonly import (
    AMOUNT_LIMIT,
    FitOnlyPlan,
    fit_only_plan,
)
from cluster_sched.plugins.defaultpreemption.lower import lower_columns
from cluster_sched.plugins.defaultpreemption.victims import NominatedLookup, nominees_at_least

__all__ = ["screen", "screen_rows"]


def screen(
    plan: FitOnlyPlan, pod: Pod, table: NodeTable, rows: np.ndarray, lookup: NominatedLookup
) -> np.ndarray:
    """bool[len(rows)]: False where ``pod`` does not fit under NodeResourcesFit even with
    every lower-priority pod removed (and, where the node has any, its nominated pods of
    equal or higher priority added: RunFilterPluginsWithNominatedPods' first pass), or
    where there is no lower-priority pod (no candidate either way). Rows near int64's
    range (``AMOUNT_LIMIT``) or with overflowed cells stay True."""
    names = [n for n, _ in plan.checked]
    count, sums = lower_columns(table, pod.priority, names, rows)
    nom_count, nom_sums = _nominees(table, pod, names, rows, lookup)
    fits = count > 0
    fits &= table.allowed_pods[rows] - table.pod_count[rows] + count - nom_count >= 1
    risky = table.amount_bound[rows] >= AMOUNT_LIMIT
    for c, (name, amount) in enumerate(plan.checked):
        col = table.resources.get(name)
        free = table.free[col][rows] if col >= 0 else np.zeros(len(rows), dtype=np.int64)
        risky |= (free >= AMOUNT_LIMIT) | (free <= -AMOUNT_LIMIT)
        fits &= free + sums[c] - nom_sums[c] >= amount
    if table.overflow:
        hit = table.overflow.has_any
        risky |= np.fromiter((hit([r]) for r in rows.tolist()), dtype=bool, count=len(rows))
    return fits | risky  # type: ignore[no-any-return]


def _nominees(
    table: NodeTable, pod: Pod, names: Sequence[str], rows: np.ndarray, lookup: NominatedLookup
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``rows``: how many pods are nominated there with priority >= the pod's
    (the pod itself aside), and their requests of ``names``. Only a lookup that lists
    its nodes (a mapping) is read; with another, none are counted. Counting fewer than
    the dry run does only keeps more rows, so a nominee left out (a callable lookup, a
    ``live_items`` filter by uid on top of the dry run's by name) is never wrong; a
    node's nominees whose amounts reach ``AMOUNT_LIMIT`` are left out likewise."""
    if lookup is None or callable(lookup):
        k = len(rows)
        return np.zeros(k, dtype=np.int64), np.zeros((len(names), k), dtype=np.int64)
    kept = nominees_at_least(lookup, pod.priority)
    assert kept is not None
    col = kept.columns(table, tuple(names), AMOUNT_LIMIT, pod.key, pod.uid)
    count, sums, big = col.at(rows)
    count[big] = 0  # left out: see above
    return count, sums


def screen_rows(
    fwk: Any,
    state: CycleState,
    pod: Pod,
    tables: Sequence[NodeTable],
    owners: np.ndarray,
    rows: np.ndarray,
    lookup: NominatedLookup,
) -> np.ndarray | None:
    """bool[len(rows)] (``rows[i]`` of ``tables[owners[i]]``): ``screen`` over every
    table, or None when only NodeResourcesFit does not decide (no ``fit_only_plan``).
    Only valid when the nodes are independent (``nodes_independent``)."""
    plan = fit_only_plan(fwk, state, pod)
    if plan is None:
        return None
    keep = np.zeros(len(rows), dtype=bool)
    for ti in np.unique(owners).tolist():
        at = np.flatnonzero(owners == ti)
        keep[at] = screen(plan, pod, tables[ti], rows[at], lookup)
    return keep
