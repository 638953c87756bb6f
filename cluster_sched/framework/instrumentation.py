"""Extension points and plugins timed into spans and metrics.

``instrumented`` wraps a ``Framework.run_*`` method: a span and
``scheduler_framework_extension_point_duration_seconds`` per call (WaitOnPermit feeds
``scheduler_permit_wait_duration_seconds`` instead, as upstream). ``instrument_framework``
gives a Framework its tracing and metrics and, with metrics on, wraps each enabled
plugin's extension-point methods the way upstream's ``setInstrumentedPlugins`` does:

- ``scheduler_plugin_evaluation_total`` on every PreFilter, Filter, PreScore and Score
  call (Filter and Score count one evaluation per node of the slice, as upstream runs
  them node by node; PreFilter and PreScore do not count a Skip);
- ``scheduler_plugin_execution_duration_seconds`` for the cycles sampled at
  ``PLUGIN_METRICS_SAMPLE_PERCENT`` (10 %): the decision is drawn once per CycleState
  (upstream ``SetRecordPluginMetrics``) and kept in it, so a sampled cycle times all
  its plugins, binding ones included. A vectorised Filter call is one observation, its
  status the strongest code among the slice's nodes;
- ``scheduler_preemption_attempts_total`` on every DefaultPreemption PostFilter run,
  whatever it found, and ``scheduler_preemption_victims`` when it nominated a node (upstream counts
  in DefaultPreemption.PostFilter and Evaluator.Preempt).

With metrics off nothing is wrapped: the plugins' methods are called directly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, Final

from cluster_sched.framework.status import Code, Status
from cluster_sched.plugins import names
from cluster_sched.telemetry.metric_names import PLUGIN_METRICS_SAMPLE_PERCENT
from cluster_sched.telemetry.metrics import Metrics
from cluster_sched.telemetry.spans import (
    ATTR_COMPILED,
    ATTR_PHASE,
    ATTR_PROFILE,
    ATTR_STATUS,
    phase_span,
)
from cluster_sched.telemetry.tracing import Tracing

__all__ = [
    "COMPILED_FILTER",
    "PLUGIN_POINTS",
    "RECORD_PLUGIN_METRICS",
    "draw_plugin_metrics_sample",
    "instrument_framework",
    "instrumented",
    "record_compiled_phase",
    "record_shared_phase",
    "records_plugin_metrics",
]

#: CycleState key holding this cycle's sampling decision (bool).
RECORD_PLUGIN_METRICS: Final = "record_plugin_metrics"
#: CycleState key set while the compiled path answers Filter: the Filter calls it makes
#: for some plugins are part of the phase it records whole (``record_compiled_phase``).
COMPILED_FILTER: Final = "compiled_filter"

#: plugin method -> (extension point label, the Framework list that enables it there)
PLUGIN_POINTS: Final = {
    "pre_filter": ("PreFilter", "pre_filter"),
    "filter": ("Filter", "filter"),
    "post_filter": ("PostFilter", "post_filter"),
    "pre_score": ("PreScore", "pre_score"),
    "score": ("Score", "score"),
    "normalize_score": ("ScoreExtensionNormalize", "score"),
    "reserve": ("Reserve", "reserve"),
    "unreserve": ("Unreserve", "reserve"),
    "permit": ("Permit", "permit"),
    "pre_bind": ("PreBind", "pre_bind"),
    "bind": ("Bind", "bind"),
    "post_bind": ("PostBind", "post_bind"),
}
_EVALUATED: Final = frozenset({"PreFilter", "Filter", "PreScore", "Score"})
_PER_NODE: Final = frozenset({"Filter", "Score"})
#: Sampling draws from its own generator: it must not shift a seeded scheduler's choices.
_SAMPLER: Final = random.Random()


#: Code -> upstream's label, computed once (``Code.label`` builds the string each time).
_LABELS: Final = {code: code.label for code in Code}


def _status_of(result: Any) -> Status | None:
    """The Status in a plugin's or extension point's result, if it has one."""
    if isinstance(result, Status):
        return result
    if isinstance(result, tuple):
        for part in result:
            if isinstance(part, Status):
                return part
    return None


def _status_label(result: Any) -> str:
    """The Status code label of an extension point's or plugin's result."""
    status = _status_of(result)
    if status is not None:
        return _LABELS[status.code]
    if isinstance(result, tuple):
        return "Success"
    passed = getattr(result, "passed", None)  # a FilterOutcome: bool[k] per node
    if passed is not None:
        return "Success" if passed.all() else "Unschedulable"
    codes = getattr(result, "codes", None)  # one Filter plugin's verdicts: int[k]
    if codes is not None and len(codes) and codes.any():
        return _LABELS[Code(int(codes.max()))]
    return "Success"


def instrumented(extension_point: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Time an extension point into a span and the extension-point duration metric.

    Costs one attribute check when neither tracing nor metrics is on.
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        span_name = phase_span(extension_point)
        permit_wait = extension_point == "WaitOnPermit"
        filter_point = extension_point == "Filter"

        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.instrumented or (filter_point and args[0].get(COMPILED_FILTER)):
                return fn(self, *args, **kwargs)
            # WaitOnPermit is no upstream extension_point value: it feeds the permit wait
            # histogram, and only when the pod really waited (upstream returns early).
            waited = permit_wait and self.handle.waiting_pods.get(args[0].key) is not None
            start = time.perf_counter()
            with self.tracing.span(
                span_name, {ATTR_PROFILE: self.profile_name, ATTR_PHASE: extension_point}
            ) as span:
                try:
                    result = fn(self, *args, **kwargs)
                except Exception:
                    _observe(self, extension_point, permit_wait, waited, "Error", start)
                    raise
                label = _status_label(result)
                if self.tracing.enabled:
                    span.set_attribute(ATTR_STATUS, label)
                _observe(self, extension_point, permit_wait, waited, label, start)
                return result

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        return run

    return wrap


def _observe(
    fwk: Any, point: str, permit_wait: bool, waited: bool, label: str, start: float
) -> None:
    seconds = time.perf_counter() - start
    if not permit_wait:
        fwk.metrics.observe_extension_point(point, label, fwk.profile_name, seconds)
    elif waited:
        fwk.metrics.observe_permit_wait(label, seconds)


def instrument_framework(fwk: Any, tracing: Tracing, metrics: Metrics) -> None:
    """Give ``fwk`` (a ``runtime.Framework``) its tracing and metrics; with metrics on,
    wrap its plugins' extension-point methods (once: calling again only swaps tracing)."""
    fwk.tracing = tracing
    fwk.metrics = metrics
    fwk.instrumented = tracing.enabled or metrics.enabled
    if not metrics.enabled:
        return
    for method, (point, enabled_at) in PLUGIN_POINTS.items():
        for pl in getattr(fwk, enabled_at):
            bound = getattr(pl, method, None)
            if bound is None or getattr(bound, "plugin_metrics", None) is metrics:
                continue
            timed = _timed(bound, pl.name, point, fwk.profile_name, metrics)
            try:
                setattr(pl, method, timed)
            except AttributeError:  # a slotted plugin: left untimed
                continue


