"""The scheduling cycle's side of HTTP extenders (upstream schedule_one.go:
findNodesThatPassExtenders and the extender half of prioritizeNodes).

- Filter runs after the plugins' Filter, on the feasible nodes, extender after extender,
  each seeing what the previous ones kept; an extender not interested in the pod
  (managedResources) is skipped; an error of an ignorable extender is skipped, of any
  other fails the attempt (an Error, not a FitError). Nodes an extender reports in
  ``FailedNodes`` / ``FailedAndUnresolvableNodes`` get an Unschedulable /
  UnschedulableAndUnresolvable status (no plugin) in the diagnosis, and when extenders
  removed nodes the pseudo-plugin ``Extender`` joins the unschedulable plugins.
- Prioritize runs for every interested extender (concurrently when several), its
  errors only logged; each score is multiplied by the extender's weight and by
  MaxNodeScore / MaxExtenderPriority (100 / 10) and added to the plugins' total.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from cluster_sched.api.objects import Node, Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import Diagnosis
from cluster_sched.framework.extender import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    ExtenderError,
    HTTPExtender,
    report_of,
)
from cluster_sched.framework.interfaces import MAX_NODE_SCORE
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Code, Status
from cluster_sched.nodetable.table import NodeTable

__all__ = [
    "ATTR_EXTENDER_URL",
    "extenders_of",
    "find_nodes_that_pass_extenders",
    "needs_every_feasible_node",
    "nominated_past_extenders",
    "prioritize_with_extenders",
]

log = logging.getLogger(__name__)

#: Span attribute: the extender's urlPrefix (its name upstream).
ATTR_EXTENDER_URL = "scheduler.extender.url"
_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY

_pool: ThreadPoolExecutor | None = None


def extenders_of(fwk: Framework) -> Sequence[HTTPExtender]:
    """The scheduler's extenders, as the profile's handle holds them (none outside one)."""
    return getattr(fwk.handle, "extenders", ())


def needs_every_feasible_node(fwk: Framework) -> bool:
    """upstream hasExtenderFilters || hasScoring: without either, the search stops at the
    first feasible node."""
    return bool(fwk.score) or any(e.is_filter or e.is_prioritizer for e in extenders_of(fwk))


def _nodes(table: NodeTable, rows: np.ndarray) -> list[Node]:
    nodes = [table.nodes[int(r)] for r in rows]
    assert all(n is not None for n in nodes)  # feasible rows always hold a node
    return nodes  # type: ignore[return-value]


def _span(fwk: Framework, verb: str, ext: HTTPExtender) -> Any:
    """One span per extender call (a no-op when tracing is off)."""
    return fwk.tracing.span(f"extender: {verb}", {ATTR_EXTENDER_URL: ext.name})


def find_nodes_that_pass_extenders(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    feasible: np.ndarray,
    diagnosis: Diagnosis,
) -> np.ndarray:
    """The rows of ``feasible`` every interested filter extender keeps, in the order the
    last one returned them. Raises ExtenderError for a non-ignorable extender's failure."""
    report = report_of(state)
    statuses = diagnosis.node_to_status.statuses
    before = len(feasible)
    for ext in extenders_of(fwk):
        if len(feasible) == 0:
            break
        if not ext.is_filter or not ext.is_interested(pod):
            continue
        section = report.section(ext, "filter") if report is not None else None
        try:
            with _span(fwk, "filter", ext):
                result = ext.filter(pod, _nodes(table, feasible))
        except ExtenderError as err:
            if section is not None:
                section.update(error=str(err), ignored=ext.is_ignorable)
            if ext.is_ignorable:
                log.info("skipping extender %s: it returned an error: %s", ext.name, err)
                continue
            raise
        for name, msg in result.failed_and_unresolvable.items():
            statuses[name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,))
        for name, msg in result.failed.items():
            if name not in result.failed_and_unresolvable:
                statuses[name] = Status(Code.UNSCHEDULABLE, (msg,))
        names = result.names or []
        feasible = np.asarray([table.index[n] for n in names], dtype=np.int64)
        if section is not None:
            section.update(
                nodes=list(names),
                failedNodes=dict(result.failed),
                failedAndUnresolvableNodes=dict(result.failed_and_unresolvable),
            )
    if len(feasible) != before:
        diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
    return feasible


def nominated_past_extenders(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    rows: np.ndarray,
    diagnosis: Diagnosis,
) -> np.ndarray:
    """The nominated node (``rows``, one row that passed Filter) if the extenders keep
    it. upstream evaluateNominatedNode only logs an extender's error: the normal search
    follows, as when the extenders reject the node."""
    if not extenders_of(fwk):
        return rows
    try:
        return find_nodes_that_pass_extenders(fwk, state, pod, table, rows, diagnosis)
    except ExtenderError as err:
        log.info("evaluation failed on nominated node %s: %s", pod.nominated_node_name, err)
        return rows[:0]


def _prioritize(
    fwk: Framework, ext: HTTPExtender, pod: Pod, nodes: Sequence[Node]
) -> tuple[list[tuple[str, int]], int] | str:
    """One extender's scores and weight, or the error it gave (only logged upstream)."""
    try:
        with _span(fwk, "prioritize", ext):
            return ext.prioritize(pod, nodes)
    except ExtenderError as err:
        log.debug("extender %s: prioritize failed, no score from it: %s", ext.name, err)
        return str(err)


def prioritize_with_extenders(
    fwk: Framework, state: CycleState, pod: Pod, table: NodeTable, feasible: np.ndarray
) -> np.ndarray:
    """int64[len(feasible)]: every interested extender's score * weight * 10, summed."""
    global _pool
    total = np.zeros(len(feasible), dtype=np.int64)
    exts = [e for e in extenders_of(fwk) if e.is_interested(pod) and e.is_prioritizer]
    if not exts or len(feasible) == 0:
        return total
    nodes = _nodes(table, feasible)
    if len(exts) == 1:
        answers = [_prioritize(fwk, exts[0], pod, nodes)]
    else:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="extender-prioritize")
        futures = [_pool.submit(_prioritize, fwk, e, pod, nodes) for e in exts]
        answers = [f.result() for f in futures]
    position = {int(r): i for i, r in enumerate(feasible.tolist())}
    report = report_of(state)
    for ext, answer in zip(exts, answers, strict=True):
        section = report.section(ext, "prioritize") if report is not None else None
        if isinstance(answer, str):
            if section is not None:
                section["error"] = answer
            continue
        scores, weight = answer
        final: dict[str, int] = {}
        for host, score in scores:
            row = table.index.get(host)
            at = position.get(row) if row is not None else None
            if at is None:
                continue  # a host that is not among the nodes asked about
            total[at] += score * weight * _SCALE
            final[host] = final.get(host, 0) + score * weight * _SCALE
        if section is not None:
            section.update(scores=dict(scores), weight=weight, finalScores=final)
    return total
