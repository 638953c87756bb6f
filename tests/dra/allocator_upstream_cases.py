"""Builders and the allocation driver for upstream's allocator table (structured allocator_test.go), shared by the allocator test modules."""

from __future__ import annotations

from typing import Any

from cluster_sched.dra.allocator import Allocator
from tests.dra.dra_fixtures import DRIVER, claim, device_class, node, parse, resource_slice

A, B = "driver-a", "driver-b"


ADMIN_NS = {"resource.kubernetes.io/admin-access": "true"}


def mem(q: str) -> str:
    return f'device.capacity["{DRIVER}"].memory.compareTo(quantity("{q}")) >= 0'


def dev(name: str = "device-1", memory: str | None = None, **attrs: Any) -> dict[str, Any]:
    """A device; ``version=`` sets a version attribute ``driverVersion``."""
    out: dict[str, Any] = {"name": name}
    if memory is not None:
        out["capacity"] = {"memory": {"value": memory}}
    kinds = {bool: "bool", int: "int", str: "string"}
    values = {k: {kinds[type(v)]: v} for k, v in attrs.items() if k != "version"}
    if "version" in attrs:
        values["driverVersion"] = {"version": attrs["version"]}
    if values:
        out["attributes"] = values
    return out


def sl(
    pool: str = "pool-1", *devices: dict[str, Any], driver: str = A, **kw: Any
) -> dict[str, Any]:
    return resource_slice(f"s-{driver}-{pool}", list(devices), pool=pool, driver=driver, **kw)


def one(pool: str = "pool-1", driver: str = A, **kw: Any) -> dict[str, Any]:
    return sl(pool, dev(), driver=driver, **kw)


def exact(
    name: str = "req-0",
    cls: str = "class-a",
    count: int = 1,
    *sel: str,
    mode: str = "",
    admin: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": cls}
    if mode == "All":
        body["allocationMode"] = "All"
    else:
        body["count"] = count
    if sel:
        body["selectors"] = [{"cel": {"expression": e}} for e in sel]
    if admin:
        body["adminAccess"] = True
    return {"name": name, "exactly": body}


def GEN(value: str) -> str:
    return f'device.attributes["{DRIVER}"].generation == "{value}"'


def sub(name: str, cls: str, count: int = 1, *sel: str, mode: str = "") -> dict[str, Any]:
    out = exact(name, cls, count, *sel, mode=mode)["exactly"]
    return {"name": name, **out}


def first(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def cl(name: str = "claim-0", *reqs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return claim(name, *(reqs or (exact(),)), **kw)


def with_config(c: dict[str, Any], *configs: tuple[str, str, list[str]]) -> dict[str, Any]:
    c["spec"]["devices"]["config"] = [
        {"opaque": {"driver": d, "parameters": {attr: attr + "Value"}}}
        | ({"requests": reqs} if reqs else {})
        for d, attr, reqs in configs
    ]
    return c


def class_with_config(name: str, driver: str, attr: str) -> dict[str, Any]:
    c = device_class(name, driver)
    c["spec"]["config"] = [{"opaque": {"driver": driver, "parameters": {attr: attr + "Value"}}}]
    return c


def match(attr: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"matchAttribute": f"{A}/{attr}"}
    if requests:
        out["requests"] = list(requests)
    return out


def r(
    req: str, device: str = "device-1", pool: str = "pool-1", driver: str = A, admin: bool = False
) -> tuple[str, str, str, str, bool]:
    return (req, driver, pool, device, admin)


CA, CB = device_class("class-a", A), device_class("class-b", B)


REGION1 = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]}
    ]
}


EARTH = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "planet", "operator": "In", "values": ["earth"]}]}
    ]
}


LOCAL1 = {
    "nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
    ]
}


ATTRS = dict(version="1.0.0", numa=1, stringAttribute="stringAttributeValue", boolAttribute=True)


ONE_TWO = [dev("device-1"), dev("device-2")]


NUMA12 = [dev("device-1", numa=1), dev("device-2", numa=2)]


def _incomplete() -> dict[str, Any]:
    return one(count=2)


