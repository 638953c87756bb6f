"""Manifest loading: documents, kinds, API-server defaults and errors that name the file,
the object and the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import (
    load_documents,
    load_file,
    parse_node,
    parse_object,
    parse_pod,
    parse_workload_controller,
)
from cluster_sched.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    WorkloadController,
)
from cluster_sched.api.requests import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from cluster_sched.errors import InvalidObjectError, QuantityError

GI, MI = 2**30, 2**20


def pod_doc(name: str = "web-1", **spec: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ]
        },
    }
    doc["spec"].update(spec)
    return doc


NODE_YAML = """\
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: z1}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: 7500m, memory: 30Gi, pods: 110}
  images: [{names: [nginx, "nginx:1.25"], sizeBytes: 1000}]
"""


# --- documents -------------------------------------------------------------------------------


def test_multi_document_yaml_skips_empty_documents() -> None:
    text = "---\n" + yaml.safe_dump(pod_doc("a")) + "---\n---\n" + NODE_YAML + "---\n"
    docs = load_documents(text)
    assert [doc["kind"] for doc in docs] == ["Pod", "Node"]


def test_kind_list_is_flattened_recursively() -> None:
    inner = {"apiVersion": "v1", "kind": "List", "items": [pod_doc("b")]}
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pod_doc("a"), inner]})
    assert [doc["metadata"]["name"] for doc in load_documents(text)] == ["a", "b"]


def test_typed_list_items_get_kind() -> None:
    item = pod_doc("a")
    del item["kind"], item["apiVersion"]
    docs = load_documents(json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [item]}))
    assert isinstance(parse_object(docs[0]), Pod)


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(pod_doc("a")) + "\n" + json.dumps(pod_doc("b")),
        json.dumps([pod_doc("a"), pod_doc("b")]),
        json.dumps(pod_doc("a"), indent=2) + json.dumps(pod_doc("b"), indent=2),
    ],
    ids=["json-lines", "json-array", "concatenated"],
)
def test_json_documents(text: str) -> None:
    assert [doc["metadata"]["name"] for doc in load_documents(text)] == ["a", "b"]


def test_yaml_flow_mapping_starting_with_brace() -> None:
    assert load_documents("{kind: Namespace, metadata: {name: x}}") == [
        {"kind": "Namespace", "metadata": {"name": "x"}}
    ]


def test_yaml_syntax_error_names_file_and_line() -> None:
    text = "kind: Pod\nmetadata:\n  name: a\n  labels: [unclosed\n"
    with pytest.raises(InvalidObjectError) as info:
        load_documents(text, source="pods.yaml")
    message = str(info.value)
    assert message.startswith("pods.yaml: line ") and "invalid YAML" in message
    assert "\n" not in message


def test_json_syntax_error_names_file_and_line() -> None:
    with pytest.raises(InvalidObjectError, match=r"pods.json: line 2, column \d+: invalid JSON"):
        load_documents('{"kind": "Pod",\n "metadata": }', source="pods.json")


def test_non_object_document_is_rejected() -> None:
    with pytest.raises(InvalidObjectError, match="document 2 is a string"):
        load_documents("kind: Namespace\n---\njust a string\n", source="f.yaml")


# --- kinds -------------------------------------------------------------------------------------


def test_pod_fields_and_defaults() -> None:
    doc = pod_doc(
        priority=7,
        tolerations=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        nodeSelector={"disk": "ssd"},
        schedulingGates=[{"name": "example.com/gate"}],
    )
    doc["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"
    doc["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "u",
            "controller": True,
        }
    ]
    doc["status"] = {
        "nominatedNodeName": "n9",
        "phase": "Pending",
        "startTime": "2024-05-01T10:00:05.5Z",
    }
    doc["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    pod = parse_pod(doc)
    assert pod.key == "default/web-1"
    assert pod.scheduler_name == "default-scheduler"
    assert pod.priority == 7 and pod.preemption_policy == "PreemptLowerPriority"
    assert pod.tolerations[0].operator == "Equal"
    assert (
        pod.containers[0].ports[0].protocol == "TCP"
        and pod.containers[0].ports[0].host_port == 8080
    )
    assert pod.node_selector == {"disk": "ssd"}
    assert pod.scheduling_gates == ("example.com/gate",)
    assert pod.meta.creation_timestamp == 1714557600.0
    assert pod.start_time == 1714557605.5
    assert pod.nominated_node_name == "n9"
    assert (
        pod.meta.owner_references[0].api_version == "apps/v1"
        and pod.meta.owner_references[0].controller
    )
    assert pod.requests == {"cpu": 500, "memory": GI}
    assert (pod.nonzero_cpu, pod.nonzero_memory) == (500, GI)
    assert pod.raw is doc


def test_pod_minimal_defaults() -> None:
    doc = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    pod = parse_pod(doc)
    assert pod.namespace == "default"
    assert pod.priority == 0 and pod.phase == "Pending" and pod.start_time is None
    assert pod.meta.creation_timestamp == 0.0
    assert pod.requests == {}
    assert (pod.nonzero_cpu, pod.nonzero_memory) == (
        DEFAULT_MILLI_CPU_REQUEST,
        DEFAULT_MEMORY_REQUEST,
    )


def test_limits_default_requests() -> None:
    doc = pod_doc()
    doc["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "100m"},
        "limits": {"cpu": "1", "memory": "2Gi"},
    }
    pod = parse_pod(doc)
    assert pod.containers[0].requests == {"cpu": 100, "memory": 2 * GI}
    assert pod.containers[0].limits == {"cpu": 1000, "memory": 2 * GI}
    assert pod.requests == {"cpu": 100, "memory": 2 * GI}


def test_pod_requests_with_init_sidecar_and_overhead() -> None:
    doc = pod_doc(
        initContainers=[
            {
                "name": "sidecar",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "250m"}},
            },
            {"name": "setup", "resources": {"requests": {"cpu": "2", "memory": "10Mi"}}},
        ],
        overhead={"cpu": "100m", "memory": "5Mi"},
    )
    pod = parse_pod(doc)
    # running: 500m + 250m; setup: 2 + 250m → 2250m; + overhead 100m
    assert pod.requests == {"cpu": 2350, "memory": GI + 5 * MI}
    # the sidecar lacks memory: 200Mi default for it, in the sum and under setup
    assert pod.nonzero_cpu == 2350
    assert pod.nonzero_memory == GI + DEFAULT_MEMORY_REQUEST + 5 * MI


def test_pod_requests_sum_exactly_then_round() -> None:
    doc = pod_doc()
    doc["spec"]["containers"] = [
        {"name": f"c{i}", "resources": {"requests": {"memory": "0.5", "cpu": "0.5m"}}}
        for i in range(2)
    ]
    pod = parse_pod(doc)
    assert pod.containers[0].requests == {"memory": 1, "cpu": 1}
    assert pod.requests == {"memory": 1, "cpu": 1}


def test_host_network_defaults_host_ports() -> None:
    doc = pod_doc(hostNetwork=True)
    doc["spec"]["containers"][0]["ports"] = [{"containerPort": 9100, "protocol": "UDP"}]
    port = parse_pod(doc).containers[0].ports[0]
    assert (port.host_port, port.protocol) == (9100, "UDP")


def test_pod_affinity_and_spread_are_parsed() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}],
                        "matchFields": [
                            {"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}
                        ],
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
                }
            ],
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": "app", "operator": "In", "values": ["web"]}
                            ]
                        },
                    },
                }
            ]
        },
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "minDomains": 3,
        }
    ]
    pod = parse_pod(pod_doc(affinity=affinity, topologySpreadConstraints=spread))
    assert pod.affinity is not None and pod.affinity.node_affinity is not None
    term = pod.affinity.node_affinity.required.terms[0]  # type: ignore[union-attr]
    assert term.match_expressions[0].values == ("4",) and term.match_fields[0].operator == "NotIn"
    assert pod.affinity.node_affinity.preferred[0].weight == 5
    anti = pod.affinity.pod_anti_affinity
    assert anti is not None and anti.preferred[0].term.label_selector == LabelSelector(
        match_expressions=(LabelSelectorRequirement("app", "In", ("web",)),)
    )
    constraint = pod.topology_spread_constraints[0]
    assert (
        constraint.min_domains,
        constraint.node_affinity_policy,
        constraint.node_taints_policy,
    ) == (3, "Honor", "Ignore")


def test_node() -> None:
    node = parse_node(yaml.safe_load(NODE_YAML))
    assert node.allocatable == {"cpu": 7500, "memory": 30 * GI, "pods": 110}
    assert node.capacity == {"cpu": 8000, "memory": 32 * GI, "pods": 110}
    assert node.taints[0].key == "dedicated" and node.taints[0].effect == "NoSchedule"
    assert node.images[0].names == ("nginx", "nginx:1.25") and node.images[0].size_bytes == 1000
    assert node.meta.namespace == "" and not node.unschedulable


def test_node_allocatable_falls_back_to_capacity() -> None:
    doc = yaml.safe_load(NODE_YAML)
    del doc["status"]["allocatable"]
    doc["spec"]["unschedulable"] = True
    node = parse_node(doc)
    assert node.allocatable == node.capacity == {"cpu": 8000, "memory": 32 * GI, "pods": 110}
    assert node.unschedulable


OTHER_KINDS = """\
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {env: prod}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: team-a}
spec: {minAvailable: 2, selector: {matchLabels: {app: web}}}
status: {disruptionsAllowed: 1, disruptedPods: {web-1: "2024-05-01T10:00:00Z"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: true
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}}
---
apiVersion: v1
kind: Service
metadata: {name: headless}
spec: {}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec: {template: {metadata: {labels: {app: old}}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec: {selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec: {selector: {matchLabels: {app: db}}}
"""


def test_other_kinds(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(OTHER_KINDS)
    ns, pdb, pc, svc, headless, rc, rs, ss = load_file(path)
    assert isinstance(ns, Namespace) and ns.meta.labels == {"env": "prod"}
    assert isinstance(pdb, PodDisruptionBudget)
    assert (pdb.namespace, pdb.min_available, pdb.disruptions_allowed) == ("team-a", 2, 1)
    assert pdb.disrupted_pods == {"web-1": 1714557600.0}
    assert pdb.selector == LabelSelector(match_labels=(("app", "web"),))
    assert isinstance(pc, PriorityClass) and (
        pc.value,
        pc.global_default,
        pc.preemption_policy,
    ) == (1000, True, "PreemptLowerPriority")
    assert isinstance(svc, WorkloadController) and svc.selector == LabelSelector(
        match_labels=(("app", "web"),)
    )
    assert isinstance(headless, WorkloadController) and headless.selector is None
    assert isinstance(rc, WorkloadController) and rc.selector == LabelSelector(
        match_labels=(("app", "old"),)
    )
    assert (
        isinstance(rs, WorkloadController) and rs.kind == "ReplicaSet" and rs.selector is not None
    )
    assert isinstance(ss, WorkloadController) and ss.namespace == "default"


def test_parse_workload_controller_rejects_pods() -> None:
    with pytest.raises(InvalidObjectError, match="expected a Service"):
        parse_workload_controller(pod_doc())


def test_load_file_preserves_order_and_raw(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump_all([pod_doc("a"), yaml.safe_load(NODE_YAML), pod_doc("b")]))
    objs = load_file(path)
    assert [type(o).__name__ for o in objs] == ["Pod", "Node", "Pod"]
    assert isinstance(objs[0], Pod) and objs[0].raw == pod_doc("a")
    assert isinstance(objs[1], Node) and objs[1].raw is not None


def test_unquoted_yaml_timestamp() -> None:
    (doc,) = load_documents(
        "kind: Namespace\nmetadata:\n  name: x\n  creationTimestamp: 2024-05-01T10:00:00Z\n"
    )
    assert isinstance(parse_object(doc), Namespace)
    assert parse_object(doc).meta.creation_timestamp == 1714557600.0  # type: ignore[union-attr]


def test_load_file_missing(tmp_path: Path) -> None:
    with pytest.raises(InvalidObjectError, match="cannot read manifest"):
        load_file(tmp_path / "nope.yaml")


# --- errors ---------------------------------------------------------------------------------


def _mutate(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Set (or delete, with value=...) the dotted path; ``[i]`` indexes lists."""
    doc = copy.deepcopy(base if base is not None else pod_doc())
    parts = path.replace("[", ".").replace("]", "").split(".")
    target: Any = doc
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
    last = parts[-1]
    if value is ...:
        del target[last]
    elif last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value
    return doc


C0 = "spec.containers[0]"
REQ = f"{C0}.resources.requests"
NA = "spec.affinity.nodeAffinity"
PA = "spec.affinity.podAffinity"
PAA = "spec.affinity.podAntiAffinity"
SPREAD = "spec.topologySpreadConstraints[0]"
GOOD_SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
GOOD_TERM = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}


def _spread(**change: Any) -> dict[str, Any]:
    return pod_doc(topologySpreadConstraints=[{**GOOD_SPREAD, **change}])


def _pod_term(kind: str, term: dict[str, Any], *, weight: int | None = None) -> dict[str, Any]:
    if weight is None:
        aff = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    else:
        aff = {
            kind: {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": weight, "podAffinityTerm": term}
                ]
            }
        }
    return pod_doc(affinity=aff)


def _node_term(expr: dict[str, Any], *, fields: bool = False) -> dict[str, Any]:
    term = {"matchFields" if fields else "matchExpressions": [expr]}
    return pod_doc(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    )


ERROR_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("malformed-cpu", _mutate(f"{REQ}.cpu", "4x"), f"{REQ}.cpu", "'4x'"),
    (
        "malformed-memory",
        _mutate(f"{REQ}.memory", "1.2.3Gi"),
        f"{REQ}.memory",
        "not a valid Kubernetes quantity",
    ),
    (
        "malformed-limit",
        _mutate(f"{C0}.resources.limits", {"cpu": "Mi"}),
        f"{C0}.resources.limits.cpu",
        "'Mi'",
    ),
    ("malformed-overhead", pod_doc(overhead={"cpu": "fast"}), "spec.overhead.cpu", "'fast'"),
    ("negative-request", _mutate(f"{REQ}.cpu", "-1"), f"{REQ}.cpu", "greater than or equal to 0"),
    (
        "negative-limit",
        _mutate(f"{C0}.resources.limits", {"memory": "-1Gi"}),
        f"{C0}.resources.limits.memory",
        "greater than or equal to 0",
    ),
    (
        "request-over-limit",
        _mutate(f"{C0}.resources.limits", {"cpu": "100m"}),
        f"{REQ}.cpu",
        "less than or equal to cpu limit of 100m",
    ),
    (
        "containers-missing",
        _mutate("spec.containers", ...),
        "spec.containers",
        "at least one container",
    ),
    (
        "containers-empty",
        _mutate("spec.containers", []),
        "spec.containers",
        "at least one container",
    ),
    (
        "containers-not-list",
        _mutate("spec.containers", "nginx"),
        "spec.containers",
        "must be a list, got a string",
    ),
    (
        "container-not-object",
        _mutate("spec.containers", ["nginx"]),
        "spec.containers[0]",
        "must be an object",
    ),
    ("container-name-missing", _mutate(f"{C0}.name", ...), f"{C0}.name", "required"),
    ("name-missing", _mutate("metadata.name", ...), "metadata.name", "required"),
    ("name-invalid", _mutate("metadata.name", "Web_1"), "metadata.name", "RFC 1123"),
    (
        "labels-not-map",
        _mutate("metadata.labels", ["a"]),
        "metadata.labels",
        "must be an object, got a list",
    ),
    (
        "label-value-number",
        _mutate("metadata.labels", {"version": 1}),
        "metadata.labels.version",
        "must be a string, got an integer",
    ),
    ("priority-string", pod_doc(priority="high"), "spec.priority", "must be an integer"),
    ("priority-bool", pod_doc(priority=True), "spec.priority", "must be an integer"),
    (
        "tolerations-not-list",
        pod_doc(tolerations={"key": "a"}),
        "spec.tolerations",
        "must be a list",
    ),
    (
        "toleration-empty-key-equal",
        pod_doc(tolerations=[{"value": "x"}]),
        "spec.tolerations[0].operator",
        "must be Exists",
    ),
    (
        "toleration-exists-value",
        pod_doc(tolerations=[{"key": "a", "operator": "Exists", "value": "x"}]),
        "spec.tolerations[0].value",
        "must be empty",
    ),
    (
        "toleration-bad-operator",
        pod_doc(tolerations=[{"key": "a", "operator": "Like"}]),
        "spec.tolerations[0].operator",
        "unsupported operator",
    ),
    (
        "toleration-bad-effect",
        pod_doc(tolerations=[{"key": "a", "effect": "Never"}]),
        "spec.tolerations[0].effect",
        "unsupported value",
    ),
    (
        "toleration-seconds-not-noexecute",
        pod_doc(tolerations=[{"key": "a", "effect": "NoSchedule", "tolerationSeconds": 5}]),
        "spec.tolerations[0].effect",
        "NoExecute",
    ),
    (
        "preemption-policy",
        pod_doc(preemptionPolicy="Sometimes"),
        "spec.preemptionPolicy",
        "unsupported value",
    ),
    (
        "port-missing",
        _mutate(f"{C0}.ports", [{"hostPort": 80}]),
        f"{C0}.ports[0].containerPort",
        "between 1 and 65535",
    ),
    (
        "port-protocol",
        _mutate(f"{C0}.ports", [{"containerPort": 80, "protocol": "HTTP"}]),
        f"{C0}.ports[0].protocol",
        "unsupported value",
    ),
    (
        "timestamp",
        _mutate("metadata.creationTimestamp", "yesterday"),
        "metadata.creationTimestamp",
        "RFC 3339",
    ),
    # selectors
    (
        "node-affinity-operator",
        _node_term({"key": "a", "operator": "Like", "values": ["x"]}),
        f"{NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
        "not a valid node selector operator",
    ),
    (
        "node-affinity-gt-not-int",
        _node_term({"key": "a", "operator": "Gt", "values": ["x"]}),
        f"{NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]",
        "integer",
    ),
    (
        "node-affinity-in-empty",
        _node_term({"key": "a", "operator": "In"}),
        f"{NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
        "non-empty",
    ),
    (
        "node-affinity-field-key",
        _node_term({"key": "metadata.uid", "operator": "In", "values": ["x"]}, fields=True),
        f"{NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key",
        "not a valid field selector key",
    ),
    (
        "node-affinity-no-terms",
        pod_doc(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }
            }
        ),
        f"{NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
        "at least one node selector term",
    ),
    (
        "node-affinity-weight",
        pod_doc(
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "preference": {}}
                    ]
                }
            }
        ),
        f"{NA}.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "range 1-100",
    ),
    (
        "pod-affinity-operator",
        _pod_term(
            "podAffinity",
            {
                "topologyKey": "zone",
                "labelSelector": {
                    "matchExpressions": [{"key": "app", "operator": "Equals", "values": ["x"]}]
                },
            },
        ),
        f"{PA}.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator",
        "not a valid label selector operator",
    ),
    (
        "pod-affinity-empty-topology",
        _pod_term("podAffinity", {**GOOD_TERM, "topologyKey": ""}),
        f"{PA}.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        "can not be empty",
    ),
    (
        "pod-anti-affinity-missing-topology",
        _pod_term("podAntiAffinity", {"labelSelector": {}}),
        f"{PAA}.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        "can not be empty",
    ),
    (
        "pod-affinity-weight-high",
        _pod_term("podAffinity", GOOD_TERM, weight=101),
        f"{PA}.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "range 1-100",
    ),
    (
        "pod-anti-affinity-weight-zero",
        _pod_term("podAntiAffinity", GOOD_TERM, weight=0),
        f"{PAA}.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "range 1-100",
    ),
    (
        "pod-affinity-exists-values",
        _pod_term(
            "podAntiAffinity",
            {
                "topologyKey": "zone",
                "labelSelector": {
                    "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
                },
            },
        ),
        f"{PAA}.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values",
        "must be empty",
    ),
    # topology spread
    ("spread-max-skew-zero", _spread(maxSkew=0), f"{SPREAD}.maxSkew", "greater than zero"),
    ("spread-max-skew-missing", _spread(maxSkew=None), f"{SPREAD}.maxSkew", "greater than zero"),
    (
        "spread-empty-topology-key",
        _spread(topologyKey=""),
        f"{SPREAD}.topologyKey",
        "can not be empty",
    ),
    (
        "spread-when-unsatisfiable",
        _spread(whenUnsatisfiable="Maybe"),
        f"{SPREAD}.whenUnsatisfiable",
        "unsupported value 'Maybe'",
    ),
    ("spread-min-domains-zero", _spread(minDomains=0), f"{SPREAD}.minDomains", "greater than zero"),
    (
        "spread-min-domains-schedule-anyway",
        _spread(minDomains=2, whenUnsatisfiable="ScheduleAnyway"),
        f"{SPREAD}.minDomains",
        "DoNotSchedule",
    ),
    (
        "spread-selector-operator",
        _spread(
            labelSelector={"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}
        ),
        f"{SPREAD}.labelSelector.matchExpressions[0].operator",
        "not a valid label selector operator",
    ),
    (
        "spread-policy",
        _spread(nodeTaintsPolicy="Always"),
        f"{SPREAD}.nodeTaintsPolicy",
        "unsupported value",
    ),
    (
        "spread-duplicate",
        pod_doc(topologySpreadConstraints=[GOOD_SPREAD, GOOD_SPREAD]),
        "spec.topologySpreadConstraints[1]",
        "duplicate",
    ),
    # Numbers past the Go field's width: the API server's JSON decoding refuses them.
    ("priority-2**70", pod_doc(priority=2**70), "spec.priority", "out of the int32 range"),
    ("priority-2**31", pod_doc(priority=2**31), "spec.priority", "out of the int32 range"),
    ("max-skew-int32", _spread(maxSkew=2**31), f"{SPREAD}.maxSkew", "int32"),
    (
        "toleration-seconds-int64",
        pod_doc(
            tolerations=[
                {
                    "key": "k",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 2**63,
                }
            ]
        ),
        "spec.tolerations[0].tolerationSeconds",
        "int64",
    ),
    ("cpu-2**80", _mutate(f"{REQ}.cpu", 2**80), f"{REQ}.cpu", "at most 9223372036854775807m"),
    ("cpu-1Ei", _mutate(f"{REQ}.cpu", "1Ei"), f"{REQ}.cpu", "int64"),
    ("memory-1e20", _mutate(f"{REQ}.memory", "1e20"), f"{REQ}.memory", "int64"),
    (
        "total-past-int64",
        pod_doc(
            containers=[
                {"name": n, "resources": {"requests": {"memory": "6Ei"}}} for n in ("a", "b")
            ]
        ),
        "spec.containers",
        "total memory request",
    ),
]


