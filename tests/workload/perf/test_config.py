"""Reading scheduler_perf configs as upstream does: one parse test per op, ``$param``
substitution, paths relative to the config file, strict fields, and the errors for what
cluster-sched does not run."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.errors import InvalidObjectError
from cluster_sched.features import parse_feature_gates
from cluster_sched.workload.perf.config import (
    PerfTestCase,
    ThresholdMetricSelector,
    feature_gate_warnings,
    feature_gates_of,
    load_test_cases,
    select_workloads,
)
from cluster_sched.workload.perf.decode import parse_op
from cluster_sched.workload.perf.ops import (
    Barrier,
    Churn,
    CreateAny,
    CreateNamespaces,
    CreateNodes,
    CreatePods,
    CreatePodSets,
    DeletePods,
    Sleep,
    StartCollectingMetrics,
    StopCollectingMetrics,
    parse_duration,
)

BASE = Path("/configs/misc")

# (op as written in a config, the op it decodes to)
OPS: list[tuple[str, dict[str, Any], object]] = [
    (
        "createNodes",
        {
            "opcode": "createNodes",
            "countParam": "$initNodes",
            "nodeTemplatePath": "../templates/node-default.yaml",
            "labelNodePrepareStrategy": {
                "labelKey": "topology.kubernetes.io/zone",
                "labelValues": ["moon-1", "moon-2"],
            },
        },
        CreateNodes(
            count_param="$initNodes",
            node_template_path=BASE / "../templates/node-default.yaml",
            label_strategy=("topology.kubernetes.io/zone", ("moon-1", "moon-2")),
        ),
    ),
    (
        "createNodes-allocatable-unique",
        {
            "opcode": "createNodes",
            "count": 3,
            "nodeAllocatableStrategy": {"nodeAllocatable": {"cpu": "2", "attachable-volumes": 5}},
            "uniqueNodeLabelStrategy": {"labelKey": "rack"},
        },
        CreateNodes(
            count=3,
            node_allocatable={"cpu": "2", "attachable-volumes": "5"},
            unique_label_key="rack",
        ),
    ),
    (
        "createNamespaces",
        {
            "opcode": "createNamespaces",
            "prefix": "init-ns",
            "countParam": "$n",
            "namespaceTemplatePath": "../templates/ns.yaml",
        },
        CreateNamespaces(
            prefix="init-ns",
            count_param="$n",
            namespace_template_path=BASE / "../templates/ns.yaml",
        ),
    ),
    (
        "createPods",
        {
            "opcode": "createPods",
            "countParam": "$measurePods",
            "podTemplatePath": "templates/pod.yaml",
            "namespace": "sched-1",
            "collectMetrics": True,
            "templateParams": {"size": "$size"},
        },
        CreatePods(
            count_param="$measurePods",
            pod_template_path=BASE / "templates/pod.yaml",
            namespace="sched-1",
            collect_metrics=True,
            template_params={"size": "$size"},
        ),
    ),
    (
        "createPods-steady",
        {"opcode": "createPods", "count": 4, "steadyState": True, "duration": "1m30s"},
        CreatePods(count=4, steady_state=True, duration=90.0),
    ),
    (
        "createPods-skip-wait",
        {"opcode": "createPods", "count": 2, "skipWaitToCompletion": True},
        CreatePods(count=2, skip_wait_to_completion=True),
    ),
    (
        "createPodSets",
        {
            "opcode": "createPodSets",
            "countParam": "$sets",
            "namespacePrefix": "init-ns",
            "createPodsOp": {"opcode": "createPods", "countParam": "$perSet"},
        },
        CreatePodSets(
            count_param="$sets",
            namespace_prefix="init-ns",
            create_pods_op=CreatePods(count_param="$perSet"),
        ),
    ),
    (
        "createAny",
        {"opcode": "createAny", "templatePath": "pc.yaml", "namespace": "ns", "count": 2},
        CreateAny(template_path=BASE / "pc.yaml", namespace="ns", count=2),
    ),
    (
        "deletePods",
        {
            "opcode": "deletePods",
            "namespace": "namespace-3",
            "labelSelector": {"app": "x"},
            "deletePodsPerSecond": 50,
            "skipWaitToCompletion": True,
        },
        DeletePods(
            namespace="namespace-3",
            label_selector={"app": "x"},
            delete_pods_per_second=50,
            skip_wait_to_completion=True,
        ),
    ),
    (
        "churn",
        {
            "opcode": "churn",
            "mode": "recreate",
            "number": 1,
            "templatePaths": ["../templates/churn/node-default.yaml"],
            "intervalMilliseconds": 1000,
        },
        Churn(
            mode="recreate",
            number=1,
            interval_milliseconds=1000,
            template_paths=[BASE / "../templates/churn/node-default.yaml"],
        ),
    ),
    (
        "barrier",
        {"opcode": "barrier", "namespaces": ["a"], "stageRequirement": "Attempted"},
        Barrier(namespaces=["a"], stage_requirement="Attempted"),
    ),
    ("sleep", {"opcode": "sleep", "duration": "500ms"}, Sleep(duration=0.5)),
    (
        "startCollectingMetrics",
        {"opcode": "startCollectingMetrics", "name": "m", "namespaces": ["a", "b"]},
        StartCollectingMetrics(name="m", namespaces=["a", "b"]),
    ),
    ("stopCollectingMetrics", {"opcode": "stopCollectingMetrics"}, StopCollectingMetrics()),
    (
        "field-names-match-case-insensitively",
        {"Opcode": "createPods", "CountParam": "$x", "SKIPWAITTOCOMPLETION": True},
        CreatePods(count_param="$x", skip_wait_to_completion=True),
    ),
]


@pytest.mark.parametrize(("raw", "want"), [(r, w) for _n, r, w in OPS], ids=[n for n, *_ in OPS])
def test_each_op_decodes_as_upstream(raw: dict[str, Any], want: object) -> None:
    assert parse_op(raw, BASE) == want


BAD_OPS = [
    ("unknown-field", {"opcode": "createPods", "count": 1, "podTemplate": "x"}, "podTemplate"),
    ("unknown-opcode", {"opcode": "createPod"}, "unknown opcode 'createPod'"),
    ("unsupported-opcode", {"opcode": "updateAny"}, "not supported by cluster-sched"),
    ("param-without-dollar", {"opcode": "createPods", "countParam": "n"}, "$name"),
    (
        "collect-and-skip",
        {"opcode": "createPods", "count": 1, "collectMetrics": True, "skipWaitToCompletion": True},
        "cannot both be true",
    ),
    ("churn-mode", {"opcode": "churn", "mode": "sometimes", "templatePaths": ["a"]}, "mode"),
    ("recreate-number", {"opcode": "churn", "mode": "recreate", "templatePaths": ["a"]}, "0"),
    ("bad-duration", {"opcode": "sleep", "duration": "5 minutes"}, "invalid duration"),
    ("metrics-namespaces", {"opcode": "startCollectingMetrics", "name": "m"}, "namespaces"),
    (
        "csi-allocatable",
        {
            "opcode": "createNodes",
            "count": 1,
            "nodeAllocatableStrategy": {"csiNodeAllocatable": {}},
        },
        "CSINode is not modelled",
    ),
]


@pytest.mark.parametrize(
    ("raw", "message"), [(r, m) for _n, r, m in BAD_OPS], ids=[n for n, *_ in BAD_OPS]
)
def test_bad_ops_are_errors_naming_the_problem(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=None) as err:
        parse_op(raw, BASE)
    assert message in str(err.value)


def test_go_durations() -> None:
    assert parse_duration("1h2m3.5s") == 3723.5
    assert parse_duration("250ms") == 0.25
    assert parse_duration("0") == 0.0


def write_config(root: Path, cases: list[dict[str, Any]], sub: str = "misc") -> Path:
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / sub).mkdir(parents=True, exist_ok=True)
    path = root / sub / "performance-config.yaml"
    path.write_text(yaml.safe_dump(cases, sort_keys=False))
    return path


BASIC = {
    "name": "SchedulingBasic",
    "defaultPodTemplatePath": "../templates/pod-default.yaml",
    "workloadTemplate": [
        {"opcode": "createNodes", "countParam": "$initNodes"},
        {"opcode": "createPods", "countParam": "$initPods"},
        {"opcode": "createPods", "countParam": "$measurePods", "collectMetrics": True},
    ],
    "workloads": [
        {"name": "5Nodes", "params": {"initNodes": 5, "initPods": 5, "measurePods": 10}},
        {
            "name": "500Nodes",
            "threshold": 680,
            "params": {"initNodes": 500, "initPods": 50, "measurePods": 100},
        },
    ],
}


def test_params_are_substituted_per_workload_and_paths_are_relative_to_the_config(
    tmp_path: Path,
) -> None:
    path = write_config(tmp_path, [BASIC])
    planned = select_workloads(load_test_cases(path), None, "500Nodes", str(path))
    (p,) = planned
    assert p.name == "SchedulingBasic/500Nodes"
    assert p.workload.threshold == 680
    assert p.workload.selector == ThresholdMetricSelector()  # SchedulingThroughput Average
    nodes, init, measure = p.ops
    assert isinstance(nodes, CreateNodes) and nodes.count == 500
    assert isinstance(init, CreatePods) and init.count == 50 and not init.collect_metrics
    assert isinstance(measure, CreatePods) and measure.count == 100 and measure.collect_metrics
    assert isinstance(p.case, PerfTestCase)
    template = p.case.default_pod_template_path
    assert template is not None and template.resolve() == (tmp_path / "templates/pod-default.yaml")


def test_pod_sets_unroll_into_one_create_pods_per_namespace(tmp_path: Path) -> None:
    case = {
        "name": "Sets",
        "workloadTemplate": [
            {
                "opcode": "createPodSets",
                "countParam": "$namespaces",
                "namespacePrefix": "init-ns",
                "createPodsOp": {"opcode": "createPods", "countParam": "$perNamespace"},
            },
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {"namespaces": 3, "perNamespace": 2}}],
    }
    path = write_config(tmp_path, [case])
    (p,) = select_workloads(load_test_cases(path), None, None, str(path))
    pods = [op for op in p.ops if isinstance(op, CreatePods)]
    assert [(op.namespace, op.count) for op in pods[:3]] == [
        ("init-ns-0", 2),
        ("init-ns-1", 2),
        ("init-ns-2", 2),
    ]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"initNodes": 5, "initPods": 5}, "parameter measurePods is undefined"),
        ({"initNodes": 5, "initPods": 5, "measurePods": 1, "typo": 2}, "['typo'] are defined"),
        ({"initNodes": "five", "initPods": 5, "measurePods": 1}, "wrong type str"),
    ],
    ids=["undefined", "unused", "wrong-type"],
)
def test_parameter_errors_name_the_workload(
    tmp_path: Path, params: dict[str, Any], message: str
) -> None:
    case = {**BASIC, "workloads": [{"name": "w", "params": params}]}
    path = write_config(tmp_path, [case])
    with pytest.raises(InvalidObjectError) as err:
        select_workloads(load_test_cases(path), None, None, str(path))
    assert message in str(err.value)
    assert "workload SchedulingBasic/w" in str(err.value)


def test_a_broken_test_case_fails_only_when_selected(tmp_path: Path) -> None:
    dra = {
        "name": "SchedulingWithDRA",
        "workloadTemplate": [
            {"opcode": "updateAny", "namespace": "x"},
            {"opcode": "createPods", "count": 1, "collectMetrics": True},
        ],
        "workloads": [{"name": "fast"}],
    }
    path = write_config(tmp_path, [BASIC, dra])
    cases = load_test_cases(path)
    assert len(select_workloads(cases, "SchedulingBasic", None, str(path))) == 2
    with pytest.raises(InvalidObjectError) as err:
        select_workloads(cases, None, None, str(path))
    text = str(err.value)
    assert "\n" not in text
    assert "test case SchedulingWithDRA" in text
    assert "workloadTemplate[0].opcode" in text
    assert "'updateAny' is not supported by cluster-sched" in text


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            {**BASIC, "workloadTemplate": [{"opcode": "createNodes", "count": 1}]},
            "collects metrics",
        ),
        ({**BASIC, "workloads": []}, "no workloads defined"),
        ({**BASIC, "workloads": [{"name": "a"}, {"name": "a"}]}, "not unique"),
        ({**BASIC, "defaultPodTemplate": "x"}, "unknown field 'defaultPodTemplate'"),
        (
            {
                **BASIC,
                "workloads": [
                    {
                        "name": "w",
                        "thresholdMetricSelector": {"name": "nope", "dataBucket": "Perc50"},
                    }
                ],
            },
            "not collected",
        ),
    ],
    ids=[
        "no-metrics",
        "no-workloads",
        "duplicate-workload",
        "misspelled-field",
        "uncollected-metric",
    ],
)
def test_invalid_test_cases_are_rejected_as_upstream_does(
    tmp_path: Path, case: dict[str, Any], message: str
) -> None:
    path = write_config(tmp_path, [case])
    with pytest.raises(InvalidObjectError) as err:
        select_workloads(load_test_cases(path), None, None, str(path))
    assert message in str(err.value)


def test_selection_uses_wildcards_and_reports_no_match(tmp_path: Path) -> None:
    path = write_config(tmp_path, [BASIC])
    cases = load_test_cases(path)
    assert [p.workload.name for p in select_workloads(cases, "Scheduling*", "5*", str(path))] == [
        "5Nodes",
        "500Nodes",
    ]
    with pytest.raises(InvalidObjectError, match="no workload matches workload 'x'"):
        select_workloads(cases, None, "x", str(path))


def test_threshold_selector_and_topic_map(tmp_path: Path) -> None:
    case = {
        **BASIC,
        "defaultThresholdMetricSelector": {
            "name": "scheduler_scheduling_attempt_duration_seconds",
            "labels": {"result": "scheduled"},
            "dataBucket": "Perc99",
            "expectLower": True,
        },
        "workloads": [
            {
                "name": "a",
                "threshold": {"": 12.5, "other": 1},
                "params": BASIC["workloads"][0]["params"],
            }
        ],
    }
    path = write_config(tmp_path, [case])
    (p,) = select_workloads(load_test_cases(path), None, None, str(path))
    assert p.workload.threshold == 12.5
    # upstream thresholds.Get: the topic's entry, else the plain number (0 for a map)
    assert (p.workload.for_topic("other"), p.workload.for_topic("dra")) == (1.0, 0.0)
    assert p.workload.selector == ThresholdMetricSelector(
        "scheduler_scheduling_attempt_duration_seconds", {"result": "scheduled"}, "Perc99", True
    )


def test_feature_gates_cluster_sched_does_not_model_are_reported() -> None:
    assert feature_gate_warnings({"SchedulerAsyncAPICalls": False}) == []
    (line,) = feature_gate_warnings({"SchedulerAsyncAPICalls": True})
    assert "SchedulerAsyncAPICalls=true is not supported" in line
    assert "behaves as SchedulerAsyncAPICalls=false" in line
    (unknown,) = feature_gate_warnings({"MadeUpGate": True})
    assert unknown == "feature gate MadeUpGate is not known to cluster-sched; ignored"


def test_workload_gates_override_the_test_case_gates(tmp_path: Path) -> None:
    case = {
        **BASIC,
        "featureGates": {"SchedulerAsyncAPICalls": True, "NodeDeclaredFeatures": False},
        "workloads": [
            {
                "name": "w",
                "featureGates": {"SchedulerAsyncAPICalls": False},
                "params": BASIC["workloads"][0]["params"],
            }
        ],
    }
    path = write_config(tmp_path, [case])
    (p,) = select_workloads(load_test_cases(path), None, None, str(path))
    assert p.feature_gates == {"SchedulerAsyncAPICalls": False, "NodeDeclaredFeatures": False}


def test_syntax_errors_and_directories_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        textwrap.dedent("""\
        - name: X
          workloadTemplate: [
        """)
    )
    with pytest.raises(InvalidObjectError) as err:
        load_test_cases(bad)
    assert str(err.value).startswith(f"{bad}: ") and "\n" not in str(err.value)
    with pytest.raises(InvalidObjectError, match="is a directory"):
        load_test_cases(tmp_path)


def test_registry_gates_become_the_schedulers_feature_gates() -> None:
    features, warnings = feature_gates_of(
        {
            "SchedulerAsyncPreemption": False,
            "OpportunisticBatching": False,
            "SchedulerQueueingHints": False,
            "SchedulerAsyncAPICalls": True,
        }
    )
    assert not features.enabled("SchedulerAsyncPreemption")
    assert not features.enabled("OpportunisticBatching")
    assert features.enabled("NominatedNodeNameForExpectation")
    assert features.enabled("SchedulerQueueingHints"), "locked GA gate keeps its value"
    assert len(warnings) == 2
    assert "feature is locked to true; ignored" in warnings[0]
    assert "SchedulerAsyncAPICalls=true is not supported" in warnings[1]


def test_workload_gates_override_the_command_line() -> None:
    base = parse_feature_gates("OpportunisticBatching=false,SchedulerAsyncPreemption=false")
    features, _ = feature_gates_of({"OpportunisticBatching": True}, base)
    assert features.enabled("OpportunisticBatching")
    assert not features.enabled("SchedulerAsyncPreemption")
