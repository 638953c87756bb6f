"""The four resource.k8s.io/v1 kinds as typed immutable values: DeviceClass,
ResourceSlice, ResourceClaim and ResourceClaimTemplate (decoders in ``dra.decode``).

Only what the scheduler reads is kept; ``raw`` is the manifest itself. Attribute and
capacity names are stored fully qualified (``domain/id``): an unqualified name in a
slice belongs to the driver's own domain, as upstream's ``parseQualifiedName`` says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cluster_sched.api.objects import NodeSelector, ObjectMeta

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "DRA_API_VERSION",
    "AllocationResult",
    "AttributeValue",
    "ClaimSpec",
    "ConsumerRef",
    "Device",
    "DeviceClass",
    "DeviceConfig",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceResult",
    "ExactRequest",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "Semver",
    "qualified",
]

DRA_API_VERSION = "resource.k8s.io/v1"
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
#: resource/v1 AllocationResultsMaxSize: at most this many devices per claim.
ALLOCATION_RESULTS_MAX_SIZE = 32
#: resource/v1 FirstAvailableDeviceRequestMaxSize: the Score of a prioritized list.
FIRST_AVAILABLE_MAX_SIZE = 8
#: resource/v1 ResourceClaimReservedForMaxSize.
RESERVED_FOR_MAX_SIZE = 256
#: The finalizer PreBind adds (resource.kubernetes.io/delete-protection).
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
#: The namespace label that lets claims in it ask for admin access.
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


@dataclass(frozen=True, slots=True, order=True)
class Semver:
    """A version attribute (``version: "1.2.3"``), compared by semver precedence."""

    major: int
    minor: int
    patch: int
    pre: tuple[Any, ...] = ()
    text: str = field(default="", compare=False)


#: bool, int, string or version, as a device attribute holds exactly one of them.
AttributeValue = bool | int | str | Semver


def qualified(name: str, driver: str) -> str:
    """``domain/id`` of an attribute or capacity name (unqualified: the driver's domain)."""
    return name if "/" in name else f"{driver}/{name}"


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    """An opaque driver configuration (``opaque: {driver, parameters}``) for some
    requests (empty: all); the allocator copies it into the allocation result."""

    driver: str
    parameters: Any
    requests: tuple[str, ...] = ()
    source: str = "FromClaim"


@dataclass(frozen=True, slots=True)
class DeviceClass:
    meta: ObjectMeta
    selectors: tuple[str, ...] = ()
    config: tuple[DeviceConfig, ...] = ()
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    #: qualified name -> value
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    #: qualified name -> exact quantity
    capacity: Mapping[str, Fraction] = field(default_factory=dict)
    #: ``consumesCounters`` is set (DRAPartitionableDevices, off): the allocator's
    #: selectors still look at the device, but it is never allocated
    consumes_counters: bool = False
    #: ``bindingConditions`` (DRADeviceBindingConditions, off): non-empty, the device
    #: is not selectable at all (no selector is evaluated on it)
    binding_conditions: tuple[str, ...] = ()

    @property
    def selectable(self) -> bool:
        """upstream isSelectable's gate check, before any selector: a device with
        binding conditions is not a candidate while DRADeviceBindingConditions is off."""
        return not self.binding_conditions


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    meta: ObjectMeta
    driver: str
    pool: str
    pool_generation: int
    resource_slice_count: int
    #: exactly one of node_name / node_selector / all_nodes is set (validated)
    node_name: str = ""
    node_selector: NodeSelector | None = None
    node_selector_raw: Mapping[str, Any] | None = None
    all_nodes: bool = False
    devices: tuple[Device, ...] = ()
    #: ``perDeviceNodeSelection`` or ``sharedCounters`` is set (DRAPartitionableDevices,
    #: off): upstream GatherPools leaves the slice out of every node's pools, though it
    #: still counts toward its pool's resourceSliceCount and generation
    partitionable: bool = False
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class ExactRequest:
    """``exactly`` or one ``firstAvailable`` entry (a subrequest, with its ``name``)."""

    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    name: str = ""


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None = None
    first_available: tuple[ExactRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    """``matchAttribute`` over ``requests`` (empty: every request of the claim)."""

    match_attribute: str
    requests: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """One allocated device: ``request`` is ``req`` or ``req/subreq``."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class AllocationResult:
    devices: tuple[DeviceResult, ...] = ()
    config: tuple[DeviceConfig, ...] = ()
    #: the v1 NodeSelector manifest (None: available on every node)
    node_selector: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ConsumerRef:
    resource: str
    name: str
    uid: str
    api_group: str = ""


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    meta: ObjectMeta
    spec: ClaimSpec
    allocation: AllocationResult | None = None
    #: the allocation's node selector, decoded (for Filter)
    allocation_node_selector: NodeSelector | None = None
    reserved_for: tuple[ConsumerRef, ...] = ()
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def key(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}"


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    meta: ObjectMeta
    spec: ClaimSpec
    #: the template's spec.spec manifest and its metadata, copied into each claim
    claim_spec_raw: Mapping[str, Any] = field(default_factory=dict)
    claim_meta_raw: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.meta.name
