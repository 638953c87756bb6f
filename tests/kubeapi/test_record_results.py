"""``run --record-results SELECTOR --api``: pods scheduled during the run carry
kube-scheduler-simulator's result annotations, read with the official ``kubernetes``
client while the run lingers; pods outside the selector carry none; a selector that
does not parse is a one-line usage error (exit 2)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from cluster_sched.scheduler.explain import simulator as sim

WORKLOAD = {
    "apiVersion": "cluster-sched.io/v1alpha1",
    "kind": "Workload",
    "metadata": {"name": "record"},
    "spec": {
        "nodeGroups": [
            {
                "count": 3,
                "template": {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": "node"},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
                },
            }
        ],
        "podGroups": [
            {
                "name": group,
                "count": 4,
                "template": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": group, "namespace": "default", "labels": labels},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}
                        ]
                    },
                },
            }
            for group, labels in (("traced", {"trace": "yes"}), ("plain", {"trace": "no"}))
        ],
    },
}


def test_run_records_results_on_matching_pods(tmp_path: Path) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    kubeconfig = tmp_path / "kubeconfig"
    argv = [sys.executable, "-m", "cluster_sched.cli", "run", str(workload), "--quiet",
            "--record-results", "trace=yes", "--api", "127.0.0.1:0", "--no-auth",
            "--kubeconfig", str(kubeconfig), "--api-linger", "600"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("run finished"):
                break
        api_client = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        try:
            pods = k8s.CoreV1Api(api_client).list_namespaced_pod("default").items
        finally:
            api_client.close()
        traced = [p for p in pods if p.metadata.labels["trace"] == "yes"]
        plain = [p for p in pods if p.metadata.labels["trace"] == "no"]
        assert len(traced) == len(plain) == 4
        for p in traced:
            ann = p.metadata.annotations
            assert p.spec.node_name and ann[sim.SELECTED_NODE] == p.spec.node_name
            assert set(json.loads(ann[sim.FILTER])) == {"node-0", "node-1", "node-2"}
            assert set(json.loads(ann[sim.FINALSCORE])) == {"node-0", "node-1", "node-2"}
            assert json.loads(ann[sim.BIND]) == {"DefaultBinder": "success"}
            assert len(json.loads(ann[sim.HISTORY])) == 1
        for p in plain:
            assert p.spec.node_name
            assert not any(
                k.startswith("kube-scheduler-simulator") for k in p.metadata.annotations or {}
            )
        proc.send_signal(signal.SIGINT)  # ends the linger; the summary follows
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "scheduled" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_bad_selector_is_a_usage_error(tmp_path: Path) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    argv = [sys.executable, "-m", "cluster_sched.cli", "run", str(workload), "--quiet",
            "--record-results", "trace in (yes"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--record-results 'trace in (yes'" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
