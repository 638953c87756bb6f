"""An explain document as kube-scheduler-simulator's result annotations on the pod.

The simulator wraps every plugin and records what it returned; when the pod's
scheduling ends it writes one annotation per extension point (a JSON string each) and
appends all of them to a history. Keys and value shapes are the simulator's
(``simulator/scheduler/plugin/annotation``, ``resultstore``)::

    prefilter-result-status   {plugin: "success" | message}   ("" for Skip: no message)
    prefilter-result          {plugin: [node names]}          (PreFilter narrowed them)
    filter-result             {node: {plugin: "passed" | message}}
    postfilter-result         {node: {plugin: "preemption victim"}}  (the nominated node)
    prescore-result           {plugin: "success" | message}
    score-result              {node: {plugin: "raw score"}}
    finalscore-result         {node: {plugin: "normalised score x weight"}}
    reserve-result, prebind-result, bind-result   {plugin: "success" | message}
    permit-result             {plugin: "success" | "wait" | message}
    permit-result-timeout     {plugin: "10s"}                 (Go duration, Wait only)
    selected-node             the node name ("" when none)
    result-history            [{key: value, ...}, ...]        one map per attempt

Filter is recorded as the framework runs it: a node's plugins in profile order up to
its first failure (explain's display pass runs all of them; the later ones are cut
here), and plugins PreFilter skipped are absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "BIND",
    "FILTER",
    "FINALSCORE",
    "HISTORY",
    "KEYS",
    "PERMIT",
    "PERMIT_TIMEOUT",
    "POSTFILTER",
    "PREBIND",
    "PREFILTER",
    "PREFILTER_STATUS",
    "PRESCORE",
    "RESERVE",
    "SCORE",
    "SELECTED_NODE",
    "attempt_annotations",
    "binding_results",
    "go_duration",
    "with_history",
]

_P = "kube-scheduler-simulator.sigs.k8s.io/"
PREFILTER_STATUS = _P + "prefilter-result-status"
PREFILTER = _P + "prefilter-result"
FILTER = _P + "filter-result"
POSTFILTER = _P + "postfilter-result"
PRESCORE = _P + "prescore-result"
SCORE = _P + "score-result"
FINALSCORE = _P + "finalscore-result"
RESERVE = _P + "reserve-result"
PERMIT = _P + "permit-result"
PERMIT_TIMEOUT = _P + "permit-result-timeout"
PREBIND = _P + "prebind-result"
BIND = _P + "bind-result"
SELECTED_NODE = _P + "selected-node"
HISTORY = _P + "result-history"
#: every per-attempt key, in the order the simulator writes them
KEYS = (
    PREFILTER,
    PREFILTER_STATUS,
    FILTER,
    POSTFILTER,
    PRESCORE,
    SCORE,
    FINALSCORE,
    RESERVE,
    PERMIT_TIMEOUT,
    PERMIT,
    PREBIND,
    BIND,
    SELECTED_NODE,
)

#: the simulator's messages (resultstore: PassedFilterMessage, SuccessMessage, ...)
PASSED, SUCCESS, WAIT, VICTIM = "passed", "success", "wait", "preemption victim"


def _message(entry: Mapping[str, Any]) -> str:
    """An explain status as the simulator records it: "success", or the status'
    message (its reasons joined as Go's Status.Message does; "" for a bare Skip)."""
    if entry.get("code") == "Success":
        return SUCCESS
    return ", ".join(str(r) for r in entry.get("reasons") or ())


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String for whole and fractional seconds ("10s", "1m30s", "0s")."""
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text


def _filter(per_node: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for node, plugins in per_node.items():
        row: dict[str, str] = {}
        for plugin, entry in plugins.items():
            if entry.get("code") == "Skip":
                continue  # the framework never calls a plugin PreFilter skipped
            ok = entry.get("code") == "Success"
            row[plugin] = PASSED if ok else _message(entry)
            if not ok:
                break  # the framework stops at a node's first failing plugin
        out[node] = row
    return out


def _strings(per_node: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    return {node: {p: str(v) for p, v in row.items()} for node, row in per_node.items()}


def attempt_annotations(doc: Mapping[str, Any], selected: str) -> dict[str, str]:
    """The annotations of one attempt from its explain document (``explain.decision``);
    ``selected`` is the node the scheduler's own attempt chose ("" for none). PreBind
    and Bind start empty: ``binding_results`` fills them when the binding cycle ends."""
    results = doc.get("pluginResults") or {}
    pre_filter = results.get("preFilter") or {}
    permit = results.get("permit") or {}
    postfilter: dict[str, dict[str, str]] = {}
    preemption = doc.get("preemption")
    if preemption is not None:
        # the simulator: every filtered node, the nominated one marked (plugin: message)
        postfilter = {node: {} for node in doc.get("filter") or {}}
        nominated = preemption.get("nominatedNode")
        if nominated:
            postfilter[nominated] = {"DefaultPreemption": VICTIM}
    out = {
        PREFILTER: {p: e["nodeNames"] for p, e in pre_filter.items() if "nodeNames" in e},
        PREFILTER_STATUS: {p: _message(e) for p, e in pre_filter.items()},
        FILTER: _filter(results.get("filter") or {}),
        POSTFILTER: postfilter,
        PRESCORE: {p: _message(e) for p, e in (results.get("preScore") or {}).items()},
        SCORE: _strings(doc.get("rawScores") or {}),
        FINALSCORE: _strings(doc.get("weightedScores") or {}),
        RESERVE: {p: _message(e) for p, e in (results.get("reserve") or {}).items()},
        PERMIT_TIMEOUT: {
            p: go_duration(float(e.get("timeoutSeconds", 0)))
            for p, e in permit.items()
            if e.get("code") == "Wait"
        },
        PERMIT: {p: WAIT if e.get("code") == "Wait" else _message(e) for p, e in permit.items()},
        PREBIND: {},
        BIND: {},
    }
    shown = {key: _dump(value) for key, value in out.items()}
    shown[SELECTED_NODE] = selected
    return shown


def binding_results(
    pre_bind: Sequence[str], bind: Sequence[str], failed_plugin: str, message: str
) -> tuple[dict[str, str], dict[str, str]]:
    """(prebind-result, bind-result) of a binding cycle: every plugin that ran
    "success", up to the one that failed with ``message`` ("" when none failed; the first
    Bind plugin binds, as the framework's RunBindPlugins stops at the first that does)."""
    prebind: dict[str, str] = {}
    for name in pre_bind:
        if name == failed_plugin:
            prebind[name] = message
            return prebind, {}
        prebind[name] = SUCCESS
    binds: dict[str, str] = {}
    for name in bind:
        binds[name] = message if name == failed_plugin else SUCCESS
        break
    if failed_plugin and failed_plugin not in prebind and failed_plugin not in binds:
        binds[failed_plugin] = message  # WaitOnPermit or the store refused the binding
    return prebind, binds


def with_history(annotations: Mapping[str, str], attempt: Mapping[str, str]) -> dict[str, str]:
    """``annotations`` with ``attempt``'s keys set and appended to result-history (a
    history that does not parse starts again, as the simulator logs and goes on)."""
    out = dict(annotations)
    try:
        history = json.loads(out.get(HISTORY, "[]"))
    except ValueError:
        history = []
    if not isinstance(history, list):
        history = []
    history.append(dict(attempt))
    out.update(attempt)
    out[HISTORY] = json.dumps(history, separators=(",", ":"))
    return out
