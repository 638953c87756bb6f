"""Node selectors evaluated over label columns: one boolean per row, never a row loop.

Results are cached per table on (selector, node_version): thousands of pods of one
Deployment share one selector, so only the first pays for it. Loops here run over a
selector's requirements and values, never over nodes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cluster_sched.api.objects import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from cluster_sched.api.selectors import _parse_int
from cluster_sched.nodetable.table import NodeTable

NAME_FIELD = "metadata.name"


def requirement_mask(table: NodeTable, req: NodeSelectorRequirement) -> np.ndarray:
    """bool[cap]: rows whose labels satisfy one requirement (labels.Selector semantics)."""
    cap = table._cap
    col = table.labels.get(req.key)
    op = req.operator
    if col is None:
        # No node has the key: only the negative operators match.
        return np.full(cap, op in ("NotIn", "DoesNotExist"), dtype=bool)
    if op == "Exists":
        return col >= 0
    if op == "DoesNotExist":
        return col < 0
    if op in ("In", "NotIn"):
        codes = [c for c in (table.label_code(req.key, v) for v in req.values) if c >= 0]
        hit = (
            np.isin(col, np.asarray(codes, dtype=col.dtype)) if codes else np.zeros(cap, dtype=bool)
        )
        return hit if op == "In" else ~hit
    if op in ("Gt", "Lt"):
        # Exact int64 comparison with Go's strconv.ParseInt rules ("1_0" and values
        # beyond int64 never match), decided once per distinct label value, not per node.
        bound = _parse_int(req.values[0]) if len(req.values) == 1 else None
        if bound is None:
            return np.zeros(cap, dtype=bool)
        values = table.label_values[req.key].values
        parsed = (_parse_int(v) for v in values)
        ok = np.fromiter(
            (v is not None and (v > bound if op == "Gt" else v < bound) for v in parsed),
            dtype=bool,
            count=len(values),
        )
        return (col >= 0) & ok[np.maximum(col, 0)] if len(values) else np.zeros(cap, dtype=bool)
    return np.zeros(cap, dtype=bool)


def field_mask(table: NodeTable, req: NodeSelectorRequirement) -> np.ndarray:
    """bool[cap]: ``matchFields`` on ``metadata.name`` (In/NotIn); anything else matches nothing."""
    cap = table._cap
    if req.key != NAME_FIELD or req.operator not in ("In", "NotIn"):
        return np.zeros(cap, dtype=bool)
    hit = np.zeros(cap, dtype=bool)
    rows = table.rows_of(req.values)
    hit[rows] = True
    return hit if req.operator == "In" else ~hit


def term_mask(table: NodeTable, term: NodeSelectorTerm) -> np.ndarray:
    """bool[cap]: requirements ANDed; an empty term matches nothing (upstream)."""

    def compute() -> np.ndarray:
        if not term.match_expressions and not term.match_fields:
            return np.zeros(table._cap, dtype=bool)
        mask = np.ones(table._cap, dtype=bool)
        for req in term.match_expressions:
            mask &= requirement_mask(table, req)
        for req in term.match_fields:
            mask &= field_mask(table, req)
        return mask

    return table.memo(("term", term), compute)


def node_selector_mask(table: NodeTable, selector: NodeSelector) -> np.ndarray:
    """bool[cap]: terms ORed; no terms matches nothing."""

    def compute() -> np.ndarray:
        mask = np.zeros(table._cap, dtype=bool)
        for term in selector.terms:
            mask |= term_mask(table, term)
        return mask

    return table.memo(("selector", selector), compute)


def label_map_mask(table: NodeTable, labels: Mapping[str, str]) -> np.ndarray:
    """bool[cap]: a pod's ``nodeSelector`` map (every key equal)."""
    items = tuple(sorted(labels.items()))

    def compute() -> np.ndarray:
        mask = np.ones(table._cap, dtype=bool)
        for key, value in items:
            col = table.labels.get(key)
            code = table.label_code(key, value)
            if col is None or code < 0:
                return np.zeros(table._cap, dtype=bool)
            mask &= col == code
        return mask

    return table.memo(("labels", items), compute)


def preferred_terms_score(
    table: NodeTable, terms: tuple[tuple[int, NodeSelectorTerm], ...]
) -> np.ndarray:
    """int64[cap]: sum of weights of matching preferred terms (weight 0 terms ignored)."""

    def compute() -> np.ndarray:
        score = np.zeros(table._cap, dtype=np.int64)
        for weight, term in terms:
            if weight:
                score += weight * term_mask(table, term)
        return score

    return table.memo(("preferred", terms), compute)
