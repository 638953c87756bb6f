"""The Kubernetes API's costs: listing 100,000 pods (JSON and Table), watch events per
second, and the scheduler's throughput with and without a watcher on the same store.

usage:
  python benchmarks/kubeapi_bench.py list [PODS]        # GET /api/v1/pods, JSON and Table
  python benchmarks/kubeapi_bench.py watch [EVENTS]     # one watcher following apply_many
  python benchmarks/kubeapi_bench.py run [ROUNDS] [WORKLOAD]
      # `cluster-sched run WORKLOAD` alternately without --api and with --api plus a pod
      # watcher; prints pods/s of each round, and checks the watcher saw every write of
      # the run's pods in resourceVersion order with no gap

Figures on this shared machine drift: quote ranges over rounds, alternated old/new.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from cluster_sched.kubeapi import ApiServer, ApiServerOptions
from cluster_sched.redis_server import RedisServer, connect
from cluster_sched.store.store import Store

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:06d}", "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
    }


def _get(url: str, accept: str = "application/json") -> tuple[float, int]:
    req = urllib.request.Request(url, headers={"Accept": accept})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as resp:
        data = resp.read()
    return time.perf_counter() - start, len(data)


def bench_list(pods: int) -> None:
    with RedisServer() as rs:
        store = Store(connect(rs.url))
        for start in range(0, pods, 2000):
            store.apply_many([_pod(i) for i in range(start, min(pods, start + 2000))])
        with ApiServer(store, ApiServerOptions(no_auth=True)) as api:
            for label, accept in (("json", "application/json"), ("table", TABLE)):
                for _ in range(3):
                    secs, size = _get(f"{api.url}/api/v1/pods", accept)
                    print(f"list {pods} pods as {label}: {secs:.2f} s, {size / 1e6:.1f} MB")


def bench_watch(events: int) -> None:
    """Replay: ``events`` writes are made first, then one watch from before them is timed
    until it has received them all (the API's window, encoding, HTTP and the client's
    JSON parsing; not the writer)."""
    with RedisServer() as rs:
        store = Store(connect(rs.url))
        store.apply(_pod(0))
        rv = store.resource_version()
        for s in range(1, events + 1, 2000):
            store.apply_many([_pod(i) for i in range(s, min(events, s + 1999) + 1)])
        with ApiServer(store, ApiServerOptions(no_auth=True)) as api:
            url = f"{api.url}/api/v1/pods?watch=1&resourceVersion={rv}"
            seen = 0
            start = time.perf_counter()
            with urllib.request.urlopen(url, timeout=600) as resp:
                for line in resp:
                    json.loads(line)
                    seen += 1
                    if seen >= events:
                        break
            elapsed = time.perf_counter() - start
            print(
                f"watch replay: {seen} events in {elapsed:.2f} s = {seen / elapsed:,.0f} events/s"
            )


def _watcher(
    kubeconfig_holder: dict[str, str], out: list[dict[str, Any]], stop: threading.Event
) -> None:
    """Wait for the run's API, then watch pods from the start and record every event."""
    url = ""
    while not stop.is_set() and not url:
        url = kubeconfig_holder.get("api", "")
        time.sleep(0.05)
    while not stop.is_set():
        try:
            with urllib.request.urlopen(
                f"{url}/api/v1/pods?watch=1&resourceVersion=1&timeoutSeconds=3600", timeout=3600
            ) as resp:
                for line in resp:
                    event = json.loads(line)
                    out.append(
                        {
                            "type": event["type"],
                            "rv": int(event["object"]["metadata"].get("resourceVersion", 0)),
                        }
                    )
                return
        except OSError:
            time.sleep(0.05)


def _run(workload: str, with_api: bool) -> tuple[float, float, list[dict[str, Any]]]:
    argv = [sys.executable, "-m", "cluster_sched.cli", "run", workload, "--quiet"]
    events: list[dict[str, Any]] = []
    holder: dict[str, str] = {}
    stop = threading.Event()
    if with_api:
        argv += ["--api", "127.0.0.1:0", "--no-auth", "--api-linger", "3"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    thread = None
    if with_api:
        thread = threading.Thread(target=_watcher, args=(holder, events, stop), daemon=True)
        thread.start()
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("{") and '"api"' in line:
                holder["api"] = json.loads(line)["api"]
                break
    out, _ = proc.communicate()
    stop.set()
    match = re.search(r"throughput\s+([\d.,]+) pods/s", out)
    cpu = re.search(r"cpu\s+([\d.,]+) µs per pod", out)
    assert match and cpu, out
    return float(match.group(1).replace(",", "")), float(cpu.group(1).replace(",", "")), events


def bench_run(rounds: int, workload: str) -> None:
    for r in range(rounds):
        for with_api in (False, True):
            pods_s, cpu_us, events = _run(workload, with_api)
            label = "with API + watcher" if with_api else "without API       "
            line = f"round {r} {label}: {pods_s:,.0f} pods/s, coordinator {cpu_us:.0f} us CPU/pod"
            if with_api:
                rvs = [e["rv"] for e in events]
                ordered = all(a < b for a, b in itertools.pairwise(rvs))
                types = {
                    t: sum(1 for e in events if e["type"] == t)
                    for t in ("ADDED", "MODIFIED", "DELETED")
                }
                line += f"; watcher saw {len(events)} events {types}, rv increasing: {ordered}"
            print(line, flush=True)


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else "list"
    if what == "list":
        bench_list(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
    elif what == "watch":
        bench_watch(int(sys.argv[2]) if len(sys.argv) > 2 else 50_000)
    elif what == "run":
        rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
        workload = (
            sys.argv[3]
            if len(sys.argv) > 3
            else str(Path(__file__).parent.parent / "examples" / "scheduling-basic.yaml")
        )
        bench_run(rounds, workload)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