def _drawn(state: Any) -> bool:
    """This cycle's sampling decision, drawn now if it was not yet (once per CycleState)."""
    record = state.get(RECORD_PLUGIN_METRICS)
    if record is None:
        record = _SAMPLER.random() * 100 < PLUGIN_METRICS_SAMPLE_PERCENT
        state.write(RECORD_PLUGIN_METRICS, record)
    return bool(record)


def draw_plugin_metrics_sample(fwk: Any, state: Any) -> bool:
    """Draw, at the start of a scheduling cycle, whether it times every plugin (upstream
    scheduleOne's ``SetRecordPluginMetrics``): the cycle then knows before PreFilter
    whether it must run plugin by plugin (a sampled cycle) or may take the shared and
    compiled paths (every other one). False, and nothing drawn, with metrics off."""
    return bool(fwk.metrics.enabled) and _drawn(state)


def _timed(
    bound: Callable[..., Any], plugin: str, point: str, profile: str, metrics: Metrics
) -> Callable[..., Any]:
    """``bound`` (one plugin's method at ``point``) wrapped with the plugin metrics."""
    evaluation = metrics.plugin_evaluation(plugin, point, profile) if point in _EVALUATED else None
    per_node = point in _PER_NODE
    # upstream counts preemption attempts in DefaultPreemption.PostFilter, not in every
    # PostFilter plugin (DynamicResources has one too)
    post_filter = point == "PostFilter" and plugin == names.DEFAULT_PREEMPTION

    def run(state: Any, *args: Any, **kwargs: Any) -> Any:
        record = _drawn(state)
        start = time.perf_counter() if record else 0.0
        try:
            result = bound(state, *args, **kwargs)
        except Exception:
            if record:
                metrics.observe_plugin(plugin, point, "Error", time.perf_counter() - start)
            raise
        if record:
            metrics.observe_plugin(
                plugin, point, _status_label(result), time.perf_counter() - start
            )
        if evaluation is not None:
            if per_node:
                nodes = args[1] if len(args) > 1 else kwargs.get("nodes", ())
                evaluation.inc(len(nodes))
            else:
                status = _status_of(result)
                if status is None or status.code is not Code.SKIP:
                    evaluation.inc()
        if post_filter:
            label = _status_label(result)
            metrics.inc_preemption_attempts()
            post: Any = result[0] if isinstance(result, tuple) and result else None
            nominated = str(getattr(post, "nominated_node_name", "") or "")
            if nominated and label == "Success":
                metrics.observe_preemption_victims(len(post.victims or ()))
        return result

    run.plugin_metrics = metrics  # type: ignore[attr-defined]
    run.__name__ = getattr(bound, "__name__", point)
    run.__doc__ = getattr(bound, "__doc__", None)
    return run


