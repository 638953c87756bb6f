"""scheduler_perf's workload ops (upstream test/integration/scheduler_perf operations.go).

One dataclass per op, fields in snake_case. Counts come either literally (``count: 5``)
or from a workload parameter (``countParam: $initNodes``), substituted per workload by
:func:`patch_params`; :func:`validate` is upstream's ``isValid``. Decoding from YAML is
:mod:`.decode`'s job.

Ops upstream has that cluster-sched does not run (DRA, profiling, pod groups) are
recognised by name so the error says "not supported" rather than "unknown".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "UNSUPPORTED_OPS",
    "AllocResourceClaims",
    "Barrier",
    "Churn",
    "CreateAny",
    "CreateNamespaces",
    "CreateNodes",
    "CreatePodSets",
    "CreatePods",
    "CreateResourceClaims",
    "CreateResourceDriver",
    "DeletePods",
    "FieldError",
    "Op",
    "Params",
    "Sleep",
    "StartCollectingMetrics",
    "StopCollectingMetrics",
    "parse_duration",
    "patch_params",
    "validate",
]

#: Upstream opcodes cluster-sched recognises but does not run, with the reason.
UNSUPPORTED_OPS: Mapping[str, str] = {
    "updateAny": "objects are not updated in place",
    "createPodGroups": "pod groups are not modelled",
    "waitForPodGroups": "pod groups are not modelled",
    "startCollectingProfile": "Go profiles do not apply",
    "stopCollectingProfile": "Go profiles do not apply",
}


class Params:
    """A workload's ``params``, recording which ones the ops used (upstream fails a
    workload that defines a parameter no op reads: it is usually a typo)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)
        self.used: set[str] = set()

    def _get(self, ref: str) -> Any:
        name = ref[1:] if ref.startswith("$") else ref
        self.used.add(name)
        if name not in self.values:
            raise ValueError(f"parameter {name} is undefined")
        return self.values[name]

    def get_int(self, ref: str) -> int:
        value = self._get(ref)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"parameter {ref[1:]} has the wrong type {type(value).__name__}")
        return int(value)

    def get_str(self, ref: str) -> str:
        value = self._get(ref)
        if not isinstance(value, str):
            raise ValueError(f"parameter {ref[1:]} has the wrong type {type(value).__name__}")
        return value

    def get_bool(self, ref: str) -> bool:
        value = self._get(ref)
        if not isinstance(value, bool):
            raise ValueError(f"parameter {ref[1:]} has the wrong type {type(value).__name__}")
        return value

    def resolve(self, template_params: Mapping[str, Any]) -> dict[str, Any]:
        """``templateParams`` with ``$name`` values replaced by the workload's values."""
        out = dict(template_params)
        for key, value in out.items():
            if isinstance(value, str) and value.startswith("$"):
                out[key] = self._get(value)
        return out

    def unused(self) -> list[str]:
        return sorted(set(self.values) - self.used)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration string (``1m30s``, ``500ms``, ``0``) in seconds."""
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not text:
        raise ValueError("invalid duration ''")
    return total


@dataclass(slots=True)
class CreateNodes:
    count: int = 0
    count_param: str = ""
    node_template_path: Path | None = None
    #: NodeAllocatableStrategy.nodeAllocatable: resource -> quantity for every node
    node_allocatable: dict[str, str] | None = None
    #: LabelNodePrepareStrategy: (labelKey, labelValues), values given round-robin
    label_strategy: tuple[str, tuple[str, ...]] | None = None
    #: UniqueNodeLabelStrategy.labelKey: every node gets its own value
    unique_label_key: str | None = None
    template_params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CreateNamespaces:
    prefix: str = ""
    count: int = 0
    count_param: str = ""
    namespace_template_path: Path | None = None


@dataclass(slots=True)
class CreatePods:
    count: int = 0
    count_param: str = ""
    count_multiplier_param: str = ""
    steady_state: bool = False
    steady_state_param: str = ""
    duration: float = 0.0
    duration_param: str = ""
    collect_metrics: bool = False
    namespace: str | None = None
    pod_template_path: Path | None = None
    skip_wait_to_completion: bool = False
    template_params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CreatePodSets:
    count: int = 0
    count_param: str = ""
    namespace_prefix: str = ""
    create_pods_op: CreatePods = field(default_factory=CreatePods)


@dataclass(slots=True)
class CreateAny:
    template_path: Path = Path()
    namespace: str = ""
    count: int | None = None
    count_param: str = ""
    template_params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CreateResourceDriver:
    """Publishes, for every node whose name matches ``nodes`` (a glob), one
    ResourceSlice of ``max_claims_per_node`` devices of ``driver_name`` (upstream
    scheduler_perf's test driver)."""

    driver_name: str = ""
    nodes: str = ""
    max_claims_per_node: int = 0
    max_claims_per_node_param: str = ""


@dataclass(slots=True)
class AllocResourceClaims:
    """Allocates the unallocated ResourceClaims of ``namespace`` (all if empty) out of
    band, one at a time on a random node that fits, as no pod's scheduling would."""

    namespace: str = ""


@dataclass(slots=True)
class CreateResourceClaims:
    """``count`` copies of the ResourceClaim in ``template_path``, in ``namespace``."""

    namespace: str = ""
    template_path: Path = Path()
    count: int = 0
    count_param: str = ""


@dataclass(slots=True)
class DeletePods:
    namespace: str = ""
    label_selector: dict[str, str] = field(default_factory=dict)
    skip_wait_to_completion: bool = False
    delete_pods_per_second: int = 0


@dataclass(slots=True)
class Churn:
    mode: str = ""
    number: int = 0
    interval_milliseconds: int = 0
    namespace: str | None = None
    template_paths: list[Path] = field(default_factory=list)


@dataclass(slots=True)
class Barrier:
    namespaces: list[str] = field(default_factory=list)
    label_selector: dict[str, str] = field(default_factory=dict)
    stage_requirement: str = "Scheduled"


@dataclass(slots=True)
class Sleep:
    duration: float = 0.0
    duration_param: str = ""


@dataclass(slots=True)
class StartCollectingMetrics:
    name: str = ""
    namespaces: list[str] = field(default_factory=list)
    label_selector: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class StopCollectingMetrics:
    pass


Op = (
    CreateNodes
    | CreateNamespaces
    | CreatePods
    | CreatePodSets
    | CreateAny
    | CreateResourceDriver
    | AllocResourceClaims
    | CreateResourceClaims
    | DeletePods
    | Churn
    | Barrier
    | Sleep
    | StartCollectingMetrics
    | StopCollectingMetrics
)


class FieldError(ValueError):
    """A bad field: its (upstream) name and why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name = name


def _count_ok(count: int | None, param: str, allow_params: bool) -> bool:
    if allow_params and param:
        return True
    return count is None or count >= 0


def validate(op: Op, *, allow_params: bool) -> None:
    """Upstream's ``isValid``: checks that need no workload parameters."""
    counted = CreateNodes | CreateNamespaces | CreatePodSets | CreateAny | CreateResourceClaims
    if isinstance(op, counted) and not _count_ok(op.count, op.count_param, allow_params):
        raise FieldError("count", f"invalid count {op.count}")
    if isinstance(op, CreateAny) and op.template_path == Path():
        raise FieldError("templatePath", "templatePath must be set")
    if isinstance(op, CreatePods):
        if not _count_ok(op.count, op.count_param, allow_params):
            raise FieldError("count", f"invalid count {op.count}")
        if op.collect_metrics and op.skip_wait_to_completion:
            raise FieldError(
                "collectMetrics", "collectMetrics and skipWaitToCompletion cannot both be true"
            )
        if op.skip_wait_to_completion and op.steady_state:
            raise FieldError(
                "steadyState", "skipWaitToCompletion and steadyState cannot both be true"
            )
        if op.steady_state and not allow_params and op.duration <= 0:
            raise FieldError("duration", "a steady state needs a duration > 0")
    if isinstance(op, CreateResourceClaims):
        if not op.namespace:
            raise FieldError("namespace", "Namespace must be set")
        if op.template_path == Path():
            raise FieldError("templatePath", "TemplatePath must be set")
    if isinstance(op, DeletePods) and op.delete_pods_per_second < 0:
        raise FieldError("deletePodsPerSecond", "must not be negative")
    if isinstance(op, Churn):
        if op.mode not in ("create", "recreate"):
            raise FieldError("mode", f"invalid mode {op.mode!r}: must be create or recreate")
        if op.number < 0:
            raise FieldError("number", "must not be negative")
        if op.mode == "recreate" and op.number == 0:
            raise FieldError("number", "number cannot be 0 when mode is recreate")
        if not op.template_paths:
            raise FieldError("templatePaths", "at least one template path is needed")
    if isinstance(op, Barrier) and op.stage_requirement not in ("Scheduled", "Attempted", ""):
        raise FieldError("stageRequirement", f"invalid stageRequirement {op.stage_requirement!r}")
    if isinstance(op, StartCollectingMetrics) and not op.namespaces:
        raise FieldError("namespaces", "namespaces cannot be empty")


def patch_params(op: Op, params: Params) -> Op:
    """A copy of ``op`` with the workload's parameters substituted (upstream patchParams)."""
    op = dataclasses.replace(op)
    if (
        isinstance(
            op, CreateNodes | CreateNamespaces | CreatePodSets | CreateAny | CreateResourceClaims
        )
        and op.count_param
    ):
        op.count = params.get_int(op.count_param)
    if isinstance(op, CreateNodes | CreateAny | CreatePods) and op.template_params:
        op.template_params = params.resolve(op.template_params)
    if isinstance(op, CreatePods):
        if op.count_param:
            op.count = params.get_int(op.count_param)
        if op.count_multiplier_param:
            op.count *= params.get_int(op.count_multiplier_param)
        if op.duration_param:
            op.duration = parse_duration(params.get_str(op.duration_param))
        if op.steady_state_param:
            op.steady_state = params.get_bool(op.steady_state_param)
    if isinstance(op, Sleep) and op.duration_param:
        op.duration = parse_duration(params.get_str(op.duration_param))
    if isinstance(op, CreateResourceDriver) and op.max_claims_per_node_param:
        op.max_claims_per_node = params.get_int(op.max_claims_per_node_param)
    if isinstance(op, Barrier) and not op.stage_requirement:
        op.stage_requirement = "Scheduled"
    if isinstance(op, CreatePodSets):
        op.create_pods_op = dataclasses.replace(op.create_pods_op)
    validate(op, allow_params=False)
    return op
