"""The resource.k8s.io/v1 kinds: decoded with the API server's checks, and a bad one is
one line naming file, object and field, exit code 2 from the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.api.manifest import parse_object
from cluster_sched.cli import main
from cluster_sched.dra.objects import DeviceClass, ResourceClaim, ResourceSlice
from cluster_sched.errors import InvalidObjectError
from tests.dra.dra_fixtures import claim, device, device_class, node, request, resource_slice


def test_slice_names_are_qualified_in_the_drivers_domain() -> None:
    s = parse_object(
        resource_slice(
            "s",
            [
                {
                    **device("d", model="a"),
                    "attributes": {
                        "model": {"string": "a"},
                        "other.io/x": {"int": 3},
                        "v": {"version": "1.2.3-rc.1"},
                    },
                }
            ],
        )
    )
    assert isinstance(s, ResourceSlice)
    attrs = s.devices[0].attributes
    assert attrs["driver-a/model"] == "a" and attrs["other.io/x"] == 3
    assert str(getattr(attrs["driver-a/v"], "text", "")) == "1.2.3-rc.1"


def test_claim_and_class_decode() -> None:
    c = parse_object(claim("c", request("r", "cls", 2)))
    assert isinstance(c, ResourceClaim) and c.key == "default/c"
    assert c.spec.requests[0].exactly is not None and c.spec.requests[0].exactly.count == 2
    assert isinstance(parse_object(device_class()), DeviceClass)


def _slice(**spec: Any) -> dict[str, Any]:
    doc = resource_slice("s", [device("d")])
    doc["spec"].update(spec)
    return doc


@pytest.mark.parametrize(
    ("doc", "field", "needle"),
    [
        pytest.param(_slice(allNodes=True), "spec", "exactly one of nodeName", id="two-node-selections"),
        pytest.param(_slice(pool={"name": "p", "generation": 1, "resourceSliceCount": 0}),
                     "spec.pool.resourceSliceCount", "greater than or equal to 1", id="slice-count"),
        pytest.param(_slice(devices=[device("d"), device("d")]), "spec.devices", "duplicate device name", id="dup-device"),
        pytest.param(_slice(devices=[{"name": "d", "attributes": {"x": {"int": 1, "string": "a"}}}]),
                     "spec.devices[0].attributes.x", "exactly one of bool", id="two-values"),
        pytest.param(_slice(devices=[{"name": "d", "attributes": {"v": {"version": "1.2"}}}]),
                     "spec.devices[0].attributes.v.version", "semver", id="bad-version"),
        pytest.param(_slice(devices=[{"name": "d", "capacity": {"memory": {"value": "1Gx"}}}]),
                     "spec.devices[0].capacity.memory.value", "", id="bad-quantity"),
        pytest.param(_slice(devices=[{"name": "d", "consumesCounters": [{"counterSet": "x"}]}]),
                     "spec.devices[0].consumesCounters[0].counters", "required", id="counters-missing"),
        pytest.param(_slice(devices=[{"name": "d", "bindingFailureConditions": ["Failed"]}]),
                     "spec.devices[0].bindingConditions", "bindingConditions are required", id="failure-only"),
        pytest.param(_slice(devices=[{"name": "d", "bindingConditions": ["Ready"]}]),
                     "spec.devices[0].bindingFailureConditions", "bindingFailureConditions are required",
                     id="conditions-only"),
        pytest.param(_slice(perDeviceNodeSelection=False), "spec.perDeviceNodeSelection",
                     "unset or set to true", id="per-device-false"),
        pytest.param(_slice(nodeName=None, perDeviceNodeSelection=True), "spec.devices[0]",
                     "exactly one of nodeName, nodeSelector or allNodes", id="per-device-no-node"),
        pytest.param(_slice(devices=[{"name": "d", "nodeName": "node-1"}]), "spec.devices[0]",
                     "only be set if perDeviceNodeSelection", id="device-node-without-per-device"),
        pytest.param(_slice(sharedCounters=[{"name": "cs", "counters": {"mem": {"value": "1"}}}]),
                     "spec", "only one of sharedCounters or devices", id="counters-and-devices"),
        pytest.param(claim("c", constraints=[{"matchAttribute": "a.io/x", "distinctAttribute": "a.io/y"}]),
                     "spec.devices.constraints[0]", "exactly one of matchAttribute or distinctAttribute",
                     id="two-constraint-kinds"),
        pytest.param(claim("c", {"name": "r"}), "spec.devices.requests[0]", "exactly one of exactly", id="no-request-kind"),
        pytest.param(claim("c", request("r", "cls", 0)), "spec.devices.requests[0].exactly.count", "greater than zero", id="count-zero"),
        pytest.param(claim("c", request("r", "cls", mode="Some")), "spec.devices.requests[0].exactly.allocationMode", "supported values", id="bad-mode"),
        pytest.param(claim("c", constraints=[{"matchAttribute": "numa"}]), "spec.devices.constraints[0].matchAttribute", "fully qualified", id="unqualified-constraint"),
    ],
)  # fmt: skip
def test_bad_objects_name_the_field(doc: dict[str, Any], field: str, needle: str) -> None:
    with pytest.raises(InvalidObjectError) as err:
        parse_object(doc, source="cluster.yaml")
    assert err.value.field == field
    assert needle in err.value.reason
    assert "\n" not in str(err.value) and str(err.value).startswith("cluster.yaml: ")


def test_bad_slice_in_explain_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.yaml"
    bad = _slice(allNodes=True)
    cluster.write_text(yaml.safe_dump_all([node(), device_class(), bad]))
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            }
        )
    )
    rc = main(["explain", "--cluster", str(cluster), "--pod", str(pod)])
    _, err = capsys.readouterr()
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "cluster.yaml" in lines[0] and "ResourceSlice s" in lines[0] and "field spec" in lines[0]


def test_pod_resource_claims_need_one_source() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "resourceClaims": [
                {"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}
            ],
        },
    }
    with pytest.raises(InvalidObjectError) as err:
        parse_object(doc)
    assert err.value.field == "spec.resourceClaims[0]"


COUNTERS = [{"counterSet": "cs", "counters": {"mem": {"value": "4Gi"}}}]


def test_gated_fields_decode_as_the_gate_off_scheduler_reads_them() -> None:
    """The fields of the gates v1.35 leaves off are accepted, not refused (they used to
    be an error naming the gate): what the allocator's gate-off rules need is kept,
    the rest is ignored (dra.decode's docstring)."""
    s = parse_object(
        _slice(
            devices=[
                {"name": "counters", "consumesCounters": COUNTERS},
                {
                    "name": "bound",
                    "bindingConditions": ["Ready"],
                    "bindingFailureConditions": ["F"],
                },
                {"name": "taint", "taints": [{"key": "k", "effect": "NoSchedule"}]},
                {"name": "shared", "allowMultipleAllocations": True, "bindsToNode": True},
            ]
        )
    )
    assert isinstance(s, ResourceSlice) and not s.partitionable
    got = [(d.name, d.consumes_counters, d.binding_conditions, d.selectable) for d in s.devices]
    assert got == [
        ("counters", True, (), True),
        ("bound", False, ("Ready",), False),
        ("taint", False, (), True),
        ("shared", False, (), True),
    ]
    shared = _slice(
        devices=None, sharedCounters=[{"name": "cs", "counters": {"m": {"value": "1"}}}]
    )
    per_device = _slice(nodeName=None, perDeviceNodeSelection=True)
    per_device["spec"]["devices"] = [{"name": "d", "nodeName": "node-1"}]
    assert [parse_object(doc).partitionable for doc in (shared, per_device)] == [True, True]
    cls = device_class()
    cls["spec"]["extendedResourceName"] = "example.com/gpu"
    assert isinstance(parse_object(cls), DeviceClass)
    req = request("r", "cls", 1)
    req["exactly"]["capacity"] = {"requests": {"memory": "1Gi"}}
    c = parse_object(claim("c", req, constraints=[{"distinctAttribute": "a.io/x"}]))
    assert isinstance(c, ResourceClaim)
    # an empty constraint: the allocator's "unsupported constraint type" error
    assert [k.match_attribute for k in c.spec.constraints] == [""]
