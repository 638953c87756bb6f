"""``explain`` over random clusters with extreme but valid numbers never crashes.

Quantities at and around the int64 limits (``9223372036854775807m`` of cpu, ``7Ei`` and
``8Ei`` of memory, decimals past int64), image sizes up to int64, maxSkew and priority at
the int32 limits, and pods bound by hand to any node whatever they request. Every
manifest either parses or is refused with one of the project's one-line errors; every
parsed cluster explains without an exception, with every score in its range.

The issue that asked for this measured 1,393 crashes in 5,000 cases (node table columns,
resource scoring, spread scoring). Most nodes are roomy (big amounts of every resource)
and most pending pods ask for little, so that two or more nodes are usually scored:
the share of examples that reach the score checks is counted and asserted (about
three quarters; before, 21 of 150). CI runs a fixed-seed budget; set
``CLUSTER_SCHED_FUZZ_EXAMPLES`` for a longer run and ``CLUSTER_SCHED_FUZZ_RANDOM=1``
for fresh random examples (``benchmarks/fuzz_nightly.py`` sets both).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import KubeObject, Pod
from cluster_sched.cache.cache import Cache
from cluster_sched.config.load import default_config, parse_config
from cluster_sched.config.types import SchedulerConfiguration
from cluster_sched.errors import ClusterSchedError
from cluster_sched.framework.interfaces import MAX_NODE_SCORE
from cluster_sched.scheduler.explain.decision import explain

EXAMPLES = int(os.environ.get("CLUSTER_SCHED_FUZZ_EXAMPLES", "150"))
RANDOM = os.environ.get("CLUSTER_SCHED_FUZZ_RANDOM", "") not in ("", "0")
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
GPU = "example.com/gpu"

BOUNDARY_QUANTITIES = [
    "0",
    "1",
    "100m",
    "1n",
    "1Ei",
    "7Ei",
    "8Ei",
    "16Ei",
    "1E",
    "1e18",
    "1e20",
    str(INT64_MAX),
    str(INT64_MAX + 1),
    f"{INT64_MAX}m",
    f"{INT64_MAX // 2}m",
    f"{INT64_MAX // 100 + 1}",
    "92233720368547758.07",
    "4611686018427387904",
    "9223372036854775.807",
]

QUANTITIES = st.one_of(
    st.sampled_from(BOUNDARY_QUANTITIES),
    st.integers(0, 2**64).map(str),
    st.builds("{}e{}".format, st.integers(1, 999), st.integers(-9, 21)),
    st.builds(
        "{}{}".format,
        st.integers(1, 2**20),
        st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E", "m"]),
    ),
)
RESOURCES = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", GPU]), QUANTITIES, max_size=4
)
#: Requests a roomy node holds many of (zero, tiny, ordinary).
SMALL_QUANTITIES = st.sampled_from(["0", "1n", "1m", "100m", "1", "2", "128Mi", "1Gi"])
#: Large allocatable amounts that parse, int64's edge included (cpu is kept in
#: millicores, so its limit is a thousand times lower).
BIG_CPU = st.sampled_from(
    [f"{INT64_MAX}m", f"{INT64_MAX // 2}m", str(INT64_MAX // 1000), "9e15", "1Pi", "1Ti"]
)
BIG_QUANTITIES = st.sampled_from(
    ["1Ei", "7Ei", "8Ei", "1E", "1e18", str(INT64_MAX), f"{INT64_MAX}m", "1Pi"]
)
ROOMY_RESOURCES = st.fixed_dictionaries(
    {
        "cpu": BIG_CPU,
        "memory": BIG_QUANTITIES,
        "ephemeral-storage": BIG_QUANTITIES,
        GPU: BIG_QUANTITIES,
    }
)
#: A pending pod's requests: mostly small (so roomy nodes fit it and get scored), else
#: anything RESOURCES draws.
POD_RESOURCES = st.one_of(
    st.dictionaries(
        st.sampled_from(["cpu", "memory", "ephemeral-storage", GPU]), SMALL_QUANTITIES, max_size=4
    ),
    st.dictionaries(
        st.sampled_from(["cpu", "memory", "ephemeral-storage", GPU]), SMALL_QUANTITIES, max_size=4
    ),
    st.dictionaries(
        st.sampled_from(["cpu", "memory", "ephemeral-storage", GPU]), SMALL_QUANTITIES, max_size=4
    ),
    RESOURCES,
)
ZONES = st.sampled_from(["a", "b", "c"])
IMAGES = ["busybox:latest", "big:1"]


@st.composite
def nodes(draw: st.DrawFn, count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        # most nodes are roomy (big amounts of every resource, room for pods), so that
        # most examples have two or more feasible nodes and reach the score checks
        if draw(st.integers(0, 9)) < 8:
            allocatable = draw(ROOMY_RESOURCES)
            allocatable["pods"] = draw(st.sampled_from(["110", str(INT64_MAX)]))
        else:
            allocatable = draw(RESOURCES)
            allocatable["pods"] = draw(st.sampled_from(["0", "1", "110", str(INT64_MAX)]))
        images = [
            {"names": [name], "sizeBytes": draw(st.integers(0, INT64_MAX))}
            for name in draw(st.lists(st.sampled_from(IMAGES), unique=True, max_size=2))
        ]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"n{i}",
                    "labels": {
                        "topology.kubernetes.io/zone": draw(ZONES),
                        "kubernetes.io/hostname": f"n{i}",
                    },
                },
                "status": {"allocatable": allocatable, "images": images},
            }
        )
    return out


def _containers(
    draw: st.DrawFn, resources: st.SearchStrategy[dict[str, str]]
) -> list[dict[str, Any]]:
    return [
        {
            "name": f"c{j}",
            "image": draw(st.sampled_from([*IMAGES, "other"])),
            "resources": {"requests": draw(resources)},
        }
        for j in range(draw(st.integers(1, 3)))
    ]


@st.composite
def pods(draw: st.DrawFn, node_names: list[str], count: int) -> list[dict[str, Any]]:
    """Pods bound by hand to random nodes: the filter never saw their requests."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"bound{i}", "labels": {"app": draw(st.sampled_from("xy"))}},
            "spec": {
                "nodeName": draw(st.sampled_from(node_names)),
                "priority": draw(st.integers(-(2**31), INT32_MAX)),
                "containers": _containers(draw, RESOURCES),
            },
        }
        for i in range(count)
    ]


