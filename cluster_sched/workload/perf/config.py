"""An upstream scheduler_perf ``performance-config.yaml``, read as it is.

The file is a list of test cases; each has a ``workloadTemplate`` (ops, see
:mod:`.ops`) and ``workloads`` that fill in its ``$params``. Paths in it
(``defaultPodTemplatePath``, ``schedulerConfigPath``, ops' template paths) are relative
to the config file, as upstream's are relative to the directory its Go test runs in.

A test case is decoded on its own: a problem in one (an op cluster-sched does not run,
a misspelled field) is an error only when that test case is selected, so
``--test SchedulingBasic`` works on a file that also holds DRA cases.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_sched.api.files import read_text
from cluster_sched.api.manifest import load_documents
from cluster_sched.errors import InvalidObjectError
from cluster_sched.features import GATES, FeatureGateError, FeatureGates
from cluster_sched.plugins import names
from cluster_sched.telemetry.metrics import (
    EXTENSION_POINTS,
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
)
from cluster_sched.workload.perf.decode import field_name, parse_op
from cluster_sched.workload.perf.ops import (
    CreatePods,
    CreatePodSets,
    Op,
    Params,
    StopCollectingMetrics,
    patch_params,
)

__all__ = [
    "DEFAULT_METRICS",
    "MODELLED_GATES",
    "SLI_METRIC",
    "THROUGHPUT_METRIC",
    "PerfTestCase",
    "PerfWorkload",
    "PlannedWorkload",
    "ThresholdMetricSelector",
    "feature_gate_warnings",
    "feature_gates_of",
    "load_test_cases",
    "select_workloads",
]

THROUGHPUT_METRIC = "SchedulingThroughput"
SLI_METRIC = "scheduler_pod_scheduling_sli_duration_seconds"

#: Gates outside cluster_sched.features.GATES that cluster-sched's behaviour corresponds
#: to: gate -> (the value it behaves as, why). A workload asking for the other value runs
#: anyway, with a warning. The gates in features.GATES are switched for real.
MODELLED_GATES: Mapping[str, tuple[bool, str]] = {
    "SchedulerAsyncAPICalls": (False, "the cycle's API calls are made inside the cycle"),
    "NodeDeclaredFeatures": (False, "nodes declare no features"),
}

#: metric -> label filters (label, values); None aggregates every series (upstream's
#: metricsCollectorConfig). Used when a test case names none.
MetricsConfig = Mapping[str, Sequence[tuple[str, tuple[str, ...]]] | None]

#: Plugins whose per-plugin metrics are collected (upstream scheduler_perf PluginNames).
PLUGIN_NAMES: tuple[str, ...] = (
    names.PRIORITY_SORT,
    names.DEFAULT_BINDER,
    names.DEFAULT_PREEMPTION,
    names.DYNAMIC_RESOURCES,
    names.IMAGE_LOCALITY,
    names.INTER_POD_AFFINITY,
    names.NODE_AFFINITY,
    names.NODE_NAME,
    names.NODE_PORTS,
    names.NODE_RESOURCES_BALANCED_ALLOCATION,
    names.NODE_RESOURCES_FIT,
    names.NODE_UNSCHEDULABLE,
    names.NODE_VOLUME_LIMITS,
    names.POD_TOPOLOGY_SPREAD,
    names.SCHEDULING_GATES,
    names.TAINT_TOLERATION,
    names.VOLUME_BINDING,
    names.VOLUME_RESTRICTIONS,
    names.VOLUME_ZONE,
)

#: Histograms collected when a test case has no ``metricsCollectorConfig`` (upstream's
#: defaultMetricsCollectorConfig, with the SLI duration in place of the removed
#: scheduler_pod_scheduling_duration_seconds). A metric the scheduler does not expose
#: yields no data item, as upstream skips a metric its registry lacks.
DEFAULT_METRICS: MetricsConfig = {
    "scheduler_framework_extension_point_duration_seconds": [("extension_point", EXTENSION_POINTS)],
    "scheduler_scheduling_attempt_duration_seconds": [
        ("result", (RESULT_SCHEDULED, RESULT_UNSCHEDULABLE, RESULT_ERROR))
    ],
    SLI_METRIC: None,
    "scheduler_plugin_execution_duration_seconds": [
        ("plugin", PLUGIN_NAMES),
        ("extension_point", EXTENSION_POINTS),
    ],
}


@dataclass(frozen=True, slots=True)
class ThresholdMetricSelector:
    """Which data item a workload's ``threshold`` is compared with (upstream default:
    SchedulingThroughput's Average, which must be higher)."""

    name: str = THROUGHPUT_METRIC
    labels: Mapping[str, str] = field(default_factory=dict)
    data_bucket: str = "Average"
    expect_lower: bool = False


