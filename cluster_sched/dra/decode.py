"""Decoding the resource.k8s.io/v1 kinds, with the API server's defaults and the
validation a bad manifest would meet there (one field named per error).

Gated fields the scheduler does not model with v1.35's default gates (partitionable
devices' counters, consumable capacity, binding conditions) are refused with an error
naming the field and the gate, rather than silently ignored. Device taints and request
tolerations (DRADeviceTaints, off) are dropped instead, as upstream's API server drops
them on write while the gate is off: the allocator never sees them (upstream plugin case
tainted-device-disabled: a tainted device is allocated).
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
#: Gated fields refused (their gate is off by default in v1.35 and not modelled here).
_GATED = {
    "consumesCounters": "DRAPartitionableDevices",
    "sharedCounters": "DRAPartitionableDevices",
    "perDeviceNodeSelection": "DRAPartitionableDevices",
    "allowMultipleAllocations": "DRAConsumableCapacity",
    "bindingConditions": "DRADeviceBindingConditions",
    "bindingFailureConditions": "DRADeviceBindingConditions",
    "bindsToNode": "DRADeviceBindingConditions",
    "capacity": "DRAConsumableCapacity",
    "distinctAttribute": "DRAConsumableCapacity",
    "extendedResourceName": "DRAExtendedResource",
}


_DEVICE_GATED = (
    "consumesCounters",
    "allowMultipleAllocations",
    "bindingConditions",
    "bindingFailureConditions",
    "bindsToNode",
)


def _gated(obj: Mapping[str, Any], names: tuple[str, ...], path: str) -> None:
    for name in names:
        if obj.get(name) not in (None, [], {}):
            raise InvalidObjectError(
                f"needs the {_GATED[name]} feature gate, which is off in v1.35 and not "
                "modelled by cluster-sched",
                field=f"{path}.{name}",
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
    _gated(spec, ("extendedResourceName",), "spec")
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


def _device(value: object, path: str, driver: str) -> Device:
    dev = d.mapping(value, path)
    _gated(
        dev,
        _DEVICE_GATED,
        path,
    )
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
    return Device(name=name, attributes=attributes, capacity=capacity)


def decode_resource_slice(doc: Mapping[str, Any]) -> ResourceSlice:
    meta = d.object_meta(doc, namespaced=False)
    spec = d.mapping(doc.get("spec"), "spec")
    _gated(spec, ("sharedCounters", "perDeviceNodeSelection"), "spec")
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
    set_ = [bool(node_name), raw_selector is not None, all_nodes]
    if sum(set_) != 1:
        raise InvalidObjectError(
            "exactly one of nodeName, nodeSelector or allNodes must be set", field="spec"
        )
    devices = tuple(
        _device(item, f"spec.devices[{i}]", driver)
        for i, item in enumerate(d.seq(spec.get("devices"), "spec.devices"))
    )
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
        raw=doc,
    )


def _exact(value: Mapping[str, Any], path: str, name: str = "") -> ExactRequest:
    _gated(value, ("capacity",), path)
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
        _gated(con, ("distinctAttribute",), f"{cpath}[{i}]")
        attr = d.required_string(con.get("matchAttribute"), f"{cpath}[{i}].matchAttribute")
        if "/" not in attr:
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
