"""Preemption candidates through the extenders (upstream Evaluator.callExtenders).

Every extender with a preemptVerb that is interested in the pod gets the candidates'
victims and answers with the victims it keeps per node (by UID, mapped back to the
pods on the node); the next extender sees that answer. A node the extender answers
with no victim is an error (dropped, for an ignorable extender); an extender's error
fails the preemption unless it is ignorable. Candidates keep the dry run's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.extender import ExtenderError, HTTPExtender, report_of
from cluster_sched.framework.status import SUCCESS, Code, Status
from cluster_sched.nodetable.table import NodeTable
from cluster_sched.plugins.defaultpreemption.candidates import Candidate
from cluster_sched.plugins.defaultpreemption.victims import Victims

__all__ = ["call_extenders"]


def _pods_on(tables: Sequence[NodeTable]) -> Any:
    def pods_on_node(name: str) -> Iterable[Pod] | None:
        for t in tables:
            row = t.index.get(name)
            if row is not None:
                return list(t.row_pods[row].values())
        return None

    return pods_on_node


def call_extenders(
    extenders: Sequence[HTTPExtender],
    pod: Pod,
    candidates: Sequence[Candidate],
    tables: Sequence[NodeTable],
    state: Any = None,
) -> tuple[list[Candidate], Status]:
    """The candidates the preempting extenders leave, or an Error status."""
    victims = {c.node_name: c.victims for c in candidates}
    order = [c.node_name for c in candidates]
    if not extenders or not victims:
        return list(candidates), SUCCESS
    report = report_of(state)
    pods_on_node = _pods_on(tables)
    for ext in extenders:
        if not ext.supports_preemption or not ext.is_interested(pod):
            continue
        section = report.section(ext, "preempt") if report is not None else None
        asked = {n: (v.pods, v.num_pdb_violations) for n, v in victims.items()}
        try:
            answer = ext.process_preemption(pod, asked, pods_on_node)
        except ExtenderError as err:
            if section is not None:
                section.update(error=str(err), ignored=ext.is_ignorable)
            if ext.is_ignorable:
                continue
            return [], Status(Code.ERROR, (str(err),))
        kept: dict[str, Victims] = {}
        for name, (pods, num) in answer.items():
            if not pods:
                if ext.is_ignorable:
                    continue
                return [], Status(
                    Code.ERROR, (f'expected at least one victim pod on node "{name}"',)
                )
            kept[name] = Victims(tuple(pods), num)
        victims = kept
        if section is not None:
            section["nodeNameToVictims"] = {n: [p.key for p in v.pods] for n, v in kept.items()}
        if not victims:
            break
    rank = {name: i for i, name in enumerate(order)}
    names = sorted(victims, key=lambda n: (rank.get(n, len(rank)), n))
    return [Candidate(n, victims[n]) for n in names], SUCCESS
