"""``run --metrics-port``: every upstream metric, with its labels and buckets, after a
real run; the port serves them; a busy port is one line and exit 2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from cluster_sched.cli import EXIT_USAGE, main
from cluster_sched.telemetry.metrics import (
    EXTENSION_POINT_BUCKETS,
    LATENCY_BUCKETS,
    PLUGIN_BUCKETS,
    POD_ATTEMPTS_BUCKETS,
    SLI_BUCKETS,
    VICTIM_BUCKETS,
    Metrics,
)
from cluster_sched.testing import make_node, make_pod
from cluster_sched.workload.runner import RunOptions, run_evaluation


def _template(builder: Any) -> dict[str, Any]:
    doc: dict[str, Any] = builder.manifest()
    doc["metadata"].pop("namespace", None)
    return doc


def _workload(path: Path) -> Path:
    """Two 2-cpu nodes filled by low pods; a high pod that preempts; a pod too big for
    any node (NodeResourcesFit); a gated pod."""
    groups = [
        ("low", 4, make_pod("low").req(cpu="1").priority(0)),
        ("high", 1, make_pod("high").req(cpu="2").priority(100)),
        ("huge", 1, make_pod("huge").req(cpu="64")),
        ("gated", 1, make_pod("gated").req(cpu="1").scheduling_gates("example.com/gate")),
    ]
    doc = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "metrics"},
        "spec": {
            "nodeGroups": [
                {"count": 2, "template": _template(make_node("n").capacity(cpu="2", pods=110))}
            ],
            "podGroups": [{"name": n, "count": c, "template": _template(b)} for n, c, b in groups],
        },
    }
    path.write_text(yaml.safe_dump(doc))
    return path


Samples = dict[str, list[tuple[dict[str, str], float]]]


def _samples(text: str) -> tuple[Samples, dict[str, str]]:
    samples: Samples = {}
    kinds: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        kinds[family.name] = family.type
        for s in family.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))
    return samples, kinds


def _label_names(samples: Samples, name: str) -> set[str]:
    return {k for labels, _ in samples[name] for k in labels} - {"le"}


def _buckets(samples: Samples, name: str) -> tuple[float, ...]:
    first = samples[name + "_bucket"][0][0]
    series = [
        float(labels["le"])
        for labels, _ in samples[name + "_bucket"]
        if {k: v for k, v in labels.items() if k != "le"}
        == {k: v for k, v in first.items() if k != "le"}
    ]
    return tuple(series[:-1])  # +Inf last


@pytest.fixture(scope="module")
def run_text(tmp_path_factory: pytest.TempPathFactory, redis_server: Any) -> Iterator[str]:
    """One real run for the module (the private server, a key prefix of its own)."""
    redis_url = redis_server.url
    path = _workload(tmp_path_factory.mktemp("wl") / "workload.yaml")
    metrics = Metrics()
    run_evaluation(
        RunOptions(
            str(path),
            seed=1,
            quiet=True,
            redis=redis_url,
            prefix="{run-metrics}",
            group_timeout=60,
            metrics=metrics,
        )
    )
    yield metrics.exposition().decode()


HISTOGRAMS = [
    ("scheduler_scheduling_attempt_duration_seconds", {"result", "profile"}, LATENCY_BUCKETS),
    ("scheduler_scheduling_algorithm_duration_seconds", set(), LATENCY_BUCKETS),
    (
        "scheduler_framework_extension_point_duration_seconds",
        {"extension_point", "status", "profile"},
        EXTENSION_POINT_BUCKETS,
    ),
    ("scheduler_preemption_victims", set(), VICTIM_BUCKETS),
    ("scheduler_pod_scheduling_attempts", set(), POD_ATTEMPTS_BUCKETS),
    ("scheduler_pod_scheduling_sli_duration_seconds", {"attempts"}, SLI_BUCKETS),
    ("scheduler_event_handling_duration_seconds", {"event"}, EXTENSION_POINT_BUCKETS),
]


@pytest.mark.parametrize(
    ("name", "labels", "buckets"),
    HISTOGRAMS,
    ids=[h[0].removeprefix("scheduler_") for h in HISTOGRAMS],
)
def test_run_histograms_have_upstream_labels_and_buckets(
    run_text: str, name: str, labels: set[str], buckets: tuple[float, ...]
) -> None:
    samples, kinds = _samples(run_text)
    assert kinds[name] == "histogram"
    assert _label_names(samples, name + "_count") == labels
    assert _buckets(samples, name) == pytest.approx(buckets)


def test_run_counts_preemption_on_every_post_filter(run_text: str) -> None:
    samples, _ = _samples(run_text)
    attempts = samples["scheduler_preemption_attempts_total"][0][1]
    victims = samples["scheduler_preemption_victims_count"][0][1]
    unschedulable = sum(
        v
        for labels, v in samples["scheduler_schedule_attempts_total"]
        if labels["result"] == "unschedulable"
    )
    # The huge pod's attempts run PostFilter and find nothing: counted all the same.
    assert victims >= 1
    assert attempts == unschedulable > victims


def test_run_serves_state_gauges_and_plugin_counters(run_text: str) -> None:
    samples, kinds = _samples(run_text)
    pending = {labels["queue"]: v for labels, v in samples["scheduler_pending_pods"]}
    assert pending == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 1}
    reasons = {
        (labels["plugin"], labels["profile"]): v
        for labels, v in samples["scheduler_unschedulable_pods"]
    }
    assert reasons == {("NodeResourcesFit", "default-scheduler"): 1}
    cache = {labels["type"]: v for labels, v in samples["scheduler_scheduler_cache_size"]}
    assert cache == {"nodes": 2, "pods": 3, "assumed_pods": 0}  # 2 lows survive + high
    assert kinds["scheduler_inflight_events"] == "gauge"
    assert samples["scheduler_inflight_events"] == [({"event": "PodPopped"}, 0)]
    evaluated = {
        (labels["plugin"], labels["extension_point"])
        for labels, _ in samples["scheduler_plugin_evaluation_total"]
    }
    assert {("NodeResourcesFit", "PreFilter"), ("NodeResourcesFit", "Filter")} <= evaluated
    assert _label_names(samples, "scheduler_plugin_evaluation_total") == {
        "plugin",
        "extension_point",
        "profile",
    }
    incoming = {
        (labels["queue"], labels["event"])
        for labels, _ in samples["scheduler_queue_incoming_pods_total"]
    }
    assert ("active", "UnschedulablePodAdd") in incoming
    assert ("unschedulable", "UnschedulablePodAdd") in incoming  # the gated pod
    assert ("unschedulable", "ScheduleAttemptFailure") in incoming  # the huge pod
    events = {
        labels["event"] for labels, _ in samples["scheduler_event_handling_duration_seconds_count"]
    }
    assert {"NodeAdd", "UnschedulablePodAdd", "AssignedPodAdd", "AssignedPodDelete"} <= events
    bind = [
        labels
        for labels, _ in samples["scheduler_framework_extension_point_duration_seconds_count"]
        if labels["extension_point"] == "Bind"
    ]
    assert bind and all(b["status"] == "Success" for b in bind)


def test_plugin_and_permit_histograms_have_upstream_labels_and_buckets() -> None:
    """Sampled (10 % of cycles) and Permit waits need an observation to show their
    series; their layout is checked on one."""
    m = Metrics()
    m.observe_plugin("NodeResourcesFit", "Filter", "Success", 0.00001)
    m.observe_permit_wait("Success", 0.1)
    samples, _ = _samples(m.exposition().decode())
    name = "scheduler_plugin_execution_duration_seconds"
    assert _label_names(samples, name + "_count") == {"plugin", "extension_point", "status"}
    assert _buckets(samples, name) == pytest.approx(PLUGIN_BUCKETS)
    assert len(PLUGIN_BUCKETS) == 20 and PLUGIN_BUCKETS[-1] == pytest.approx(0.0221684, rel=1e-5)
    name = "scheduler_permit_wait_duration_seconds"
    assert _label_names(samples, name + "_count") == {"result"}
    assert _buckets(samples, name) == pytest.approx(LATENCY_BUCKETS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_metrics_port_serves_until_linger_ends(tmp_path: Path, redis_url: str) -> None:
    path = _workload(tmp_path / "workload.yaml")
    port = _free_port()
    cmd = [sys.executable, "-m", "cluster_sched.cli", "run", str(path), "--quiet"]
    cmd += ["--redis", redis_url, "--metrics-port", str(port), "--metrics-linger", "300"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ.copy()
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the summary's last line: the run is over
            if line.startswith("attempts/pod"):
                break
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    _, kinds = _samples(body)
    for name in (
        "scheduler_plugin_execution_duration_seconds",
        "scheduler_pod_scheduling_sli_duration_seconds",
        "scheduler_unschedulable_pods",
        "scheduler_plugin_evaluation",
        "scheduler_scheduler_cache_size",
        "scheduler_permit_wait_duration_seconds",
        "scheduler_event_handling_duration_seconds",
        "scheduler_inflight_events",
        "scheduler_queue_incoming_pods",
        "scheduler_pending_pods",
        "scheduler_preemption_attempts",
        "scheduler_preemption_victims",
        "scheduler_framework_extension_point_duration_seconds",
    ):
        assert name in kinds, name
    assert 'scheduler_pending_pods{queue="gated"} 1.0' in body


def test_run_on_a_busy_metrics_port_is_one_line(
    tmp_path: Path, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _workload(tmp_path / "workload.yaml")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(
            ["run", str(path), "--quiet", "--redis", redis_url, "--metrics-port", str(port)]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE
    assert err == [f"error: --metrics-port {port}: address already in use"]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (
            ["--metrics-port", "0", "--metrics-linger", "-1"],
            "error: cluster-sched run: argument --metrics-linger: must be 0 or more seconds, "
            "got -1 (see cluster-sched run --help)",
        ),
        (
            ["--metrics-linger", "5"],
            "error: --metrics-linger does nothing without --metrics-port: leave it out",
        ),
    ],
    ids=["negative", "without-port"],
)
def test_run_rejects_a_bad_linger(
    tmp_path: Path,
    redis_url: str,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    error: str,
) -> None:
    path = _workload(tmp_path / "workload.yaml")
    assert main(["run", str(path), "--redis", redis_url, *options]) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines() == [error]
