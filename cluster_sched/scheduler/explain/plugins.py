"""``explain``'s per-plugin view, as kube-scheduler-simulator records it: every plugin's
own result at PreFilter, Filter (per node), PreScore, Reserve and Permit, and the score
weights.

Upstream's Filter stops at a node's first failing plugin; the simulator shows the
plugins that ran. Here every Filter plugin is run on every evaluated node, for display
only, in a CycleState of its own: a node failing two plugins shows both, and the
passed-plugins list is complete. The attempt's own verdicts (``filter``, first failure
wins) and scores come from the real attempt and are never changed by this pass.
Reserve and Permit run on the selected node and are undone (Unreserve, in reverse
order): explain stays a dry run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cluster_sched.api.evolve import evolve
from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Code, Status, as_status

__all__ = ["plugin_results", "status_json", "weighted_scores"]

SUCCESS_JSON: dict[str, Any] = {"code": "Success"}


def status_json(status: Status, *, plugin: bool = True) -> dict[str, Any]:
    """A Status as explain writes it; ``plugin=False`` where the key already names it."""
    if status.code == Code.SUCCESS:
        return {"code": "Success"}
    out: dict[str, Any] = {"code": status.code.label}
    if plugin:
        out["plugin"] = status.plugin
    if plugin or status.reasons:
        out["reasons"] = list(status.reasons)
    return out


def weighted_scores(
    scores: Mapping[str, Mapping[str, int]], weights: Mapping[str, int]
) -> dict[str, dict[str, int]]:
    """node -> plugin -> normalised score times the plugin's weight (their sum is the final
    score, as upstream's RunScorePlugins adds them)."""
    return {
        node: {p: s * weights.get(p, 1) for p, s in per.items()} for node, per in scores.items()
    }


def plugin_results(
    fwk: Framework,
    pod: Pod,
    snapshot: Any,
    table: Any,
    evaluated: Sequence[str],
    feasible: Sequence[str],
    selected: str | None,
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(``pluginResults``, ``passedPlugins``) for the explain document.

    ``pluginResults``: ``preFilter`` and ``preScore`` (plugin -> status; PreFilter adds
    ``nodeNames`` when it narrowed the nodes), ``filter`` (node -> plugin -> status, for
    the ``evaluated`` nodes), and ``reserve`` / ``permit`` (plugin -> status on the
    ``selected`` node; absent when none was selected). ``passedPlugins``: node -> the
    Filter plugins it passed, in the profile's order.
    """
    state = CycleState()
    out: dict[str, Any] = {"preFilter": _pre_filter(fwk, state, pod, snapshot)}
    filt = _filter(fwk, state, pod, table, evaluated)
    out["filter"] = filt
    passed = {
        node: [p for p, st in per.items() if st["code"] == "Success"] for node, per in filt.items()
    }
    if feasible:
        out["preScore"] = _pre_score(fwk, state, pod, snapshot, _slice(table, feasible))
    if selected is not None:
        out["reserve"], out["permit"] = _reserve_permit(fwk, state, pod, selected)
    return out, passed


def _slice(table: Any, names: Iterable[str]) -> NodeSlice:
    return NodeSlice(table, table.rows_of(names))


def _pre_filter(fwk: Framework, state: CycleState, pod: Pod, snapshot: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pl in fwk.pre_filter:
        try:
            r, s = pl.pre_filter(state, pod, snapshot) or (None, None)
        except Exception as exc:  # shown, never raised: the attempt itself already ran
            out[pl.name] = _error(exc)
            continue
        s = as_status(s)
        if s.is_skip:
            state.skip_filter_plugins.add(pl.name)
        entry = status_json(s, plugin=False)
        if r is not None and r.node_names is not None:
            entry["nodeNames"] = sorted(r.node_names)
        out[pl.name] = entry
    return out


def _filter(
    fwk: Framework, state: CycleState, pod: Pod, table: Any, evaluated: Sequence[str]
) -> dict[str, dict[str, Any]]:
    nodes = _slice(table, evaluated)
    names = nodes.names()
    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    for pl in fwk.filter:
        if pl.name in state.skip_filter_plugins:
            for n in names:
                out[n][pl.name] = {"code": "Skip"}
            continue
        try:
            verdicts = pl.filter(state, pod, nodes) if len(nodes) else None
        except Exception as exc:
            for n in names:
                out[n][pl.name] = _error(exc)
            continue
        if verdicts is None:  # nil Status: every node passes
            for n in names:
                out[n][pl.name] = dict(SUCCESS_JSON)
            continue
        for i, n in enumerate(names):
            code = int(verdicts.codes[i])
            out[n][pl.name] = (
                dict(SUCCESS_JSON)
                if code == 0
                else {"code": Code(code).label, "reasons": list(verdicts.reasons_of(i))}
            )
    return out


def _pre_score(
    fwk: Framework, state: CycleState, pod: Pod, snapshot: Any, feasible: NodeSlice
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pl in fwk.pre_score:
        try:
            s = as_status(pl.pre_score(state, pod, snapshot, feasible))
        except Exception as exc:
            out[pl.name] = _error(exc)
            continue
        out[pl.name] = status_json(s, plugin=False)
    return out


def _reserve_permit(
    fwk: Framework, state: CycleState, pod: Pod, node: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    assumed = evolve(pod, node_name=node)
    reserve: dict[str, Any] = {}
    permit: dict[str, Any] = {}
    try:
        for pl in fwk.reserve:
            try:
                reserve[pl.name] = status_json(
                    as_status(pl.reserve(state, assumed, node)), plugin=False
                )
            except Exception as exc:
                reserve[pl.name] = _error(exc)
        for pl in fwk.permit:
            try:
                s, timeout = pl.permit(state, assumed, node) or (None, 0.0)
            except Exception as exc:
                permit[pl.name] = _error(exc)
                continue
            entry = status_json(as_status(s), plugin=False)
            if entry["code"] == "Wait":
                entry["timeoutSeconds"] = float(timeout)
            permit[pl.name] = entry
    finally:
        for pl in reversed(fwk.reserve):
            try:
                pl.unreserve(state, assumed, node)
            except Exception:  # undoing a display-only Reserve must not fail explain
                continue
    return reserve, permit


def _error(exc: Exception) -> dict[str, Any]:
    return {"code": "Error", "reasons": [f"{type(exc).__name__}: {exc}"]}
