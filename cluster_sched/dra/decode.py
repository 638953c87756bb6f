"""Decoding the resource.k8s.io/v1 kinds, with the API server's defaults and the
validation a bad manifest would meet there (one field named per error).

Fields of the DRA gates that are off in v1.35 (and cannot be turned on here:
``--feature-gates X=true`` is refused) are accepted and kept as far as v1.35's
scheduler reads them with those gates off. Its allocator (the "incubating" one of
k8s.io/dynamic-resource-allocation v0.35 that the default gates select) does not refuse
them; it reads them by fixed rules, which ``dra.pools``, ``dra.allocator`` and the
device-count pre-check (``dra.listers``) follow. So a store fed objects written by a
cluster with those gates on behaves as v1.35's scheduler with default gates:

- DRAPartitionableDevices: a slice with ``perDeviceNodeSelection`` or ``sharedCounters``
  is in no node's pools (GatherPools), yet counts toward its pool's
  ``resourceSliceCount`` and generation; a device with ``consumesCounters`` is matched
  by selectors but never allocated (allocateDevice), so an allocationMode All request
  that matches one fails on that node (``ResourceSlice.partitionable``,
  ``Device.consumes_counters``).
- DRADeviceBindingConditions: a device with ``bindingConditions`` is not selectable
  (isSelectable, before any selector runs: ``Device.binding_conditions``);
  ``bindsToNode`` changes nothing.
- DRAConsumableCapacity: ``allowMultipleAllocations``, a capacity's ``requestPolicy``
  and a request's ``capacity`` are ignored (a device goes whole to one claim); a
  ``distinctAttribute`` constraint is the allocator's "empty constraint (unsupported
  constraint type?)" error, which aborts the attempt: only matchAttribute is known.
- DRADeviceTaints: taints and tolerations are dropped; the allocator skips its taint
  check while the gate is off (upstream cases tainted-*-disabled allocate the device).
- DRAExtendedResource: a DeviceClass's ``extendedResourceName`` is ignored: the
  plugin's extended-resource path is off (the API server also drops it on write).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import cluster_sched.api._decode as d
from cluster_sched.api.quantity import exact_quantity
from cluster_sched.dra.objects import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    FIRST_AVAILABLE_MAX_SIZE,
    AllocationResult,
    AttributeValue,
    ClaimSpec,
    ConsumerRef,
    Device,
    DeviceClass,
    DeviceConfig,
    DeviceConstraint,
    DeviceRequest,
    DeviceResult,
    ExactRequest,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    Semver,
    qualified,
)
from cluster_sched.errors import InvalidObjectError, QuantityError

__all__ = [
    "decode_device_class",
    "decode_resource_claim",
    "decode_resource_claim_template",
    "decode_resource_slice",
    "parse_semver",
]

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def parse_semver(text: str) -> Semver | None:
    """A semantic version (semver 2.0.0), or None if ``text`` is not one."""
    m = _SEMVER.match(text)
    if m is None:
        return None
    pre: tuple[Any, ...] = ()
    if m.group(4):
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in m.group(4).split("."))
    # a release sorts after its pre-releases: an empty ``pre`` compares as greatest
    return Semver(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, text)


def _selectors(value: object, path: str) -> tuple[str, ...]:
    out = []
    for i, item in enumerate(d.seq(value, path)):
        sel = d.mapping(item, f"{path}[{i}]")
        cel = d.mapping(sel.get("cel"), f"{path}[{i}].cel")
        if not cel:
            raise InvalidObjectError("required value is missing", field=f"{path}[{i}].cel")
        out.append(d.required_string(cel.get("expression"), f"{path}[{i}].cel.expression"))
    return tuple(out)


def _configs(value: object, path: str, *, with_requests: bool) -> tuple[DeviceConfig, ...]:
    out = []
    for i, item in enumerate(d.seq(value, path)):
        cfg = d.mapping(item, f"{path}[{i}]")
        opaque = d.mapping(cfg.get("opaque"), f"{path}[{i}].opaque")
        if not opaque:
            raise InvalidObjectError("required value is missing", field=f"{path}[{i}].opaque")
        driver = d.required_string(opaque.get("driver"), f"{path}[{i}].opaque.driver")
        requests = d.string_list(cfg.get("requests"), f"{path}[{i}].requests")
        out.append(
            DeviceConfig(driver, opaque.get("parameters"), requests if with_requests else ())
        )
    return tuple(out)


def decode_device_class(doc: Mapping[str, Any]) -> DeviceClass:
    meta = d.object_meta(doc, namespaced=False)
    spec = d.mapping(doc.get("spec"), "spec")
    d.string(spec.get("extendedResourceName"), "spec.extendedResourceName")  # ignored
    return DeviceClass(
        meta=meta,
        selectors=_selectors(spec.get("selectors"), "spec.selectors"),
        config=_configs(spec.get("config"), "spec.config", with_requests=False),
        raw=doc,
    )


def _attribute(value: object, path: str) -> AttributeValue:
    attr = d.mapping(value, path)
    kinds = [k for k in ("bool", "int", "string", "version") if attr.get(k) is not None]
    if len(kinds) != 1:
        raise InvalidObjectError(
            "exactly one of bool, int, string or version must be set", field=path
        )
    kind = kinds[0]
    if kind == "bool":
        return d.boolean(attr["bool"], f"{path}.bool")
    if kind == "int":
        return d.integer(attr["int"], f"{path}.int") or 0
    if kind == "string":
        return d.string(attr["string"], f"{path}.string")
    text = d.string(attr["version"], f"{path}.version")
    version = parse_semver(text)
    if version is None:
        raise InvalidObjectError(
            f"must be a string compatible with semver.org spec 2.0.0, got {text!r}",
            field=f"{path}.version",
        )
    return version


def _device(value: object, path: str, driver: str, per_device: bool) -> Device:
    dev = d.mapping(value, path)
    name = d.required_string(dev.get("name"), f"{path}.name")
    attributes = {
        qualified(key, driver): _attribute(item, f"{path}.attributes.{key}")
        for key, item in d.mapping(dev.get("attributes"), f"{path}.attributes").items()
    }
    capacity: dict[str, Fraction] = {}
    for key, item in d.mapping(dev.get("capacity"), f"{path}.capacity").items():
        cap = d.mapping(item, f"{path}.capacity.{key}")
        if cap.get("value") is None:
            raise InvalidObjectError(
                "required value is missing", field=f"{path}.capacity.{key}.value"
            )
        try:
            amount = exact_quantity(cap["value"], resource=key)
        except QuantityError as err:
            raise QuantityError(err.reason, field=f"{path}.capacity.{key}.value") from None
        capacity[qualified(key, driver)] = Fraction(amount)
    d.boolean(dev.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations")
    d.boolean(dev.get("bindsToNode"), f"{path}.bindsToNode")
    _device_node_selection(dev, path, per_device)
    return Device(
        name=name,
        attributes=attributes,
        capacity=capacity,
        consumes_counters=bool(_counter_sets(dev, "consumesCounters", "counterSet", path)),
        binding_conditions=_binding_conditions(dev, path),
    )


def _counter_sets(obj: Mapping[str, Any], key: str, name_key: str, path: str) -> list[Any]:
    """``sharedCounters`` of a slice or ``consumesCounters`` of a device: each entry
    names its counter set and has counters."""
    items = d.seq(obj.get(key), f"{path}.{key}")
    for i, item in enumerate(items):
        entry = d.mapping(item, f"{path}.{key}[{i}]")
        d.required_string(entry.get(name_key), f"{path}.{key}[{i}].{name_key}")
        if not d.mapping(entry.get("counters"), f"{path}.{key}[{i}].counters"):
            raise InvalidObjectError(
                "required value is missing", field=f"{path}.{key}[{i}].counters"
            )
    return items


def _binding_conditions(dev: Mapping[str, Any], path: str) -> tuple[str, ...]:
    """upstream validateDeviceBindingParameters: both lists or neither."""
    conditions = d.string_list(dev.get("bindingConditions"), f"{path}.bindingConditions")
    failures = d.string_list(
        dev.get("bindingFailureConditions"), f"{path}.bindingFailureConditions"
    )
    if failures and not conditions:
        raise InvalidObjectError(
            "bindingConditions are required to use bindingFailureConditions",
            field=f"{path}.bindingConditions",
        )
    if conditions and not failures:
        raise InvalidObjectError(
            "bindingFailureConditions are required to use bindingConditions",
            field=f"{path}.bindingFailureConditions",
        )
    return conditions


def _device_node_selection(dev: Mapping[str, Any], path: str, per_device: bool) -> None:
    """A device's own nodeName / nodeSelector / allNodes: exactly one with the slice's
    perDeviceNodeSelection, none without (upstream validateDevice)."""
    node_name = d.string(dev.get("nodeName"), f"{path}.nodeName")
    d.node_selector(dev.get("nodeSelector"), f"{path}.nodeSelector")
    set_ = [bool(node_name), dev.get("nodeSelector") is not None]
    set_.append(d.boolean(dev.get("allNodes"), f"{path}.allNodes"))
    if per_device and sum(set_) != 1:
        raise InvalidObjectError(
            "exactly one of nodeName, nodeSelector or allNodes is required when "
            "perDeviceNodeSelection is set to true in the ResourceSlice spec",
            field=path,
        )
    if not per_device and any(set_):
        raise InvalidObjectError(
            "nodeName, nodeSelector and allNodes can only be set if perDeviceNodeSelection "
            "is set to true in the ResourceSlice spec",
            field=path,
        )


def decode_resource_slice(doc: Mapping[str, Any]) -> ResourceSlice:
    meta = d.object_meta(doc, namespaced=False)
    spec = d.mapping(doc.get("spec"), "spec")
    driver = d.required_string(spec.get("driver"), "spec.driver")
    pool = d.mapping(spec.get("pool"), "spec.pool")
    pool_name = d.required_string(pool.get("name"), "spec.pool.name")
    generation = d.integer(pool.get("generation"), "spec.pool.generation", 0) or 0
    count = d.integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount", 0) or 0
    if count < 1:
        raise InvalidObjectError(
            f"must be greater than or equal to 1, got {count}", field="spec.pool.resourceSliceCount"
        )
    node_name = d.string(spec.get("nodeName"), "spec.nodeName")
    raw_selector = spec.get("nodeSelector")
    all_nodes = d.boolean(spec.get("allNodes"), "spec.allNodes")
    per_device = d.boolean(spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection")
    if spec.get("perDeviceNodeSelection") is False:
        raise InvalidObjectError(
            "must be either unset or set to true", field="spec.perDeviceNodeSelection"
        )
    set_ = [bool(node_name), raw_selector is not None, all_nodes, per_device]
    if sum(set_) != 1:
        raise InvalidObjectError(
            "exactly one of nodeName, nodeSelector, allNodes or perDeviceNodeSelection must be set",
            field="spec",
        )
    devices = tuple(
        _device(item, f"spec.devices[{i}]", driver, per_device)
        for i, item in enumerate(d.seq(spec.get("devices"), "spec.devices"))
    )
    shared = _counter_sets(spec, "sharedCounters", "name", "spec")
    if shared and devices:
        raise InvalidObjectError("only one of sharedCounters or devices is allowed", field="spec")
    names = [dev.name for dev in devices]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InvalidObjectError(f"duplicate device name {dup!r}", field="spec.devices")
    if len(devices) > 128:
        raise InvalidObjectError(
            f"must have at most 128 items, got {len(devices)}", field="spec.devices"
        )
    return ResourceSlice(
        meta=meta,
        driver=driver,
        pool=pool_name,
        pool_generation=generation,
        resource_slice_count=count,
        node_name=node_name,
        node_selector=d.node_selector(raw_selector, "spec.nodeSelector"),
        node_selector_raw=raw_selector,
        all_nodes=all_nodes,
        devices=devices,
        partitionable=per_device or bool(shared),
        raw=doc,
    )


def _exact(value: Mapping[str, Any], path: str, name: str = "") -> ExactRequest:
    d.mapping(value.get("capacity"), f"{path}.capacity")  # ignored (consumable capacity)
    class_name = d.required_string(value.get("deviceClassName"), f"{path}.deviceClassName")
    mode = d.string(value.get("allocationMode"), f"{path}.allocationMode") or (
        ALLOCATION_MODE_EXACT_COUNT
    )
    if mode not in (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL):
        raise InvalidObjectError(
            f'supported values: "All", "ExactCount", got {mode!r}', field=f"{path}.allocationMode"
        )
    count = d.integer(value.get("count"), f"{path}.count")
    if mode == ALLOCATION_MODE_ALL and count is not None:
        raise InvalidObjectError(
            "must not be specified when allocationMode is All", field=f"{path}.count"
        )
    count = 1 if count is None else count
    if mode == ALLOCATION_MODE_EXACT_COUNT and count <= 0:
        raise InvalidObjectError(f"must be greater than zero, got {count}", field=f"{path}.count")
    return ExactRequest(
        device_class_name=class_name,
        selectors=_selectors(value.get("selectors"), f"{path}.selectors"),
        allocation_mode=mode,
        count=count,
        admin_access=d.boolean(value.get("adminAccess"), f"{path}.adminAccess"),
        name=name,
    )


def _request(value: object, path: str) -> DeviceRequest:
    req = d.mapping(value, path)
    name = d.required_string(req.get("name"), f"{path}.name")
    exactly = req.get("exactly")
    first = d.seq(req.get("firstAvailable"), f"{path}.firstAvailable")
    if (exactly is None) == (not first):
        raise InvalidObjectError("exactly one of exactly or firstAvailable must be set", field=path)
    if exactly is not None:
        return DeviceRequest(
            name, exactly=_exact(d.mapping(exactly, f"{path}.exactly"), f"{path}.exactly")
        )
    if len(first) > FIRST_AVAILABLE_MAX_SIZE:
        raise InvalidObjectError(
            f"must have at most {FIRST_AVAILABLE_MAX_SIZE} items", field=f"{path}.firstAvailable"
        )
    subs = []
    for i, item in enumerate(first):
        sub_path = f"{path}.firstAvailable[{i}]"
        sub = d.mapping(item, sub_path)
        sub_name = d.required_string(sub.get("name"), f"{sub_path}.name")
        if sub.get("adminAccess") is not None:
            raise InvalidObjectError(
                "field not declared in schema", field=f"{sub_path}.adminAccess"
            )
        subs.append(_exact(sub, sub_path, sub_name))
    return DeviceRequest(name, first_available=tuple(subs))


def claim_spec(value: object, path: str) -> ClaimSpec:
    spec = d.mapping(value, path)
    devices = d.mapping(spec.get("devices"), f"{path}.devices")
    rpath = f"{path}.devices.requests"
    requests = tuple(
        _request(item, f"{rpath}[{i}]")
        for i, item in enumerate(d.seq(devices.get("requests"), rpath))
    )
    names = [r.name for r in requests]
    if len(set(names)) != len(names):
        raise InvalidObjectError("duplicate request name", field=rpath)
    cpath = f"{path}.devices.constraints"
    constraints = []
    for i, item in enumerate(d.seq(devices.get("constraints"), cpath)):
        con = d.mapping(item, f"{cpath}[{i}]")
        attr = d.string(con.get("matchAttribute"), f"{cpath}[{i}].matchAttribute")
        distinct = d.string(con.get("distinctAttribute"), f"{cpath}[{i}].distinctAttribute")
        if bool(attr) == bool(distinct):
            raise InvalidObjectError(
                "exactly one of matchAttribute or distinctAttribute must be set",
                field=f"{cpath}[{i}]",
            )
        # distinctAttribute: kept as an empty constraint, which the allocator refuses
        if attr and "/" not in attr:
            raise InvalidObjectError(
                "a fully qualified attribute name (domain/id) is required",
                field=f"{cpath}[{i}].matchAttribute",
            )
        reqs = d.string_list(con.get("requests"), f"{cpath}[{i}].requests")
        constraints.append(DeviceConstraint(attr, reqs))
    return ClaimSpec(
        requests=requests,
        constraints=tuple(constraints),
        config=_configs(devices.get("config"), f"{path}.devices.config", with_requests=True),
    )


def _allocation(value: object, path: str) -> AllocationResult:
    alloc = d.mapping(value, path)
    devices = d.mapping(alloc.get("devices"), f"{path}.devices")
    rpath = f"{path}.devices.results"
    results = []
    for i, item in enumerate(d.seq(devices.get("results"), rpath)):
        res = d.mapping(item, f"{rpath}[{i}]")
        results.append(
            DeviceResult(
                request=d.required_string(res.get("request"), f"{rpath}[{i}].request"),
                driver=d.required_string(res.get("driver"), f"{rpath}[{i}].driver"),
                pool=d.required_string(res.get("pool"), f"{rpath}[{i}].pool"),
                device=d.required_string(res.get("device"), f"{rpath}[{i}].device"),
                admin_access=d.boolean(res.get("adminAccess"), f"{rpath}[{i}].adminAccess"),
            )
        )
    if len(results) > ALLOCATION_RESULTS_MAX_SIZE:
        raise InvalidObjectError(
            f"must have at most {ALLOCATION_RESULTS_MAX_SIZE} items", field=rpath
        )
    selector = alloc.get("nodeSelector")
    d.node_selector(selector, f"{path}.nodeSelector")
    return AllocationResult(devices=tuple(results), node_selector=selector)


def decode_resource_claim(doc: Mapping[str, Any]) -> ResourceClaim:
    meta = d.object_meta(doc, namespaced=True)
    spec = claim_spec(doc.get("spec"), "spec")
    status = d.mapping(doc.get("status"), "status")
    allocation = None
    node_selector = None
    if status.get("allocation") is not None:
        allocation = _allocation(status["allocation"], "status.allocation")
        node_selector = d.node_selector(allocation.node_selector, "status.allocation.nodeSelector")
    reserved = []
    for i, item in enumerate(d.seq(status.get("reservedFor"), "status.reservedFor")):
        ref = d.mapping(item, f"status.reservedFor[{i}]")
        reserved.append(
            ConsumerRef(
                resource=d.required_string(
                    ref.get("resource"), f"status.reservedFor[{i}].resource"
                ),
                name=d.required_string(ref.get("name"), f"status.reservedFor[{i}].name"),
                uid=d.required_string(ref.get("uid"), f"status.reservedFor[{i}].uid"),
                api_group=d.string(ref.get("apiGroup"), f"status.reservedFor[{i}].apiGroup"),
            )
        )
    if reserved and allocation is None:
        raise InvalidObjectError(
            "may not be set when the claim is not allocated", field="status.reservedFor"
        )
    return ResourceClaim(
        meta=meta,
        spec=spec,
        allocation=allocation,
        allocation_node_selector=node_selector,
        reserved_for=tuple(reserved),
        raw=doc,
    )


def decode_resource_claim_template(doc: Mapping[str, Any]) -> ResourceClaimTemplate:
    meta = d.object_meta(doc, namespaced=True)
    spec = d.mapping(doc.get("spec"), "spec")
    inner = d.mapping(spec.get("spec"), "spec.spec")
    return ResourceClaimTemplate(
        meta=meta,
        spec=claim_spec(inner, "spec.spec"),
        claim_spec_raw=inner,
        claim_meta_raw=d.mapping(spec.get("metadata"), "spec.metadata"),
        raw=doc,
    )
