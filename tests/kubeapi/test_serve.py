"""``cluster-sched serve --api``: a pod created with kubectl is scheduled by the running
coordinator (NODE filled, a Scheduled event), one that fits nowhere gets FailedScheduling."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.kubeapi.kube_helpers import NODE, Kubectl, pod

#: Guards against a hung subprocess; never a performance assertion.
DEADLINE = 120.0


def _api_line(proc: subprocess.Popen[str]) -> dict[str, str]:
    assert proc.stderr is not None
    for line in proc.stderr:
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "api" in doc:
            return doc
    raise AssertionError(f"serve exited ({proc.wait()}) without announcing its API")


def _until(kubectl: Kubectl, *args: str, want: str) -> str:
    end = time.monotonic() + DEADLINE
    out = ""
    while time.monotonic() < end:
        out = kubectl.run(*args).stdout
        if want in out:
            return out
        time.sleep(0.2)
    raise AssertionError(f"kubectl {' '.join(args)} never showed {want!r}; last: {out}")


def test_serve_schedules_pods_created_through_the_api(redis_url: str, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    argv = [sys.executable, "-m", "cluster_sched.cli", "serve", "--redis", redis_url,
            "--api", "127.0.0.1:0", "--kubeconfig", str(kubeconfig)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        announced = _api_line(proc)
        assert announced["api"].startswith("https://127.0.0.1:")
        kubectl = Kubectl(str(kubeconfig), str(tmp_path / "cache"))
        manifest = tmp_path / "objects.yaml"
        manifest.write_text(yaml.safe_dump_all([NODE, pod("small"), pod("huge", cpu="64")]))
        kubectl.run("apply", "-f", str(manifest))
        wide = _until(kubectl, "get", "pods", "-o", "wide", want=" n1 ")
        assert any(row.split()[0] == "small" and " n1 " in row for row in wide.splitlines())
        _until(kubectl, "get", "events", want="Scheduled")
        described = _until(kubectl, "describe", "pod", "huge", want="FailedScheduling")
        assert "Insufficient cpu" in described
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_run_serves_its_store_while_it_lingers(tmp_path: Path) -> None:
    workload = Path(__file__).resolve().parents[2] / "examples" / "small-basic.yaml"
    kubeconfig = tmp_path / "kubeconfig"
    argv = [sys.executable, "-m", "cluster_sched.cli", "run", str(workload), "--quiet",
            "--api", "127.0.0.1:0", "--no-auth", "--kubeconfig", str(kubeconfig),
            "--api-linger", "600"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _api_line(proc)["api"].startswith("http://127.0.0.1:")
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("run finished"):
                break
        kubectl = Kubectl(str(kubeconfig), str(tmp_path / "cache"))
        rows = kubectl.run("get", "pods", "-A", "-o", "wide", "--no-headers").stdout.splitlines()
        assert rows and all(row.split()[7].startswith("node-") for row in rows)
        proc.send_signal(signal.SIGINT)  # ends the linger early; the summary follows
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "scheduled" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
