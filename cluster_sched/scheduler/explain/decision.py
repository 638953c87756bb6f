"""``cluster-sched explain``: one scheduling attempt, shown in full.

The JSON keys are a contract scripts rely on: selectedNode, feasibleNodes,
evaluatedNodes, filter, rawScores, scores, finalScores, message, preemption when
PostFilter ran, and extenders when the configuration has any: one entry per extender
(urlPrefix, interested, and a filter / prioritize / preempt section for each step it
answered: kept nodes, failed nodes, scores, the error). ``finalScores`` include the
extenders' weighted scores; an extender's error that fails the attempt is the message. ``filter`` also lists the nodes PreFilter kept from evaluation, with the
diagnosis' status for them (``node(s) didn't satisfy plugin(s) [...]``, or PreFilter's
rejection), as upstream's NodeToStatus answers for absent nodes. Explain is a dry run:
PostFilter computes preemption's outcome but no victim is deleted and no nomination
written.

Added keys (never replacing one): ``weights`` (score plugin -> weight),
``weightedScores`` (node -> plugin -> normalised * weight; a node's sum is its final
score), ``passedPlugins`` (node -> Filter plugins it passed) and ``pluginResults``
(each plugin's own result at PreEnqueue, PreFilter, Filter per node, PreScore, and
Reserve / Permit on the selected node; see ``plugins``). The document is a
plain dict built key by key, so other features add their own keys beside these.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import ConfigError
from cluster_sched.features import FeatureGates
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.diagnosis import FitError, fit_error_message
from cluster_sched.framework.extender import (
    REPORT_KEY,
    ExtenderError,
    ExtenderReport,
    new_http_extenders,
)
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.framework.status import Status, as_status
from cluster_sched.scheduler.algorithm import Scheduler
from cluster_sched.scheduler.attempt import AttemptResult
from cluster_sched.scheduler.explain.plugins import plugin_results, status_json, weighted_scores
from cluster_sched.scheduler.profile import new_framework


@dataclass(slots=True)
class Explanation:
    result: AttemptResult | None
    fit_error: FitError | None
    preemption: dict[str, Any] | None
    json: dict[str, Any]


def build_framework(
    config: SchedulerConfiguration,
    pod: Pod,
    cache: Cache,
    seed: int | None,
    features: FeatureGates | None = None,
) -> Framework:
    """The framework of the profile the pod names, with a handle that sees the cache
    and the run's feature gates (``--feature-gates``)."""
    for i, profile in enumerate(config.profiles):
        if profile.scheduler_name == pod.scheduler_name:
            # No preemption executor: DefaultPreemption's PostFilter is a pure dry run.
            handle = Handle(
                profile_name=profile.scheduler_name,
                rng=random.Random(seed),
                snapshot=cache.snapshot,
                extenders=new_http_extenders(config.extenders),
                features=features or FeatureGates(),
            )
            return new_framework(profile, handle, field=f"profiles[{i}]")
    raise ConfigError(
        f'pod {pod.key}: spec.schedulerName "{pod.scheduler_name}" matches no profile in the configuration'
    )


def explain(
    cache: Cache,
    pod: Pod,
    config: SchedulerConfiguration,
    seed: int | None = None,
    features: FeatureGates | None = None,
    *,
    table: Any = None,
    start_index: int = 0,
    rng: random.Random | None = None,
) -> Explanation:
    """Explain ``pod`` against ``cache``. ``table``: the node columns (default: the
    cache's own); ``start_index`` and ``rng``: where the node window starts and the
    tie-breaking draws, so a running scheduler's dry run (``--record-results``, with a
    copy of its RNG) evaluates the nodes its attempt does and picks the same host."""
    fwk = build_framework(config, pod, cache, seed, features)
    if table is None:
        table = cache.sink.table  # type: ignore[attr-defined]
    sched = Scheduler(config.percentage_of_nodes_to_score, rng or random.Random(seed))
    sched.next_start_node_index = start_index
    state = CycleState()
    extenders = fwk.handle.extenders
    report = ExtenderReport(extenders, pod) if extenders else None
    if report is not None:
        state.write(REPORT_KEY, report)  # ask the extender steps for their answers
    try:
        return _explain(fwk, sched, state, cache, pod, table, report)
    finally:
        for ext in extenders:
            ext.close()