@st.composite
def pending_pod(draw: st.DrawFn) -> dict[str, Any]:
    spread = [
        {
            "maxSkew": draw(st.sampled_from([1, 2, INT32_MAX])),
            "topologyKey": key,
            "whenUnsatisfiable": draw(st.sampled_from(["ScheduleAnyway", "DoNotSchedule"])),
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
        for key in draw(
            st.lists(
                st.sampled_from(["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
                unique=True,
                max_size=2,
            )
        )
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pending", "labels": {"app": "x"}},
        "spec": {
            "priority": draw(st.sampled_from([-(2**31), 0, INT32_MAX])),
            "containers": _containers(draw, POD_RESOURCES),
            "topologySpreadConstraints": spread,
        },
    }


def _strategy(kind: str) -> dict[str, Any]:
    resources = [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 1},
        {"name": "ephemeral-storage", "weight": 3},
        {"name": GPU, "weight": 5},
    ]
    strategy: dict[str, Any] = {"type": kind, "resources": resources}
    if kind == "RequestedToCapacityRatio":
        shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        strategy["requestedToCapacityRatio"] = {"shape": shape}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}},
                    {
                        "name": "NodeResourcesBalancedAllocation",
                        "args": {
                            "resources": [{"name": r["name"], "weight": 1} for r in resources]
                        },
                    },
                ],
            }
        ],
    }


CONFIGS: dict[str, SchedulerConfiguration] = {
    "default": default_config(),
    **{
        kind: parse_config(_strategy(kind))
        for kind in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
    },
}


def _parsed(doc: dict[str, Any]) -> KubeObject | None:
    """The object, or None after checking the refusal is a one-line error of ours."""
    try:
        return parse_object(doc, source="fuzz.yaml")
    except ClusterSchedError as err:
        assert "\n" not in str(err) and "fuzz.yaml" in str(err), str(err)
        return None


@settings(
    max_examples=EXAMPLES,
    derandomize=not RANDOM,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), config=st.sampled_from(sorted(CONFIGS)))
def _explain_extreme(data: st.DataObject, config: str, reached: Counter[str]) -> None:
    reached["examples"] += 1
    node_docs = data.draw(nodes(data.draw(st.integers(2, 4))))
    bound_docs = data.draw(
        pods([d["metadata"]["name"] for d in node_docs], data.draw(st.integers(0, 3)))
    )
    cache = Cache()
    cache.load(obj for obj in map(_parsed, node_docs + bound_docs) if obj is not None)
    pod = _parsed(data.draw(pending_pod()))
    if pod is None:
        return
    assert isinstance(pod, Pod)
    try:
        result = explain(cache, pod, CONFIGS[config], seed=1)
    except ClusterSchedError as err:
        assert "\n" not in str(err), str(err)
        return
    out = result.json
    if len(out["scores"]) >= 2:
        reached["scored"] += 1
    for name, scores in out["scores"].items():
        for plugin, score in scores.items():
            assert 0 <= score <= MAX_NODE_SCORE, (name, plugin, score)
    assert all(total >= 0 for total in out["finalScores"].values()), out["finalScores"]
    assert (
        out["selectedNode"] is None
        or out["selectedNode"] in out["finalScores"]
        or (out["feasibleNodes"] == 1)
    )


def test_explain_never_crashes_on_extreme_valid_numbers() -> None:
    """Every example explains or refuses in one line; most reach the score-range
    assertions (two or more nodes scored): the share is asserted."""
    reached: Counter[str] = Counter()
    _explain_extreme(reached=reached)
    # 111 of 151 with CI's fixed seed, 144-165 of ~205 with four random seeds
    assert reached["scored"] >= 0.5 * reached["examples"], dict(reached)