@dataclass(slots=True)
class PerfWorkload:
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    #: 0 disables the check (upstream); the value for the run's topic (``for_topic``)
    threshold: float = 0.0
    #: upstream's ``threshold`` as a topic -> value map (the plain number is ``threshold``
    #: then 0 unless the map names the topic "")
    thresholds_by_topic: dict[str, float] = field(default_factory=dict)
    selector: ThresholdMetricSelector = field(default_factory=ThresholdMetricSelector)
    feature_gates: dict[str, bool] = field(default_factory=dict)

    def for_topic(self, topic: str) -> float:
        """Upstream thresholds.Get: the map's value for the topic, else the number."""
        if topic in self.thresholds_by_topic:
            return self.thresholds_by_topic[topic]
        return 0.0 if self.thresholds_by_topic else self.threshold


@dataclass(slots=True)
class PerfTestCase:
    name: str
    source: str
    workload_template: list[Op]
    workloads: list[PerfWorkload]
    feature_gates: dict[str, bool] = field(default_factory=dict)
    metrics: MetricsConfig | None = None
    scheduler_config_path: Path | None = None
    default_pod_template_path: Path | None = None
    labels: list[str] = field(default_factory=list)


@dataclass(slots=True)
class PlannedWorkload:
    """One selected workload with its ops unrolled and parameters substituted."""

    case: PerfTestCase
    workload: PerfWorkload
    ops: list[Op]

    @property
    def name(self) -> str:
        return f"{self.case.name}/{self.workload.name}"

    @property
    def feature_gates(self) -> dict[str, bool]:
        return {**self.case.feature_gates, **self.workload.feature_gates}


def feature_gates_of(
    gates: Mapping[str, bool], base: FeatureGates | None = None
) -> tuple[FeatureGates, list[str]]:
    """The scheduler's FeatureGates for a workload's ``featureGates`` (over ``base``, the
    command line's), and a warning per gate that could not be applied: gates the
    registry does not know (see ``feature_gate_warnings``) or values a locked gate
    refuses."""
    features = base or FeatureGates()
    warnings: list[str] = []
    for gate, value in sorted(gates.items()):
        if gate not in GATES:
            continue
        try:
            features = features.with_overrides({gate: value})
        except FeatureGateError as exc:
            warnings.append(f"{exc}; ignored")
    return features, warnings + feature_gate_warnings(gates)


def feature_gate_warnings(gates: Mapping[str, bool]) -> list[str]:
    """One line per gate outside the registry whose value cluster-sched does not behave as."""
    out = []
    for gate, value in sorted(gates.items()):
        if gate in GATES:
            continue
        modelled = MODELLED_GATES.get(gate)
        if modelled is None:
            out.append(f"feature gate {gate} is not known to cluster-sched; ignored")
        elif modelled[0] != value:
            want = str(modelled[0]).lower()
            out.append(
                f"feature gate {gate}={str(value).lower()} is not supported: cluster-sched "
                f"behaves as {gate}={want} ({modelled[1]})"
            )
    return out


# ------------------------------------------------------------------------- decoding


class _Bad(ValueError):
    def __init__(self, field_: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field_


def _strict(raw: Any, known: Sequence[str], where: str) -> dict[str, Any]:
    """Keys matched case-insensitively (encoding/json); an unknown key is an error."""
    if not isinstance(raw, dict):
        raise _Bad(where, f"must be a mapping, got {raw!r}")
    by_lower = {k.lower(): k for k in known}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = by_lower.get(str(key).lower())
        if name is None:
            raise _Bad(f"{where}.{key}" if where else str(key), f"unknown field {key!r}")
        out[name] = value
    return out


def _gates(raw: Any, where: str) -> dict[str, bool]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, bool) for v in raw.values()):
        raise _Bad(where, "featureGates must map gate names to true/false")
    return {str(k): v for k, v in raw.items()}


