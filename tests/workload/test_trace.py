"""The trace format (JSONL and CSV), the openb importer, and a replay of the shipped
openb sample through the real scheduler over virtual time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cluster_sched.errors import InvalidObjectError
from cluster_sched.redis_server import RedisServer
from cluster_sched.workload.openb import GPU_MILLI, GPU_MODEL_LABEL, import_openb, openb_records
from cluster_sched.workload.runner import RunOptions, run_evaluation
from cluster_sched.workload.spec import load_workload
from cluster_sched.workload.trace import read_trace, trace_pod

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "traces" / "openb-sample"

JSONL = (
    '{"name": "web", "arrival": 5, "lifetime": 60, "requests": {"cpu": "500m"}, '
    '"limits": {"cpu": "1"}, "priority": 10, "labels": {"app": "web"}, '
    '"affinity": {"zone": ["a", "b"]}}\n'
    '{"arrival": 1}\n'
)
CSV = (
    "name,arrival,lifetime,requests,limits,priority,labels,affinity\n"
    "web,5,60,cpu=500m,cpu=1,10,app=web,zone=a|b\n"
    ",1,,,,,,\n"
)


@pytest.mark.parametrize(
    ("suffix", "text"), [(".jsonl", JSONL), (".csv", CSV)], ids=["jsonl", "csv"]
)
def test_both_formats_read_the_same_records(tmp_path: Path, suffix: str, text: str) -> None:
    path = tmp_path / f"t{suffix}"
    path.write_text(text)
    first, web = read_trace(path)  # sorted by arrival
    assert (first.arrival, first.lifetime, first.name) == (1.0, None, "")
    assert web.arrival == 5.0 and web.lifetime == 60.0 and web.priority == 10
    assert dict(web.requests) == {"cpu": "500m"} and dict(web.limits) == {"cpu": "1"}
    assert dict(web.labels) == {"app": "web"}
    assert {k: list(v) for k, v in web.affinity.items()} == {"zone": ["a", "b"]}
    pod = trace_pod(web, "web", {"metadata": {"namespace": "ns"}})
    assert pod["metadata"] == {"namespace": "ns", "name": "web", "labels": {"app": "web"}}
    assert pod["spec"]["priority"] == 10
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "500m"},
        "limits": {"cpu": "1"},
    }
    term = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "zone", "operator": "In", "values": ["a", "b"]}
    ]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"lifetime": 3}', "line 1.arrival"),
        ('{"arrival": -1}', "line 1.arrival"),
        ('{"arrival": 0, "lifetime": "soon"}', "line 1.lifetime"),
        ('{"arrival": 0, "requests": [1]}', "line 1.requests"),
        ('{"arrival": 0, "priority": "high"}', "line 1.priority"),
        ("not json", "line 1"),
    ],
    ids=["no-arrival", "negative", "bad-lifetime", "bad-requests", "bad-priority", "not-json"],
)
def test_a_bad_record_names_its_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InvalidObjectError) as err:
        read_trace(path)
    assert field in str(err.value)


def test_openb_import_maps_resources_times_and_gpu_models(tmp_path: Path) -> None:
    pods = tmp_path / "openb_pod_list.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n"
        "openb-pod-0001,8000,16384,1,500,T4|A10,LS,Succeeded,110,500,120\n"
        "openb-pod-0000,4000,8192,0,0,,Guaranteed,Running,100,,101\n"
    )
    nodes = tmp_path / "openb_node_list.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,4,T4\n")
    workload = load_workload(import_openb(pods, nodes, tmp_path / "out"))
    (node,) = workload.node_docs
    assert node["status"]["allocatable"][GPU_MILLI] == "4000"
    assert node["metadata"]["labels"][GPU_MODEL_LABEL] == "T4"
    (group,) = workload.pod_groups
    first, second = group.manifests()
    assert first["metadata"]["name"] == "openb-pod-0000"  # earliest creation first
    assert first["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "4000m",
        "memory": "8192Mi",
    }
    assert second["spec"]["containers"][0]["resources"]["requests"][GPU_MILLI] == "500"
    records = openb_records(pods)
    assert [(r.arrival, r.lifetime) for r in records] == [(0.0, None), (10.0, 380.0)]


def test_openb_import_names_a_missing_column(tmp_path: Path) -> None:
    pods = tmp_path / "p.csv"
    pods.write_text("name,cpu_milli\nx,1\n")
    with pytest.raises(InvalidObjectError, match="missing columns memory_mib"):
        openb_records(pods)


def test_the_shipped_openb_sample_replays_end_to_end(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    out = tmp_path / "imported"
    path = import_openb(SAMPLE / "openb_pod_list.csv", SAMPLE / "openb_node_list.csv", out)
    # The committed workload.yaml and pods.jsonl are this import's output.
    assert path.read_text() == (SAMPLE / "workload.yaml").read_text()
    assert (out / "pods.jsonl").read_text() == (SAMPLE / "pods.jsonl").read_text()
    records = read_trace(out / "pods.jsonl")
    result = run_evaluation(
        RunOptions(
            workload=str(path),
            seed=1,
            quiet=True,
            redis=redis_server.url,
            prefix="{openb}",
            clock="virtual",
            output=str(tmp_path / "report"),
        )
    )
    s = result.summary
    vt = s["virtual_time"]
    assert vt["arrivals"] == len(records) == s["pods"]
    assert s["scheduled"] + s["unschedulable"] == len(records)
    assert vt["completions"] == sum(1 for r in records if r.lifetime is not None)
    (group,) = s["groups"].values()
    assert group["completed"] == vt["completions"] and group["deleted"] == 0
    assert s["over_time"]["utilisation_max"]["cpu"] > 0
    assert json.loads((tmp_path / "report" / "summary.json").read_text())["clock"] == "virtual"
    page = (tmp_path / "report" / "report.html").read_text()
    assert 'id="utilisation_over_time"' in page and 'id="pending_over_time"' in page
    assert "<th>completed</th>" in page


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_an_empty_trace_is_refused(tmp_path: Path, suffix: str) -> None:
    """Issue 26: every file a command reads is refused when empty (a replay of nothing
    used to report an empty evaluation as a success)."""
    path = tmp_path / f"pods{suffix}"
    path.write_text("arrival,cpu\n" if suffix == ".csv" else "\n")
    with pytest.raises(InvalidObjectError, match=r"holds no records \(empty trace\)"):
        read_trace(path)