# (id, classes, slices, claims, options, expected)
CASES: list[tuple[str, list[Any], list[Any], list[Any], dict[str, Any], Any]] = [
    ("empty", [], [], [], {}, []),
    ("small-and-large-backtrack-claims", [CA],
     [sl("pool-1", dev("device-2", "2Gi"), dev("device-1", "1Gi"))],
     [cl("claim-0", exact("req-0", "class-a", 1, mem("1Gi"))),
      cl("claim-1", exact("req-1", "class-a", 1, mem("2Gi")))], {},
     [[r("req-0")], [r("req-1", "device-2")]]),
    ("devices-split-across-different-slices", [CA], [one("pool-1"), one("pool-2")],
     [cl("claim-0", exact("req-0", count=2))], {}, [[r("req-0"), r("req-0", pool="pool-2")]]),
    ("no-slices", [CA], [], [cl()], {}, None),
    ("not-enough-suitable-devices", [CA], [one()],
     [cl("claim-0", exact("req-0")), cl("claim-0", exact("req-1"))], {}, None),
    ("no-classes", [], [one()], [cl()], {}, "could not retrieve device class class-a"),
    ("unknown-class", [CA], [one()], [cl("claim-0", exact("req-0", "unknown-class"))], {},
     "could not retrieve device class unknown-class"),
    ("no-claims-to-allocate", [CA], [one()], [], {}, []),
    ("all-devices-single", [CA], [one()], [cl("claim-0", exact(mode="All"))], {},
     [[r("req-0")]]),
    ("all-devices-of-the-incomplete-pool", [CA], [_incomplete()],
     [cl("claim-0", exact(mode="All"))], {},
     "request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently "
     "being updated"),
    ("all-devices-plus-another", [CA, CB], [one(), one(driver=B)],
     [cl("claim-0", exact(mode="All")), cl("claim-1", exact("req-0", "class-b"))], {},
     [[r("req-0")], [r("req-0", driver=B)]]),
    ("all-devices-plus-another-reversed", [CA, CB], [one(), one(driver=B)],
     [cl("claim-1", exact("req-0", "class-b")), cl("claim-0", exact(mode="All"))], {},
     [[r("req-0", driver=B)], [r("req-0")]]),
    ("all-devices-many-plus-another", [CA, CB], [sl("pool-1", *ONE_TWO), one(driver=B)],
     [cl("claim-0", exact(mode="All")), cl("claim-1", exact("req-0", "class-b"))], {},
     [[r("req-0"), r("req-0", "device-2")], [r("req-0", driver=B)]]),
    ("all-devices-many-plus-another-reversed", [CA, CB],
     [sl("pool-1", *ONE_TWO), one(driver=B)],
     [cl("claim-1", exact("req-0", "class-b")), cl("claim-0", exact(mode="All"))], {},
     [[r("req-0", driver=B)], [r("req-0"), r("req-0", "device-2")]]),
    ("all-devices-no-solution", [CA], [one()],
     [cl("claim-1", exact()), cl("claim-0", exact(mode="All"))], {}, None),
    ("all-devices-no-solution-reversed", [CA], [one()],
     [cl("claim-0", exact(mode="All")), cl("claim-1", exact())], {}, None),
    ("all-devices-slice-without-devices", [CA], [sl("pool-1")],
     [cl("claim-0", exact(mode="All"))], {}, None),
    ("all-devices-no-slices", [CA], [], [cl("claim-0", exact(mode="All"))], {}, None),
    ("all-devices-some-allocated-admin-access", [CA], [sl("pool-1", *ONE_TWO)],
     [cl("claim-0", exact(mode="All", admin=True))],
     {"allocated": {(A, "pool-1", "device-1")}, "ns": ADMIN_NS},
     [[r("req-0", admin=True), r("req-0", "device-2", admin=True)]]),
    ("all-devices-some-allocating-admin-access", [CA], [sl("pool-1", *ONE_TWO)],
     [cl("claim-0", exact("req-0", admin=True), exact("req-1", mode="All", admin=True))],
     {"ns": ADMIN_NS}, None),
    ("count-devices-some-allocated-admin-access", [CA], [sl("pool-1", *ONE_TWO)],
     [cl("claim-0", exact("req-0", count=2, admin=True))],
     {"allocated": {(A, "pool-1", "device-1")}, "ns": ADMIN_NS},
     [[r("req-0", admin=True), r("req-0", "device-2", admin=True)]]),
    ("separate-claims-share-device-admin-access", [CA], [sl("pool-1", *ONE_TWO)],
     [cl("claim-0", exact(admin=True)), cl("claim-1", exact(admin=True))], {"ns": ADMIN_NS},
     [[r("req-0", admin=True)], [r("req-0", admin=True)]]),
    ("admin-access-claims-device-allocating-for-non-admin-access", [CA],
     [sl("pool-1", *ONE_TWO)], [cl("claim-0"), cl("claim-1", exact(admin=True))],
     {"ns": ADMIN_NS}, [[r("req-0")], [r("req-0", admin=True)]]),
    ("all-devices-slice-without-devices-prioritized-list", [CA, CB],
     [sl("pool-1"), one("pool-2", driver=B)],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"),
                          sub("subReq-1", "class-b")))], {},
     [[r("req-0/subReq-1", pool="pool-2", driver=B)]]),
    ("all-devices-no-slices-prioritized-list", [CA, CB], [one("pool-2", driver=B)],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"),
                          sub("subReq-1", "class-b")))], {},
     [[r("req-0/subReq-1", pool="pool-2", driver=B)]]),
    ("all-devices-some-allocated-prioritized-list", [CA, CB],
     [sl("pool-1", *ONE_TWO), one("pool-2", driver=B)],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"),
                          sub("subReq-1", "class-b")))],
     {"allocated": {(A, "pool-1", "device-1")}},
     [[r("req-0/subReq-1", pool="pool-2", driver=B)]]),
    ("unsuccessful-allocation-network-attached-device", [CA],
     [one(node_selector=REGION1)], [cl()], {"on": ("node-2", "region-2")}, None),
    ("local-and-network-attached-devices", [CA],
     [one("pool-1", node_selector=REGION1), one("pool-2")],
     [cl("claim-0", exact(count=2))], {"selector": LOCAL1},
     [[r("req-0"), r("req-0", pool="pool-2")]]),
    ("many-network-attached-devices", [CA],
     [one("pool-1", node_selector=REGION1), one("pool-2", all_nodes=True),
      one("pool-3", node_selector=EARTH), one("pool-4", node_selector=LOCAL1)],
     [cl("claim-0", exact(count=4))],
     {"selector": {"nodeSelectorTerms": [{
         "matchExpressions": REGION1["nodeSelectorTerms"][0]["matchExpressions"]
         + EARTH["nodeSelectorTerms"][0]["matchExpressions"],
         "matchFields": LOCAL1["nodeSelectorTerms"][0]["matchFields"]}]}},
     [[r("req-0"), r("req-0", pool="pool-2"), r("req-0", pool="pool-3"),
       r("req-0", pool="pool-4")]]),
    ("several-different-drivers", [CA, CB], [sl("pool-1", *ONE_TWO), one(driver=B)],
     [cl("claim-0", exact("req-0", "class-a")), cl("claim-0", exact("req-0", "class-b"))], {},
     [[r("req-0")], [r("req-0", driver=B)]]),
    ("admin-access-disabled", [CA], [one()], [cl("claim-0", exact(admin=True))],
     {"admin": False}, "claim default/claim-0, request req-0: admin access is requested, "
     "but the feature is disabled"),
    ("with-constraint", [CA],
     [sl("pool-1", dev("device-1", **ATTRS), dev("device-2", **ATTRS))],
     [cl("claim-0", exact("req-0"), exact("req-1"), constraints=[
         match("numa"), match("driverVersion"), match("stringAttribute"),
         match("boolAttribute")])], {},
     [[r("req-0"), r("req-1", "device-2")]]),
    ("with-constraint-non-existent-attribute", [CA], [one()],
     [cl("claim-0", exact(), constraints=[match("nonExistentAttribute")])], {}, None),
    ("with-constraint-not-matching-int-attribute-all-devices", [CA, CB], [sl("pool-1", *NUMA12)],
     [cl("claim-0", exact(mode="All"), constraints=[match("numa")])], {},
     "request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint "
     "would not be satisfied"),
    ("with-constraint-not-matching-string-attribute", [CA, CB],
     [sl("pool-1", dev("device-1", stringAttribute="stringAttributeValue"),
         dev("device-2", stringAttribute="stringAttributeValue2"))],
     [cl("claim-0", exact(count=2), constraints=[match("stringAttribute")])], {}, None),
    ("with-constraint-not-matching-bool-attribute", [CA, CB],
     [sl("pool-1", dev("device-1", boolAttribute=True), dev("device-2", boolAttribute=False))],
     [cl("claim-0", exact(count=2), constraints=[match("boolAttribute")])], {}, None),
    ("with-constraint-not-matching-version-attribute", [CA, CB],
     [sl("pool-1", dev("device-1", version="1.0.0"), dev("device-2", version="2.0.0"))],
     [cl("claim-0", exact(count=2), constraints=[match("driverVersion")])], {}, None),
    ("with-constraint-for-request", [CA, CB],
     [sl("pool-1", dev("device-1", version="1.0.0"), dev("device-2", version="2.0.0"))],
     [cl("claim-0", exact("req-0"), exact("req-1"),
         constraints=[match("driverVersion", "req-0")])], {},
     [[r("req-0"), r("req-1", "device-2")]]),
    ("with-constraint-for-request-retry", [CA, CB],
     [sl("pool-1", dev("device-1", version="1.0.0", stringAttribute="a"),
         dev("device-2", version="2.0.0", stringAttribute="b"),
         dev("device-3", version="3.0.0", stringAttribute="b"))],
     [cl("claim-0", exact("req-0"), exact("req-1"),
         constraints=[match("driverVersion", "req-0"), match("stringAttribute")])], {},
     [[r("req-0", "device-2"), r("req-1", "device-3")]]),
    ("invalid-CEL-one-device-class",
     [{**CA, "spec": {"selectors": [{"cel": {"expression": "noSuchVar"}}]}}], [one()], [cl()],
     {}, "undeclared reference"),
    ("invalid-CEL-all-devices", [CA], [one()],
     [cl("claim-0", exact("req-0", "class-a", 1, "noSuchVar", mode="All"))], {},
     "undeclared reference"),
    ("too-many-devices-total", [CA], [sl("pool-1", *(dev(f"device-{i}") for i in range(33)))],
     [cl("claim-0", exact("req-0", count=32), exact("req-1"))], {}, "exceeds the claim limit"),
    ("prioritized-list-non-available", [CA, CB], [one(), one("pool-2", driver=B)],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-b", 2),
                          sub("subReq-1", "class-a", 2)))], {}, None),
    ("prioritized-list-subrequests-with-expressions", [CA],
     [sl("pool-1", dev("device-1", "2Gi"), dev("device-2", "2Gi"), dev("device-3", "1Gi"))],
     [cl("claim-0", exact("req-0", "class-a", 1, mem("1Gi")),
         first("req-1", sub("subReq-0", "class-a", 1, mem("4Gi")),
               sub("subReq-1", "class-a", 2, mem("2Gi"))))], {},
     [[r("req-0", "device-3"), r("req-1/subReq-1"), r("req-1/subReq-1", "device-2")]]),
    ("prioritized-list-subrequests-with-constraints-ref-parent-request", [CA],
     [sl("pool-1", dev("device-1", "8Gi", version="1.0.0")),
      sl("pool-2", dev("device-2", "2Gi", version="2.0.0"), dev("device-3", "1Gi", version="1.0.0"))],
     [cl("claim-0", exact("req-0", "class-a", 1, mem("8Gi")),
         first("req-1", sub("subReq-0", "class-a", 1, mem("2Gi")),
               sub("subReq-1", "class-a", 1, mem("1Gi"))),
         constraints=[match("driverVersion", "req-0", "req-1")])], {},
     [[r("req-0"), r("req-1/subReq-1", "device-3", "pool-2")]]),
    ("prioritized-list-subrequests-with-constraints-ref-sub-request", [CA],
     [sl("pool-1", dev("device-1", "8Gi", version="1.0.0")),
      sl("pool-2", dev("device-2", "2Gi", version="2.0.0"))],
     [cl("claim-0", exact("req-0", "class-a", 1, mem("8Gi")),
         first("req-1", sub("subReq-0", "class-a", 1, mem("2Gi")),
               sub("subReq-1", "class-a", 1, mem("1Gi"))),
         constraints=[match("driverVersion", "req-0", "req-1/subReq-0")])], {},
     [[r("req-0"), r("req-1/subReq-1", "device-2", "pool-2")]]),
    ("prioritized-list-subrequests-with-allocation-mode-all", [CA], [sl("pool-1", *ONE_TWO)],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"),
                          sub("subReq-1", "class-a")))],
     {"allocated": {(A, "pool-1", "device-1")}}, [[r("req-0/subReq-1", "device-2")]]),
    ("prioritized-list-allocation-mode-all-multiple-requests", [CA], [sl("pool-1", *ONE_TWO)],
     [cl("claim-0", exact("req-0"), first("req-1", sub("subReq-0", "class-a", mode="All"),
                                           sub("subReq-1", "class-a")))], {},
     [[r("req-0"), r("req-1/subReq-1", "device-2")]]),
    ("prioritized-list-disabled", [CA], [one()],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a")))], {"prioritized": False},
     "claim default/claim-0, request req-0: has subrequests, but the DRAPrioritizedList "
     "feature is disabled"),
    ("prioritized-list-multi-request", [CA],
     [sl("pool-1", dev("device-1", "8Gi")), sl("pool-2", dev("device-2", "4Gi"))],
     [cl("claim-0", exact("req-1", "class-a", 1, mem("8Gi")),
         first("req-0", sub("subReq-0", "class-a", 1, mem("8Gi")),
               sub("subReq-1", "class-a", 1, mem("4Gi"))))], {},
     [[r("req-1"), r("req-0/subReq-1", "device-2", "pool-2")]]),
    ("prioritized-list-with-backtracking", [CA],
     [sl("pool-1", dev("device-1", "8Gi")), sl("pool-2", dev("device-2", "4Gi"))],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", 1, mem("8Gi")),
                          sub("subReq-1", "class-a", 1, mem("4Gi"))),
         exact("req-1", "class-a", 1, mem("8Gi")))], {},
     [[r("req-0/subReq-1", "device-2", "pool-2"), r("req-1")]]),
    ("prioritized-list-too-many-in-first-subrequest", [CA, CB], [one()],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-b", 500),
                          sub("subReq-1", "class-a")))], {},
     [[r("req-0/subReq-1")]]),
    ("prioritized-list-allocation-mode-all", [CA], [sl("pool-1", *ONE_TWO)],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"),
                          sub("subReq-1", "class-a")))],
     {"allocated": {(A, "pool-1", "device-2")}}, [[r("req-0/subReq-1")]]),
    ("prioritized-list-allocation-mode-all-with-selectors", [CA],
     [sl("pool-1", dev(generation="v5"))],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", 1, GEN("v6"), mode="All"),
                          sub("subReq-1", "class-a", 1, GEN("v5"), mode="All")))], {},
     [[r("req-0/subReq-1")]]),
    ("prioritized-list-allocation-mode-all-with-selectors-multiple-pools", [CA],
     [sl("pool-1", dev(generation="v5")), sl("pool-2", dev(generation="v5"))],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", 1, GEN("v6"), mode="All"),
                          sub("subReq-1", "class-a", 1, GEN("v5"), mode="All")))], {},
     [[r("req-0/subReq-1"), r("req-0/subReq-1", pool="pool-2")]]),
    ("prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes", [CA],
     [sl("pool-1", dev(generation="v5")),
      sl("pool-2", dev(generation="v5"), dev("device-2", generation="v6"), node="node-2")],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", 1, GEN("v6"), mode="All"),
                          sub("subReq-1", "class-a", 1, GEN("v5"), mode="All")))], {},
     [[r("req-0/subReq-1")]]),
    ("prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset",
     [device_class("class-a", A, f'device.attributes["{A}"].selected')],
     [sl("pool-1", dev(generation="v6", selected=False), dev("device-2", generation="v5",
         selected=False), dev("device-3", generation="v5", selected=True))],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", 1, GEN("v6"), mode="All"),
                          sub("subReq-1", "class-a", 1, GEN("v5"), mode="All")))], {},
     [[r("req-0/subReq-1", "device-3")]]),
    ("prioritized-list-max-allocation-limit-request", [CA],
     [sl("pool-1", *(dev(f"device-{i}") for i in range(64)))],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", 32), sub("subReq-1", "class-a", 16)),
         first("req-1", sub("subReq-0", "class-a", 32), sub("subReq-1", "class-a", 16)))], {},
     [[*(r("req-0/subReq-1", f"device-{i}") for i in range(16)),
       *(r("req-1/subReq-1", f"device-{i}") for i in range(16, 32))]]),
    ("prioritized-list-max-allocation-allocation-mode-all", [CA, CB],
     [sl("pool-1", *(dev(f"device-{i}") for i in range(31))),
      sl("pool-2", dev("device-0"), dev("device-1"), driver=B)],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", mode="All"),
                          sub("subReq-1", "class-a", 2)), exact("req-1", "class-b", 2))], {},
     [[r("req-0/subReq-1", "device-0"), r("req-0/subReq-1", "device-1"),
       r("req-1", "device-0", "pool-2", B), r("req-1", "device-1", "pool-2", B)]]),
]  # fmt: skip


