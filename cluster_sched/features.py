"""Feature gates: upstream's names and kube-scheduler v1.35 defaults, set as upstream's
``--feature-gates Name=true,Name2=false``.

Users compare versions and behaviours by switching gates, so the names, defaults and
lock rules are upstream's (``pkg/features/kube_features.go``): a gate that graduated to
GA and is locked to its default refuses the other value, an unknown name is an error.
Only gates whose behaviour the project models are listed; the README lists them too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cluster_sched.errors import UsageError

__all__ = [
    "ASYNC_PREEMPTION",
    "DRA_ADMIN_ACCESS",
    "DRA_PRIORITIZED_LIST",
    "DRA_RESOURCE_CLAIM_DEVICE_STATUS",
    "DRA_SCHEDULER_FILTER_TIMEOUT",
    "DYNAMIC_RESOURCE_ALLOCATION",
    "GATES",
    "NOMINATED_NODE_NAME_FOR_EXPECTATION",
    "OPPORTUNISTIC_BATCHING",
    "POP_FROM_BACKOFF_Q",
    "QUEUEING_HINTS",
    "FeatureGateError",
    "FeatureGates",
    "GateSpec",
    "parse_feature_gates",
]

QUEUEING_HINTS = "SchedulerQueueingHints"
POP_FROM_BACKOFF_Q = "SchedulerPopFromBackoffQ"
ASYNC_PREEMPTION = "SchedulerAsyncPreemption"
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
NOMINATED_NODE_NAME_FOR_EXPECTATION = "NominatedNodeNameForExpectation"
DYNAMIC_RESOURCE_ALLOCATION = "DynamicResourceAllocation"
DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
DRA_ADMIN_ACCESS = "DRAAdminAccess"
DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
DRA_SCHEDULER_FILTER_TIMEOUT = "DRASchedulerFilterTimeout"


@dataclass(frozen=True, slots=True)
class GateSpec:
    """One gate as upstream's versioned spec gives it for v1.35."""

    name: str
    default: bool
    stage: str  # "ALPHA", "BETA" or "GA"
    since: str
    #: GA gates locked to their default refuse the other value, as upstream does.
    locked: bool = False
    summary: str = ""
    #: False: only the default value is modelled (an alpha gate whose behaviour
    #: cluster-sched does not implement); the other value is refused, not ignored.
    modelled: bool = True


GATES: dict[str, GateSpec] = {
    g.name: g
    for g in (
        GateSpec(
            QUEUEING_HINTS,
            True,
            "GA",
            "1.34",
            locked=True,
            summary="requeue decisions per plugin and event (QueueingHintFn)",
        ),
        GateSpec(
            POP_FROM_BACKOFF_Q,
            True,
            "BETA",
            "1.33",
            summary="with activeQ empty, pop from backoffQ before the backoff expires",
        ),
        GateSpec(
            ASYNC_PREEMPTION,
            True,
            "BETA",
            "1.33",
            summary="victims deleted off the scheduling cycle; the preemptor waits at PreEnqueue",
        ),
        GateSpec(
            OPPORTUNISTIC_BATCHING,
            True,
            "BETA",
            "1.35",
            summary="pods with the same signature reuse the previous pod's sorted node list",
        ),
        GateSpec(
            NOMINATED_NODE_NAME_FOR_EXPECTATION,
            True,
            "BETA",
            "1.35",
            summary="nominatedNodeName set on pods whose binding is in progress",
        ),
        GateSpec(
            DYNAMIC_RESOURCE_ALLOCATION,
            True,
            "GA",
            "1.34",
            locked=True,
            summary="DeviceClasses, ResourceSlices, ResourceClaims; the DynamicResources plugin",
        ),
        GateSpec(
            DRA_PRIORITIZED_LIST,
            True,
            "BETA",
            "1.34",
            summary="firstAvailable device requests (off: refused at PreFilter)",
        ),
        GateSpec(
            DRA_ADMIN_ACCESS,
            True,
            "BETA",
            "1.34",
            summary="adminAccess device requests (off: the allocator refuses them)",
        ),
        GateSpec(
            DRA_RESOURCE_CLAIM_DEVICE_STATUS,
            True,
            "BETA",
            "1.33",
            summary="status.devices of claims (written by drivers; no scheduler decision)",
        ),
        GateSpec(
            DRA_SCHEDULER_FILTER_TIMEOUT,
            True,
            "BETA",
            "1.34",
            summary="DynamicResources' Filter gives up on a node after filterTimeout",
        ),
        *(
            GateSpec(name, False, "ALPHA", since, modelled=False, summary=summary)
            for name, since, summary in (
                ("DRAPartitionableDevices", "1.33", "devices consuming shared counters"),
                ("DRADeviceTaints", "1.33", "device taints and tolerations"),
                ("DRADeviceTaintRules", "1.35", "DeviceTaintRule objects"),
                ("DRAConsumableCapacity", "1.34", "devices shared by consumed capacity"),
                ("DRAExtendedResource", "1.34", "extended resources backed by DRA"),
                ("DRADeviceBindingConditions", "1.34", "PreBind waits for binding conditions"),
            )
        ),
    )
}


class FeatureGateError(UsageError):
    """A ``--feature-gates`` value upstream would refuse; the message is one line."""


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The effective gates of one scheduler: v1.35 defaults overridden by the user's."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        if name not in GATES:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        return self.overrides.get(name, GATES[name].default)

    def as_dict(self) -> dict[str, bool]:
        """Every modelled gate with its effective value (recorded with a run's config)."""
        return {name: self.enabled(name) for name in sorted(GATES)}

    def with_overrides(self, more: Mapping[str, bool]) -> FeatureGates:
        return FeatureGates({**self.overrides, **_checked(more.items())})


def _checked(items: Iterable[tuple[str, bool]]) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for name, value in items:
        spec = GATES.get(name)
        if spec is None:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        if spec.locked and value != spec.default:
            raise FeatureGateError(
                f"cannot set feature gate {name} to {str(value).lower()}, "
                f"feature is locked to {str(spec.default).lower()}"
            )
        if not spec.modelled and value != spec.default:
            raise FeatureGateError(
                f"feature gate {name}={str(value).lower()} is not modelled by cluster-sched "
                f"({spec.stage.lower()} in v1.35, {'on' if spec.default else 'off'} by default)"
            )
        out[name] = value
    return out


def parse_feature_gates(text: str | None) -> FeatureGates:
    """``Name=true,Name2=false`` (upstream's flag syntax; empty or None: defaults)."""
    pairs: list[tuple[str, bool]] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, raw = part.partition("=")
        name, raw = name.strip(), raw.strip().lower()
        if not sep or raw not in ("true", "false"):
            raise FeatureGateError(
                f"invalid value of {part!r} in --feature-gates: want Name=true or Name=false"
            )
        pairs.append((name, raw == "true"))
    return FeatureGates(_checked(pairs))