def _labels(raw: Any, where: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise _Bad(where, "labels must be a list of strings")
    return list(raw)


def _selector(raw: Any, where: str) -> ThresholdMetricSelector:
    f = _strict(raw, ("name", "labels", "dataBucket", "expectLower"), where)
    if not f.get("dataBucket"):
        raise _Bad(f"{where}.dataBucket", f"dataBucket should be set for metric {f.get('name')}")
    return ThresholdMetricSelector(
        name=str(f.get("name") or ""),
        labels={str(k): str(v) for k, v in (f.get("labels") or {}).items()},
        data_bucket=str(f["dataBucket"]),
        expect_lower=bool(f.get("expectLower", False)),
    )


def _threshold(raw: Any, where: str) -> tuple[float, dict[str, float]]:
    """A number, or upstream's topic name -> number map."""

    def number(v: Any, at: str) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            raise _Bad(at, f"threshold must be a non-negative number, got {v!r}")
        return float(v)

    if raw is None:
        return 0.0, {}
    if isinstance(raw, dict):
        return 0.0, {str(k): number(v, f"{where}.{k}") for k, v in raw.items()}
    return number(raw, where), {}


def _metrics_config(raw: Any, where: str) -> MetricsConfig:
    f = _strict(raw, ("metrics",), where)
    metrics: dict[str, list[tuple[str, tuple[str, ...]]] | None] = {}
    for name, filters in (f.get("metrics") or {}).items():
        if filters is None:
            metrics[str(name)] = None
            continue
        items = filters if isinstance(filters, list) else [filters]
        parsed = []
        for i, item in enumerate(items):
            lv = _strict(item, ("label", "values"), f"{where}.metrics.{name}[{i}]")
            parsed.append((str(lv.get("label", "")), tuple(str(v) for v in lv.get("values") or ())))
        metrics[str(name)] = parsed
    return metrics


def _workload(raw: Any, where: str, default: ThresholdMetricSelector | None) -> PerfWorkload:
    f = _strict(
        raw,
        ("name", "params", "labels", "threshold", "thresholdMetricSelector", "featureGates"),
        where,
    )
    if not isinstance(f.get("name"), str) or not f["name"]:
        raise _Bad(f"{where}.name", "a workload needs a name")
    params = f.get("params") or {}
    if not isinstance(params, dict):
        raise _Bad(f"{where}.params", "params must be a mapping")
    raw_sel = f.get("thresholdMetricSelector")
    selector = _selector(raw_sel, f"{where}.thresholdMetricSelector") if raw_sel else default
    value, by_topic = _threshold(f.get("threshold"), f"{where}.threshold")
    return PerfWorkload(
        name=f["name"],
        params={str(k): v for k, v in params.items()},
        labels=_labels(f.get("labels"), f"{where}.labels"),
        threshold=by_topic.get("", value) if by_topic else value,
        thresholds_by_topic=by_topic,
        selector=selector or ThresholdMetricSelector(),
        feature_gates=_gates(f.get("featureGates"), f"{where}.featureGates"),
    )


_CASE_FIELDS = (
    "name",
    "featureGates",
    "metricsCollectorConfig",
    "workloadTemplate",
    "workloads",
    "schedulerConfigPath",
    "defaultPodTemplatePath",
    "labels",
    "defaultThresholdMetricSelector",
)


def _test_case(raw: dict[str, Any], source: str, base: Path) -> PerfTestCase:
    f = _strict(raw, _CASE_FIELDS, "")
    name = f["name"]
    template = f.get("workloadTemplate") or []
    if not isinstance(template, list) or not template:
        raise _Bad("workloadTemplate", f"{name}: no ops defined")
    ops: list[Op] = []
    for i, raw_op in enumerate(template):
        try:
            ops.append(parse_op(raw_op, base))
        except ValueError as err:
            inner = field_name(err)
            raise _Bad(
                f"workloadTemplate[{i}]" + (f".{inner}" if inner else ""), str(err)
            ) from None
    raw_default = f.get("defaultThresholdMetricSelector")
    default = _selector(raw_default, "defaultThresholdMetricSelector") if raw_default else None
    raw_workloads = f.get("workloads") or []
    if not isinstance(raw_workloads, list) or not raw_workloads:
        raise _Bad("workloads", f"{name}: no workloads defined")
    workloads = [_workload(w, f"workloads[{i}]", default) for i, w in enumerate(raw_workloads)]
    seen: set[str] = set()
    for w in workloads:
        if w.name in seen:
            raise _Bad("workloads", f"{name}: workload name {w.name} is not unique")
        seen.add(w.name)
    case = PerfTestCase(
        name=name,
        source=source,
        workload_template=ops,
        workloads=workloads,
        feature_gates=_gates(f.get("featureGates"), "featureGates"),
        metrics=(
            _metrics_config(f["metricsCollectorConfig"], "metricsCollectorConfig")
            if f.get("metricsCollectorConfig")
            else None
        ),
        scheduler_config_path=base / f["schedulerConfigPath"]
        if f.get("schedulerConfigPath")
        else None,
        default_pod_template_path=(
            base / f["defaultPodTemplatePath"] if f.get("defaultPodTemplatePath") else None
        ),
        labels=_labels(f.get("labels"), "labels"),
    )
    if not any(_collects(op) for op in ops):
        raise _Bad("workloadTemplate", f"{name}: no op in the workload template collects metrics")
    for w in workloads:
        _check_selector(w.selector, case.metrics, f"workload {w.name}")
    return case


def _collects(op: Op) -> bool:
    if isinstance(op, CreatePods):
        return op.collect_metrics
    if isinstance(op, CreatePodSets):
        return op.create_pods_op.collect_metrics
    return isinstance(op, StopCollectingMetrics)


def _check_selector(
    sel: ThresholdMetricSelector, metrics: MetricsConfig | None, where: str
) -> None:
    if sel.name == THROUGHPUT_METRIC:
        return
    collected = DEFAULT_METRICS if metrics is None else metrics
    if sel.name not in collected:
        raise _Bad(
            "thresholdMetricSelector",
            f"{where}: the metric {sel.name} is targeted, but it's not collected during the test",
        )


#: A test case, or why it could not be read (raised only if the case is selected).
CaseOrError = tuple[str, PerfTestCase | InvalidObjectError]


def load_test_cases(path: str | Path) -> list[CaseOrError]:
    """Every test case of a config file, by name."""
    source = str(path)
    text = read_text(path, "scheduler_perf config")
    docs = load_documents(text, source)
    if not docs:
        raise InvalidObjectError("no test cases defined", source=source)
    base = Path(path).resolve().parent
    out: list[CaseOrError] = []
    seen: set[str] = set()
    for i, raw in enumerate(docs):
        name = next((v for k, v in raw.items() if str(k).lower() == "name"), None)
        if not isinstance(name, str) or not name:
            raise InvalidObjectError("a test case needs a name", field=f"[{i}].name", source=source)
        if name in seen:
            raise InvalidObjectError(
                f"{name}: name is not unique", field=f"[{i}].name", source=source
            )
        seen.add(name)
        try:
            out.append((name, _test_case(raw, source, base)))
        except _Bad as err:
            out.append(
                (
                    name,
                    InvalidObjectError(
                        str(err), obj=f"test case {name}", field=err.field, source=source
                    ),
                )
            )
    return out


def select_workloads(
    cases: Sequence[CaseOrError], test: str | None, workload: str | None, source: str
) -> list[PlannedWorkload]:
    """The workloads whose test case and workload names match the patterns (shell
    wildcards; default all), planned: an error in any of them is raised before anything
    runs."""
    planned: list[PlannedWorkload] = []
    for name, case in cases:
        if test is not None and not fnmatch.fnmatchcase(name, test):
            continue
        if isinstance(case, InvalidObjectError):
            raise case
        for w in case.workloads:
            if workload is None or fnmatch.fnmatchcase(w.name, workload):
                planned.append(plan(case, w))
    if not planned:
        what = " and ".join(
            f"{kind} {pattern!r}"
            for kind, pattern in (("test", test), ("workload", workload))
            if pattern
        )
        raise InvalidObjectError(f"no workload matches {what or 'anything'}", source=source)
    return planned


def plan(case: PerfTestCase, w: PerfWorkload) -> PlannedWorkload:
    """Unroll createPodSets and substitute ``$params`` (upstream unrollWorkloadTemplate +
    patchParams), failing on undefined or unused parameters as upstream does."""
    params = Params(w.params)
    ops: list[Op] = []
    for i, op in enumerate(case.workload_template):
        try:
            patched = patch_params(op, params)
            if isinstance(patched, CreatePodSets):
                for n in range(patched.count):
                    inner = patch_params(patched.create_pods_op, params)
                    assert isinstance(inner, CreatePods)
                    inner.namespace = f"{patched.namespace_prefix}-{n}"
                    ops.append(inner)
            else:
                ops.append(patched)
        except ValueError as err:
            inner_field = field_name(err)
            raise InvalidObjectError(
                str(err),
                obj=f"workload {case.name}/{w.name}",
                field=f"workloadTemplate[{i}]" + (f".{inner_field}" if inner_field else ""),
                source=case.source,
            ) from None
    unused = params.unused()
    if unused:
        raise InvalidObjectError(
            f"the parameters {unused} are defined on workload {w.name}, but unused",
            obj=f"workload {case.name}/{w.name}",
            field="params",
            source=case.source,
        )
    return PlannedWorkload(case, w, ops)
