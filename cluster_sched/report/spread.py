"""Topology-spread skew at the end of a run, per distinct constraint the pods carry.

A constraint is identified by its namespace, topologyKey, label selector (with the
carrying pod's ``matchLabelKeys`` values merged in, as PodTopologySpread does), maxSkew
and whenUnsatisfiable; pods carrying the same one share a row. Its domains are the
distinct values of topologyKey over every node that has the label; a domain's count is
the number of bound pods in the constraint's namespace that its selector matches (a null
or empty selector matches none, as upstream's countPodsMatchSelector). Skew is the
largest count minus the smallest, empty domains included. Node affinity and taint
policies are not applied: the figure describes the cluster as a whole.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from cluster_sched.api.objects import LabelSelector, LabelSelectorRequirement
from cluster_sched.api.selectors import label_selector_matches
from cluster_sched.plugins.podtopologyspread.constraints import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    parse_constraints,
    selector_is_empty,
)
from cluster_sched.report.record import RunRecord

__all__ = ["MAX_LISTED_DOMAINS", "format_selector", "spread_skew"]

#: A row lists every domain's count only up to this many domains (hostname keys on a big
#: cluster would otherwise put one entry per node in summary.json).
MAX_LISTED_DOMAINS = 50


def _requirement(req: LabelSelectorRequirement) -> str:
    if req.operator in ("In", "NotIn"):
        return f"{req.key} {req.operator.lower()} ({','.join(req.values)})"
    if req.operator == "Exists":
        return req.key
    if req.operator == "DoesNotExist":
        return f"!{req.key}"
    return f"{req.key} {req.operator} {','.join(req.values)}"


def format_selector(sel: LabelSelector | None) -> str:
    """kubectl's selector spelling (``app=web,tier in (a,b)``); ``<none>`` for null."""
    if sel is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sel.match_labels]
    parts.extend(_requirement(r) for r in sel.match_expressions)
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class _Constraint:
    namespace: str
    topology_key: str
    selector: LabelSelector | None
    max_skew: int
    when_unsatisfiable: str


def spread_skew(record: RunRecord) -> list[dict[str, object]]:
    """One row per distinct constraint: its identity, how many pods carry it, its domains
    and the skew of matching bound pods over them, sorted by namespace, key, selector."""
    carriers: Counter[_Constraint] = Counter()
    for pod in record.pods:
        if not pod.topology_spread_constraints:  # most pods: nothing to parse
            continue
        for when in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            for c in parse_constraints(pod.topology_spread_constraints, pod.labels, when):
                carriers[
                    _Constraint(pod.namespace, c.topology_key, c.selector, c.max_skew, when)
                ] += 1
    if not carriers:
        return []
    # bound pods grouped by (namespace, label set) -> nodes, so each selector is matched
    # once per distinct label set rather than once per pod
    by_labels: dict[tuple[str, frozenset[tuple[str, str]]], list[str]] = defaultdict(list)
    for pod in record.bound:
        by_labels[(pod.namespace, frozenset(pod.labels.items()))].append(pod.node_name)
    node_labels = {n.name: n.labels for n in record.nodes}
    rows: list[dict[str, object]] = []
    for con, pods in carriers.items():
        key = con.topology_key
        domains = {labels[key]: 0 for labels in node_labels.values() if key in labels}
        sel = con.selector
        if sel is not None and not selector_is_empty(sel):
            for (namespace, labels), nodes in by_labels.items():
                if namespace != con.namespace or not label_selector_matches(sel, dict(labels)):
                    continue
                for node in nodes:
                    value = node_labels[node].get(key) if node in node_labels else None
                    if value is not None:
                        domains[value] += 1
        counts = list(domains.values())
        row: dict[str, object] = {
            "namespace": con.namespace,
            "topology_key": key,
            "selector": format_selector(sel),
            "max_skew": con.max_skew,
            "when_unsatisfiable": con.when_unsatisfiable,
            "pods": pods,
            "domains": len(domains),
            "matching": sum(counts),
            "min": min(counts, default=0),
            "max": max(counts, default=0),
            "skew": (max(counts) - min(counts)) if counts else 0,
        }
        if len(domains) <= MAX_LISTED_DOMAINS:
            row["counts"] = dict(sorted(domains.items()))
        rows.append(row)
    rows.sort(key=lambda r: (str(r["namespace"]), str(r["topology_key"]), str(r["selector"])))
    return rows