def record_batched_bind(
    fwk: Any,
    state: Any,
    plugin: str,
    status: Status,
    window: tuple[float, int, int],
    parent: Any,
) -> None:
    """Bind done for several pods in one store round trip (DefaultBinder's batch): each
    pod's Bind is that round trip, recorded as a Bind extension point (span under the
    pod's binding-cycle span ``parent``, ``extension_point="Bind"`` duration) and, for
    sampled cycles, as the binder plugin's execution. ``window``: (seconds, start ns,
    end ns) of the round trip."""
    if not fwk.instrumented:
        return
    seconds, start_ns, end_ns = window
    label = status.code.label
    if fwk.tracing.enabled:
        span = fwk.tracing.start_span(
            phase_span("Bind"),
            {ATTR_PROFILE: fwk.profile_name, ATTR_PHASE: "Bind", ATTR_STATUS: label},
            parent=parent,
            start_time_ns=start_ns,
        )
        fwk.tracing.end(span, end_ns)
    fwk.metrics.observe_extension_point("Bind", label, fwk.profile_name, seconds)
    if state.get(RECORD_PLUGIN_METRICS):
        fwk.metrics.observe_plugin(plugin, "Bind", label, seconds)


def records_plugin_metrics(fwk: Any, state: Any) -> bool:
    """Whether this cycle was drawn to time every plugin (``RECORD_PLUGIN_METRICS``):
    the compiled path, which runs the Filter and Score plugins as one kernel, leaves
    such a cycle to the plugin-by-plugin path so each plugin gets its own duration."""
    return bool(fwk.metrics.enabled and state.get(RECORD_PLUGIN_METRICS))


def record_shared_phase(fwk: Any, extension_point: str, seconds: float, plugins: Any) -> None:
    """PreFilter or PreScore answered from a state pods of one shape share
    (``scheduler.pre_cycle``), recorded as running the plugins records it: the
    extension-point duration (the time the shared answer took) and one
    ``plugin_evaluation_total`` for each of ``plugins``, those that did not Skip and were
    not run (a plugin run again for the pod counted itself)."""
    if not fwk.metrics.enabled:
        return
    fwk.metrics.observe_extension_point(extension_point, "Success", fwk.profile_name, seconds)
    fwk.metrics.count_evaluations(extension_point, fwk.profile_name, plugins)


def record_compiled_phase(
    fwk: Any,
    extension_point: str,
    window: tuple[int, int],
    *,
    label: str = "Success",
    also: tuple[str, ...] = (),
) -> None:
    """An extension point the compiled path answered (one kernel call for every plugin
    at it), recorded as the plugin-by-plugin path records it: a span under the current
    one (the schedulingCycle) and the extension-point duration metric. ``window``:
    (start, end) in ``time.time_ns``. ``also``: extension points the same call ran
    (NormalizeScore with Score), each a span of its own over the same window, since the
    kernel does not time them apart (``scheduler.compiled`` marks such spans)."""
    if not fwk.instrumented:
        return
    start_ns, end_ns = window
    if fwk.tracing.enabled:
        attrs = {ATTR_PROFILE: fwk.profile_name, ATTR_STATUS: label, ATTR_COMPILED: True}
        for point in (extension_point, *also):
            span = fwk.tracing.start_span(
                phase_span(point), {**attrs, ATTR_PHASE: point}, start_time_ns=start_ns
            )
            fwk.tracing.end(span, end_ns)
    fwk.metrics.observe_extension_point(
        extension_point, label, fwk.profile_name, (end_ns - start_ns) / 1e9
    )