@pytest.mark.parametrize(
    ("doc", "field", "message"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_pod_errors_name_file_object_and_field(
    tmp_path: Path, doc: dict[str, Any], field: str, message: str
) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InvalidObjectError) as info:
        load_file(path)
    err = info.value
    text = str(err)
    assert "\n" not in text
    assert err.field == field
    assert err.source == str(path)
    name = doc["metadata"].get("name") or "(unnamed)"
    assert err.obj == f"Pod default/{name}"
    assert text.startswith(f"{path}: Pod default/{name}: field {field}: ")
    assert message in text


def test_quantity_errors_stay_quantity_errors() -> None:
    with pytest.raises(QuantityError) as info:
        parse_pod(_mutate(f"{REQ}.cpu", "4x"), source="w.yaml")
    assert str(info.value).startswith(f"w.yaml: Pod default/web-1: field {REQ}.cpu: quantity '4x'")


NODE_ERRORS = [
    ("capacity-quantity", "status.capacity", {"cpu": "eight"}, "status.capacity.cpu"),
    ("allocatable-negative", "status.allocatable", {"memory": "-1"}, "status.allocatable.memory"),
    ("taint-effect", "spec.taints", [{"key": "a", "effect": "Maybe"}], "spec.taints[0].effect"),
    ("taint-no-effect", "spec.taints", [{"key": "a"}], "spec.taints[0].effect"),
    ("taint-no-key", "spec.taints", [{"effect": "NoSchedule"}], "spec.taints[0].key"),
    ("unschedulable-string", "spec.unschedulable", "yes", "spec.unschedulable"),
    ("images-not-list", "status.images", {"names": ["a"]}, "status.images"),
    ("allocatable-1e20", "status.allocatable", {"cpu": "1e20"}, "status.allocatable.cpu"),
    ("capacity-past-int64", "status.capacity", {"memory": str(2**63)}, "status.capacity.memory"),
    (
        "image-size-past-int64",
        "status.images",
        [{"names": ["a"], "sizeBytes": 2**63}],
        "status.images[0].sizeBytes",
    ),
]


@pytest.mark.parametrize(
    ("path", "value", "field"), [c[1:] for c in NODE_ERRORS], ids=[c[0] for c in NODE_ERRORS]
)
def test_node_errors(path: str, value: Any, field: str) -> None:
    with pytest.raises(InvalidObjectError) as info:
        parse_node(_mutate(path, value, yaml.safe_load(NODE_YAML)), source="nodes.yaml")
    assert info.value.field == field
    assert str(info.value).startswith(f"nodes.yaml: Node n1: field {field}: ")


OTHER_ERRORS = [
    (
        "pdb-selector-operator",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Has"}]}},
        },
        "PodDisruptionBudget default/b",
        "spec.selector.matchExpressions[0].operator",
    ),
    (
        "pdb-both-bounds",
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"minAvailable": 1, "maxUnavailable": 1},
        },
        "PodDisruptionBudget default/b",
        "spec",
    ),
    (
        "pdb-bad-percent",
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"minAvailable": "half"},
        },
        "PodDisruptionBudget default/b",
        "spec.minAvailable",
    ),
    (
        "priority-class-no-value",
        {"kind": "PriorityClass", "metadata": {"name": "p"}},
        "PriorityClass p",
        "value",
    ),
    (
        "service-selector-not-map",
        {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": ["app"]}},
        "Service default/s",
        "spec.selector",
    ),
    (
        "replicaset-selector",
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "r"},
            "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        },
        "ReplicaSet default/r",
        "spec.selector.matchExpressions[0].values",
    ),
    (
        "wrong-api-version",
        {"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "p"}},
        "Pod default/p",
        "apiVersion",
    ),
    (
        "unknown-kind",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
        "Deployment d",
        "kind",
    ),
    (
        "namespace-name",
        {"kind": "Namespace", "metadata": {"name": "a.b"}},
        "Namespace a.b",
        "metadata.name",
    ),
]


