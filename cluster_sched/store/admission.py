"""The Priority admission plugin: a pod's spec.priority from its PriorityClass.

Upstream (plugin/pkg/admission/priority) resolves a pod's priority when it is created:
``spec.priorityClassName`` names a PriorityClass (or one of the two built-in system
classes) whose ``value`` becomes ``spec.priority`` and whose ``preemptionPolicy`` becomes
the pod's; a pod without a class gets the globalDefault class (the lowest-valued one if a
race left several), or priority 0 when there is none. An unknown class name rejects the pod.

One deliberate leniency: a pod that already carries ``spec.priority`` keeps it (upstream
forbids setting it by hand), so workload files may state priorities without classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from cluster_sched.errors import InvalidObjectError

__all__ = [
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "PREEMPTION_POLICIES",
    "SYSTEM_PRIORITY_CLASSES",
    "PriorityClassInfo",
    "PriorityTable",
    "admit_pod",
    "needs_priority",
    "priority_class_info",
]

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
#: The values of preemptionPolicy upstream accepts.
PREEMPTION_POLICIES = frozenset({PREEMPT_LOWER_PRIORITY, "Never"})
#: Largest value a user-defined PriorityClass may have (scheduling.HighestUserDefinablePriority).
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
#: The classes the API server creates at startup (scheduling.SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES: Mapping[str, int] = {
    "system-cluster-critical": 2 * HIGHEST_USER_DEFINABLE_PRIORITY,
    "system-node-critical": 2 * HIGHEST_USER_DEFINABLE_PRIORITY + 1000,
}


@dataclass(frozen=True, slots=True)
class PriorityClassInfo:
    """The fields of a scheduling.k8s.io/v1 PriorityClass admission reads."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = PREEMPT_LOWER_PRIORITY


#: Priorities are int32 in the API (PriorityClass.value, PodSpec.priority).
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _int32_error(value: int) -> str:
    shown = str(value) if value.bit_length() <= 128 else f"a {value.bit_length()}-bit number"
    return f"{shown} is out of the int32 range ({INT32_MIN} to {INT32_MAX})"


def priority_class_info(doc: Mapping[str, Any], source: str = "") -> PriorityClassInfo:
    """Validate a PriorityClass manifest (value, globalDefault, preemptionPolicy)."""
    name = str(doc.get("metadata", {}).get("name", ""))
    obj = f"PriorityClass {name}"
    value = doc.get("value")
    if not _is_int(value):
        raise InvalidObjectError(
            f"value must be an integer, got {value!r}", obj=obj, field="value", source=source
        )
    if not INT32_MIN <= value <= INT32_MAX:
        raise InvalidObjectError(_int32_error(value), obj=obj, field="value", source=source)
    if value > HIGHEST_USER_DEFINABLE_PRIORITY and name not in SYSTEM_PRIORITY_CLASSES:
        raise InvalidObjectError(
            f"maximum allowed value of a user defined priority is "
            f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            obj=obj,
            field="value",
            source=source,
        )
    global_default = doc.get("globalDefault", False)
    if global_default is None:
        global_default = False
    if not isinstance(global_default, bool):
        raise InvalidObjectError(
            f"globalDefault must be a boolean, got {global_default!r}",
            obj=obj,
            field="globalDefault",
            source=source,
        )
    policy = doc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
    if policy not in PREEMPTION_POLICIES:
        raise InvalidObjectError(
            f"preemptionPolicy must be one of {sorted(PREEMPTION_POLICIES)}, got {policy!r}",
            obj=obj,
            field="preemptionPolicy",
            source=source,
        )
    return PriorityClassInfo(name, value, global_default, policy)


class PriorityTable:
    """The PriorityClasses admission can see: the system classes plus the given ones."""

    __slots__ = ("_classes",)

    def __init__(self, classes: Iterable[PriorityClassInfo] = ()) -> None:
        self._classes: dict[str, PriorityClassInfo] = {
            name: PriorityClassInfo(name, value) for name, value in SYSTEM_PRIORITY_CLASSES.items()
        }
        for info in classes:
            self.add(info)

    def add(self, info: PriorityClassInfo) -> None:
        self._classes[info.name] = info

    def get(self, name: str) -> PriorityClassInfo | None:
        return self._classes.get(name)

    def default(self) -> PriorityClassInfo | None:
        """The globalDefault class; the lowest-valued one if several claim it (upstream's
        getDefaultPriorityClass tie-break)."""
        best: PriorityClassInfo | None = None
        for info in self._classes.values():
            if info.global_default and (best is None or info.value < best.value):
                best = info
        return best


def needs_priority(pod: Mapping[str, Any]) -> bool:
    """Whether admitting ``pod`` has to consult PriorityClasses at all."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return True
    return spec.get("priority") is None or bool(spec.get("priorityClassName"))


def admit_pod(
    pod: dict[str, Any], table: PriorityTable, key: str, source: str = ""
) -> dict[str, Any]:
    """Resolve ``pod``'s priority; returns ``pod`` or a copy with a new ``spec``.

    Raises InvalidObjectError naming the pod and ``spec.priorityClassName`` for an
    unknown class, ``spec.preemptionPolicy`` when it contradicts the class.
    """
    obj = f"Pod {key}"
    spec = pod.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise InvalidObjectError("spec must be a mapping", obj=obj, field="spec", source=source)
    class_name = spec.get("priorityClassName") or ""
    if not isinstance(class_name, str):
        raise InvalidObjectError(
            f"priorityClassName must be a string, got {class_name!r}",
            obj=obj,
            field="spec.priorityClassName",
            source=source,
        )
    info = table.get(class_name) if class_name else table.default()
    if class_name and info is None:
        raise InvalidObjectError(
            f"no PriorityClass with name {class_name} was found",
            obj=obj,
            field="spec.priorityClassName",
            source=source,
        )
    priority = spec.get("priority")
    if priority is not None:
        if not _is_int(priority):
            raise InvalidObjectError(
                f"priority must be an integer, got {priority!r}",
                obj=obj,
                field="spec.priority",
                source=source,
            )
        if not INT32_MIN <= priority <= INT32_MAX:
            raise InvalidObjectError(
                _int32_error(priority), obj=obj, field="spec.priority", source=source
            )
        return pod
    if info is None:
        return pod
    policy = spec.get("preemptionPolicy")
    if policy is not None and policy != info.preemption_policy:
        raise InvalidObjectError(
            f"the string value of PreemptionPolicy ({policy}) must not be provided in pod "
            f"spec; priority admission controller computed {info.preemption_policy} from "
            f"the given PriorityClass name",
            obj=obj,
            field="spec.preemptionPolicy",
            source=source,
        )
    new_spec = dict(spec)
    new_spec["priorityClassName"] = info.name
    new_spec["priority"] = info.value
    new_spec["preemptionPolicy"] = info.preemption_policy
    new = dict(pod)
    new["spec"] = new_spec
    return new