def _explain(
    fwk: Framework,
    sched: Scheduler,
    state: CycleState,
    cache: Cache,
    pod: Pod,
    table: Any,
    report: ExtenderReport | None,
) -> Explanation:
    out: dict[str, Any] = {
        "selectedNode": None,
        "feasibleNodes": 0,
        "evaluatedNodes": 0,
        "filter": {},
        "rawScores": {},
        "scores": {},
        "finalScores": {},
        "message": None,
        "weights": {pl.name: fwk.score_weights.get(pl.name, 1) for pl in fwk.score},
        "weightedScores": {},
        "passedPlugins": {},
        "pluginResults": {"preEnqueue": _pre_enqueue(fwk, pod)},
    }
    if report is not None:
        out["extenders"] = report.entries  # filled in as the attempt runs
    pre_enqueue = fwk.run_pre_enqueue(pod)
    if not pre_enqueue.is_success:
        out["message"] = pre_enqueue.message()
        return Explanation(None, None, None, out)
    try:
        result = sched.schedule_pod(fwk, state, pod, table, cache.snapshot)
    except ExtenderError as err:
        # upstream: a non-ignorable extender's failure is the attempt's error
        out["message"] = str(err)
        return Explanation(None, None, None, out)
    except FitError as err:
        diagnosis = err.diagnosis
        out["evaluatedNodes"] = len(diagnosis.node_to_status.statuses)
        out["filter"] = {
            name: status_json(st) for name, st in diagnosis.node_to_status.statuses.items()
        }
        absent = diagnosis.node_to_status.absent_status
        if absent is not None:
            # No node fit: every node PreFilter let through was evaluated, so the others
            # are exactly those it excluded (or all of them, when it rejected the pod).
            _add_absent(out["filter"], table.index, absent)
        preemption = None
        if fwk.post_filter and err.num_all_nodes:
            post, status = fwk.run_post_filter(state, pod, diagnosis.node_to_status)
            if status.reasons:
                diagnosis.post_filter_msg = status.message()
            preemption = {
                "nominatedNode": (post.nominated_node_name or None) if post else None,
                "victims": list(post.victims) if post else [],
            }
            out["preemption"] = preemption
            if status.is_success and post is not None and post.nominated_node_name:
                diagnosis.post_filter_msg = ""
        out["message"] = fit_error_message(err.num_all_nodes, diagnosis)
        evaluated = list(diagnosis.node_to_status.statuses)
        _add_plugin_results(out, fwk, pod, cache, table, evaluated, [], None)
        return Explanation(None, err, preemption, out)

    out["selectedNode"] = result.suggested_host
    out["feasibleNodes"] = len(result.feasible_nodes)
    out["evaluatedNodes"] = result.evaluated_nodes
    filt = {name: status_json(st) for name, st in result.diagnosis.node_to_status.statuses.items()}
    for name in result.feasible_nodes:
        filt[name] = {"code": "Success"}
    absent = result.diagnosis.node_to_status.absent_status
    if absent is not None:
        # Nodes may also be unevaluated because enough feasible ones were found: only
        # those PreFilter's result left out carry the absent status. PreFilter is
        # deterministic, so running it again on a fresh state names them.
        pre_res, _, _ = fwk.run_pre_filter(CycleState(), pod, cache.snapshot)
        if pre_res is not None and pre_res.node_names is not None:
            kept = pre_res.node_names
            _add_absent(filt, [n for n in table.index if n not in kept], absent)
    out["filter"] = filt
    for i, name in enumerate(result.feasible_nodes):
        if result.raw_scores:
            out["rawScores"][name] = {p: int(v[i]) for p, v in result.raw_scores.items()}
            out["scores"][name] = {p: int(v[i]) for p, v in result.scores.items()}
        if result.total_scores is not None:
            out["finalScores"][name] = int(result.total_scores[i])
    out["weightedScores"] = weighted_scores(out["scores"], out["weights"])
    feasible = result.feasible_nodes
    # DynamicResources: the devices each feasible node would give the pod's claims
    dra = next((pl for pl in fwk.filter if hasattr(pl, "allocations")), None)
    claims = dra.allocations(state, list(feasible)) if dra is not None else {}
    if claims:
        out["resourceClaims"] = claims
    evaluated = [*result.diagnosis.node_to_status.statuses, *feasible]
    _add_plugin_results(out, fwk, pod, cache, table, evaluated, feasible, result.suggested_host)
    return Explanation(result, None, None, out)


def _pre_enqueue(fwk: Framework, pod: Pod) -> dict[str, Any]:
    """Each PreEnqueue plugin's own answer (the framework stops at the first rejection)."""
    return {
        pl.name: status_json(as_status(pl.pre_enqueue(pod)), plugin=False) for pl in fwk.pre_enqueue
    }


def _add_plugin_results(
    out: dict[str, Any],
    fwk: Framework,
    pod: Pod,
    cache: Cache,
    table: Any,
    evaluated: list[str],
    feasible: list[str],
    selected: str | None,
) -> None:
    results, passed = plugin_results(fwk, pod, cache.snapshot, table, evaluated, feasible, selected)
    out["pluginResults"].update(results)
    out["passedPlugins"] = passed


def _add_absent(filt: dict[str, Any], names: Iterable[str], absent: Status) -> None:
    """Give every node of ``names`` without a verdict the diagnosis' absent status (upstream
    NodeToStatus.Get: nodes never evaluated answer ``absentNodesStatus``)."""
    entry = status_json(absent)
    for name in names:
        if name not in filt:
            filt[name] = entry