@pytest.mark.parametrize(
    ("doc", "obj", "field"), [c[1:] for c in OTHER_ERRORS], ids=[c[0] for c in OTHER_ERRORS]
)
def test_other_kind_errors(doc: dict[str, Any], obj: str, field: str) -> None:
    with pytest.raises(InvalidObjectError) as info:
        parse_object(doc, source="c.yaml")
    assert (info.value.obj, info.value.field, info.value.source) == (obj, field, "c.yaml")
    assert str(info.value).startswith(f"c.yaml: {obj}: field {field}: ")


def test_unknown_kind_message_names_kind() -> None:
    with pytest.raises(InvalidObjectError, match="unsupported kind 'Deployment'"):
        parse_object({"kind": "Deployment", "metadata": {"name": "d"}})


def test_missing_kind() -> None:
    with pytest.raises(InvalidObjectError, match="no kind"):
        parse_object({"metadata": {"name": "d"}}, source="x.yaml")


def test_parse_pod_rejects_other_kind() -> None:
    with pytest.raises(InvalidObjectError, match="expected a Pod, got 'Node'"):
        parse_pod(yaml.safe_load(NODE_YAML))


def test_error_in_second_document_names_that_object(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        yaml.safe_dump_all([pod_doc("ok"), _mutate(f"{REQ}.cpu", "4x", pod_doc("bad"))])
    )
    with pytest.raises(QuantityError, match="Pod default/bad"):
        load_file(path)


