"""Hypothesis strategies and the example budget shared by the fuzz targets.

Inputs are built around valid templates (a pod, a node, a scheduler configuration, a
Workload) with random parts replaced by random JSON values, so most examples reach deep
into the parsers instead of dying at the first type check; raw text and bytes cover the
rest. The budget is small and the seed fixed for CI (``derandomize``);
``CLUSTER_SCHED_FUZZ_EXAMPLES=10000 pytest tests/fuzz`` runs the long campaign (about
25 minutes on two busy cores; the explain and informer targets take a quarter of the
budget each; the per-test timeout is lifted, see conftest.py).
``CLUSTER_SCHED_FUZZ_RANDOM=1`` draws fresh examples instead of the fixed set, so
repeated runs explore (``benchmarks/fuzz_nightly.py``: a failure prints hypothesis'
reproduce-with line).
"""

from __future__ import annotations

import copy
import os
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = [
    "ENV_EXAMPLES",
    "ENV_RANDOM",
    "config_docs",
    "fuzz_settings",
    "json_values",
    "manifest_docs",
    "mutate",
    "workload_docs",
    "yaml_text",
]

#: Examples per target: this env var, else :data:`DEFAULT_EXAMPLES`.
ENV_EXAMPLES = "CLUSTER_SCHED_FUZZ_EXAMPLES"
#: CI's budget per target: fast, and enough to catch a regression in a parser's guards.
DEFAULT_EXAMPLES = 200
#: Set (not "0"): random examples, not CI's fixed set (a nightly run that explores).
ENV_RANDOM = "CLUSTER_SCHED_FUZZ_RANDOM"


def explores() -> bool:
    """Whether this run draws fresh random examples (``ENV_RANDOM``)."""
    return os.environ.get(ENV_RANDOM, "") not in ("", "0")


def budget(share: float = 1.0) -> int:
    """Examples for one target: ``share`` of the budget (slow targets take less)."""
    total = int(os.environ.get(ENV_EXAMPLES) or DEFAULT_EXAMPLES)
    return max(10, int(total * share))


def fuzz_settings(share: float = 1.0) -> settings:
    """Fixed seed (unless ``ENV_RANDOM``), no example database, the budget; no health
    check may veto a target."""
    return settings(
        max_examples=budget(share),
        derandomize=not explores(),
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["", "1", "-1", "0.5", "1e400", "100m", "1Gi", "1.5Ki", "2e3", "abc", "In", "NotIn",
         "Exists", "DoesNotExist", "Gt", "Lt", "NoSchedule", "NoExecute", "Equal", "v1",
         "Pod", "Node", "default", "a/b", "zone", "-", "*", "kubernetes.io/hostname"]
    ),
)  # fmt: skip

json_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), _scalars), inner, max_size=4),
    ),
    max_leaves=12,
)
"""Any value a YAML/JSON document could hold (and a few it could not, such as non-text
keys, which YAML allows)."""


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return doc


@st.composite
def mutate(draw: st.DrawFn, template: Any, max_edits: int = 3) -> Any:
    """``template`` with up to ``max_edits`` random places replaced, deleted or extended."""
    doc = copy.deepcopy(template)
    for _ in range(draw(st.integers(0, max_edits))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace" or not path:
            doc = _set(doc, path, draw(json_values))
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        if action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=10))] = draw(json_values)
        else:
            parent.append(draw(json_values))
    return doc


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "priority": 10,
        "schedulerName": "default-scheduler",
        "nodeSelector": {"zone": "a"},
        "containers": [
            {
                "name": "c",
                "image": "pause",
                "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {}},
                "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
            }
        ],
        "initContainers": [{"name": "i", "restartPolicy": "Always", "resources": {}}],
        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            }
        ],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "pvc"}}],
    },
}
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n", "labels": {"zone": "a", "kubernetes.io/hostname": "n"}},
    "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
    "status": {
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "images": [{"names": ["pause"], "sizeBytes": 1000}],
    },
}
OTHERS = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": {}}},
    {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    },
    {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "pvc", "namespace": "default"},
        "spec": {"storageClassName": "sc", "resources": {"requests": {"storage": "1Gi"}}},
    },
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "sc"},
        "provisioner": "x",
        "volumeBindingMode": "WaitForFirstConsumer",
    },
]

manifest_docs = st.one_of(
    mutate(POD, max_edits=4), mutate(NODE), *[mutate(o) for o in OTHERS], json_values
)
"""One manifest document, usually almost valid."""

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 50,
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 10,
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "score": {
                    "enabled": [{"name": "NodeResourcesFit", "weight": 2}],
                    "disabled": [{"name": "ImageLocality"}],
                },
                "multiPoint": {"enabled": [{"name": "PodTopologySpread"}]},
            },
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "RequestedToCapacityRatio",
                            "resources": [{"name": "cpu", "weight": 1}],
                            "requestedToCapacityRatio": {
                                "shape": [{"utilization": 0, "score": 0},
                                          {"utilization": 100, "score": 10}]
                            },
                        }
                    },
                },
                {
                    "name": "PodTopologySpread",
                    "args": {
                        "defaultingType": "List",
                        "defaultConstraints": [
                            {"maxSkew": 1, "topologyKey": "zone",
                             "whenUnsatisfiable": "ScheduleAnyway"}
                        ],
                    },
                },
                {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 10}},
                {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 1}},
            ],
        }
    ],
}  # fmt: skip
config_docs = st.one_of(mutate(CONFIG, max_edits=4), json_values)
"""A KubeSchedulerConfiguration document, usually almost valid."""

WORKLOAD = {
    "apiVersion": "cluster-sched.io/v1alpha1",
    "kind": "Workload",
    "metadata": {"name": "w"},
    "spec": {
        "objects": [OTHERS[0]],
        "nodeGroups": [{"count": 2, "template": NODE, "labels": {"zone": ["a", "b"]}}],
        "podGroups": [
            {"name": "g", "count": 3, "template": POD, "rate": 0, "wait": True,
             "labels": {"color": ["green"]}}
        ],
    },
}  # fmt: skip


def _small_counts(doc: Any) -> bool:
    """Keep generated group counts small: a huge count is a (valid) huge workload."""
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if not isinstance(spec, dict):
        return True
    for name in ("nodeGroups", "podGroups"):
        groups = spec.get(name)
        for g in groups if isinstance(groups, list) else []:
            count = g.get("count") if isinstance(g, dict) else None
            if isinstance(count, int) and count > 1000:
                return False
    return True


workload_docs = st.one_of(mutate(WORKLOAD, max_edits=4).filter(_small_counts), json_values)
"""A Workload document, usually almost valid."""


def _dump(docs: list[Any]) -> str:
    try:
        return yaml.safe_dump_all(docs)
    except yaml.YAMLError:
        return ""


yaml_text = st.one_of(
    st.lists(manifest_docs, min_size=1, max_size=3).map(_dump),
    st.text(max_size=200),
    st.sampled_from(
        ["", "---\n", "- a\n- b", "{", "kind: Pod\nmetadata: [", "a: &x [*x]", "!!python/object:os.system {}",
         "kind: List\nitems: 5", '{"kind": "Pod"}', "\x00\x01", "a: 1\na: 2"]
    ),
)  # fmt: skip
"""The text of a manifest file: YAML documents, arbitrary text, known troublemakers."""
