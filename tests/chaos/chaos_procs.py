"""Plain ``cluster-sched serve`` processes on 127.0.0.1 for the chaos tests.

Each coordinator is a real process started as a deployment starts it (``python -m
cluster_sched.cli serve --redis URL``), with a configuration whose leader election is
fast (a lease of LEASE seconds) so a takeover happens within a test's patience. Every
process a test starts is registered with ``Procs`` and killed by pid when it ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
import yaml

from cluster_sched.store.kinds import StoreKeys
from cluster_sched.store.store import DEFAULT_PREFIX

#: Lease duration of the chaos coordinators (upstream's 15s would make tests crawl).
LEASE = 2.0
LEADER_ELECTION = {
    "leaderElect": True,
    "leaseDuration": f"{LEASE}s",
    "renewDeadline": "1500ms",
    "retryPeriod": "250ms",
}
#: Liveness bound on any wait (a loaded 2-core machine); never a timing assertion.
PATIENCE = 120.0
LEASE_KEY = StoreKeys(DEFAULT_PREFIX).lease("kube-system/kube-scheduler")


def write_config(tmp: Path, plugins: tuple[str, ...] = ()) -> Path:
    """The coordinators' configuration; ``plugins``: out-of-tree plugins (import paths)
    enabled in the default profile."""
    path = tmp / "scheduler.yaml"
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": LEADER_ELECTION,
    }
    if plugins:
        enabled = [{"name": name} for name in plugins]
        doc["profiles"] = [{"plugins": {"multiPoint": {"enabled": enabled}}}]
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def node_doc(i: int, cpu: str = "2") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod_doc(name: str, cpu: str = "200m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ]
        },
    }


class Procs:
    """Coordinator processes of one test, stopped by pid (never by name) at its end."""

    def __init__(self, redis_url: str, config: Path, log_dir: Path) -> None:
        self.redis_url = redis_url
        self.config = config
        self.log_dir = log_dir
        self.started: list[subprocess.Popen[bytes]] = []

    def serve(self, name: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        env.pop("CLUSTER_SCHED_REDIS_URL", None)
        argv = [sys.executable, "-m", "cluster_sched.cli", "serve", "--redis", self.redis_url]
        argv += ["--config", str(self.config), "--seed", "5"]
        with (
            open(self.log_dir / f"{name}.out", "wb") as out,
            open(self.log_dir / f"{name}.err", "wb") as err,
        ):
            proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        self.started.append(proc)
        return proc

    def stderr(self, name: str) -> str:
        return (self.log_dir / f"{name}.err").read_text(errors="replace")

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
        """SIGTERM (after SIGCONT, should it be paused, and once serve has installed its
        SIGTERM handler: ``catches_sigterm``), then the exit status."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            wait_until(
                "serve handles SIGTERM",
                lambda: proc.poll() is not None or catches_sigterm(proc.pid),
            )
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def close(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()


def catches_sigterm(pid: int) -> bool:
    """True once process ``pid`` has a SIGTERM handler (``SigCgt`` in /proc/PID/status).

    serve installs it after its imports; a SIGTERM sent before (a coordinator started
    together with the leader, still importing on a loaded machine once the leader had
    filled the cluster) kills it with -15 instead of the orderly exit 0 under test."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def wait_until(what: str, done: Callable[[], bool], procs: Procs | None = None) -> None:
    """Poll ``done`` until it holds; fail naming ``what`` after PATIENCE seconds."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting: {what}")


def lease(client: redis.Redis) -> dict[str, str]:
    raw: Any = client.hgetall(LEASE_KEY)
    return {k.decode(): v.decode() for k, v in raw.items()}


def bound_count(client: redis.Redis) -> int:
    """Pods with a spec.nodeName now."""
    from cluster_sched.store.store import Store

    return sum(1 for d in Store(client).list("Pod") if (d.get("spec") or {}).get("nodeName"))