def test_list_items_must_be_a_list() -> None:
    with pytest.raises(InvalidObjectError, match=r"l\.yaml: List\.items must be a list"):
        load_documents("kind: List\nitems: {a: 1}\n", source="l.yaml")


# --- robustness: any damage is an InvalidObjectError, never a crash ------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)
RICH_POD = pod_doc(
    initContainers=[
        {"name": "s", "restartPolicy": "Always", "resources": {"limits": {"cpu": "1"}}}
    ],
    overhead={"cpu": "10m"},
    tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}],
    topologySpreadConstraints=[{**GOOD_SPREAD, "labelSelector": {"matchLabels": {"app": "web"}}}],
    affinity={
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}
                ]
            }
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "podAffinityTerm": GOOD_TERM}
            ]
        },
    },
    schedulingGates=[{"name": "g"}],
)
RICH_POD["status"] = {"startTime": "2024-05-01T10:00:00Z", "phase": "Pending"}


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


RICH_PATHS = _paths(RICH_POD)


@given(st.sampled_from(RICH_PATHS), JSON_VALUES)
@settings(max_examples=300, deadline=None)
def test_damaged_pod_never_crashes(path: tuple[Any, ...], value: Any) -> None:
    doc = copy.deepcopy(RICH_POD)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        parse_object(doc, source="fuzz.yaml")
    except InvalidObjectError as err:
        assert "\n" not in str(err) and str(err).startswith("fuzz.yaml: ")


def test_rich_pod_is_valid() -> None:
    assert isinstance(parse_object(copy.deepcopy(RICH_POD)), Pod)


@given(st.text(max_size=120))
@settings(deadline=None)
def test_any_text_loads_or_fails_cleanly(text: str) -> None:
    try:
        docs = load_documents(text, source="t.yaml")
    except InvalidObjectError as err:
        assert "\n" not in str(err) and str(err).startswith("t.yaml: ")
        return
    for doc in docs:
        try:
            parse_object(doc, source="t.yaml")
        except InvalidObjectError as err:
            assert "\n" not in str(err)


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "- " * 3000 + "x"], ids=["json", "yaml"])
def test_deep_nesting_is_an_error(text: str) -> None:
    with pytest.raises(InvalidObjectError, match="nested too deeply"):
        load_documents(text, source="deep.yaml")


def test_line_breaks_in_names_are_escaped() -> None:
    doc = pod_doc("bad\nname")
    with pytest.raises(InvalidObjectError) as info:
        parse_object(doc, source="x.yaml")
    assert "\n" not in str(info.value) and "bad\\nname" in str(info.value)
