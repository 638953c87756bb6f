"""Unknown fields, judged by Kubernetes' own schemas (v1.35 and the newest shipped)."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.api import schema


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


@pytest.mark.parametrize(
    ("doc", "unknown"),
    [
        (pod(nodeSelecter={"a": "b"}), ["spec.nodeSelecter"]),
        (pod(nodeSelector={"a": "b"}), []),
        (
            pod(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpresions": []}]
                        }
                    }
                }
            ),
            [
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms[0].matchExpresions"
            ],
        ),
        (pod(containers=[{"name": "c", "resorces": {}}]), ["spec.containers[0].resorces"]),
        # known to Kubernetes, not modelled by the scheduler: accepted
        (pod(dnsPolicy="ClusterFirst", securityContext={"runAsUser": 1}, hostAliases=[]), []),
        (
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "labels": {"any/key": "v"}},
                "spec": {"template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}},
                "status": {"replicas": 1, "readyReplica": 1},
            },
            ["spec.template.spec.containers[0].imagee", "status.readyReplica"],
        ),
    ],
    ids=["typo", "spelled-right", "nested-in-lists", "container", "unmodelled-known", "deployment"],
)
def test_unknown_fields(doc: dict[str, Any], unknown: list[str]) -> None:
    assert schema.unknown_fields(doc) == unknown


def test_free_form_parts_are_not_judged() -> None:
    doc = pod()
    doc["metadata"]["managedFields"] = [
        {"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:whatever": {}}}}
    ]
    doc["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    doc["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "example.com/gpu": "2"}}
    assert schema.unknown_fields(doc) == []


def test_kinds_without_a_schema_are_not_judged() -> None:
    assert not schema.has_schema("example.com/v1", "Widget")
    assert schema.unknown_fields({"apiVersion": "example.com/v1", "kind": "Widget", "x": 1}) == []
    assert schema.has_schema("batch/v1", "Job") and schema.has_schema("v1", "Pod")


def test_at_most_a_few_fields_are_listed() -> None:
    doc = pod(**{f"typo{i}": 1 for i in range(20)})
    assert len(schema.unknown_fields(doc)) == schema.MAX_REPORTED


def test_versions_start_at_the_schedulers_and_a_newer_field_is_known() -> None:
    versions = schema.schema_versions()
    assert versions[0] == schema.SCHEMA_VERSION == "1.35"
    # v1.35's workloadRef (dropped later) and v1.37's schedulingGroup are both fields
    # Kubernetes knows; a name no version has is a typo.
    assert schema.unknown_fields(pod(workloadRef={"name": "w"})) == []
    assert len(versions) == 2
    assert schema.unknown_fields(pod(schedulingGroup={})) == []
    assert schema.unknown_fields(pod(nodeSelecter={})) == ["spec.nodeSelecter"]