CONFIG_CASES: list[tuple[str, list[Any], list[Any], list[Any], list[list[Any]]]] = [
    ("with-class-device-config", [class_with_config("class-a", A, "classAttribute")],
     [one()], [cl()], [[(A, {"classAttribute": "classAttributeValue"}, ("req-0",), "FromClass")]]),
    ("with-class-device-config-with-multiple-request-and-configs",
     [class_with_config("class-a", A, "classAttribute-A"),
      class_with_config("class-b", B, "classAttribute-B")],
     [sl("pool-1", dev("device-0"), dev("device-1")), one(driver=B)],
     [cl("claim-0", exact("req-0"), exact("req-1"), exact("req-2", "class-b"))],
     [[(A, {"classAttribute-A": "classAttribute-AValue"}, ("req-0", "req-1"), "FromClass"),
       (B, {"classAttribute-B": "classAttribute-BValue"}, ("req-2",), "FromClass")]]),
    ("claim-with-device-config", [CA], [one()],
     [with_config(cl(), (A, "deviceAttribute", []))],
     [[(A, {"deviceAttribute": "deviceAttributeValue"}, (), "FromClaim")]]),
    ("prioritized-list-device-config", [CA, CB], [sl("pool-1", *ONE_TWO, driver=B)],
     [with_config(cl("claim-0", first("req-0", sub("subReq-0", "class-a"),
                                      sub("subReq-1", "class-b", 2))),
                  (A, "foo", ["req-0/subReq-0"]), (B, "bar", ["req-0/subReq-1"]))],
     [[(B, {"bar": "barValue"}, ("req-0/subReq-1",), "FromClaim")]]),
    ("prioritized-list-class-config", [class_with_config("class-a", A, "foo"),
                                       class_with_config("class-b", B, "bar")],
     [sl("pool-1", *ONE_TWO, driver=B), sl("pool-2", dev("device-3"))],
     [cl("claim-0", first("req-0", sub("subReq-0", "class-a", 2),
                          sub("subReq-1", "class-b", 2)))],
     [[(B, {"bar": "barValue"}, ("req-0/subReq-1",), "FromClass")]]),
]  # fmt: skip


def _allocator(classes: list[Any], slices: list[Any], opts: dict[str, Any]) -> Allocator:
    allocated = opts.get("allocated", set())
    return Allocator(
        {c.name: c for c in map(parse, classes)},
        [parse(s) for s in slices],
        allocated.__contains__,
        lambda ns: opts.get("ns", {}),
        admin_access=opts.get("admin", True),
        prioritized_list=opts.get("prioritized", True),
    )


def _allocate(
    classes: list[Any], slices: list[Any], claims: list[Any], opts: dict[str, Any]
) -> Any:
    alloc = _allocator(classes, slices, opts)
    parsed = [parse(c) for c in claims]
    alloc.validate(parsed)
    name, region = opts.get("on", ("node-1", "region-1"))
    return alloc.allocate(parse(node(name, region=region, planet="earth")), parsed)
