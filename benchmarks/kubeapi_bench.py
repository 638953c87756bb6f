"""The Kubernetes API's costs: listing 100,000 pods (JSON and Table), watch events per
second, and the scheduler's throughput with and without a watcher on the same store.

usage:
  python benchmarks/kubeapi_bench.py list [PODS]        # GET /api/v1/pods, JSON and Table
  python benchmarks/kubeapi_bench.py watch [EVENTS]     # one watcher following apply_many
  python benchmarks/kubeapi_bench.py run [ROUNDS] [WORKLOAD]
      # `cluster-sched run WORKLOAD` in three modes per round, order rotated each round:
      # no API, --api with nobody watching, --api plus a pod watcher; prints pods/s (and
      # as a fraction of the same round's limit_probe), the coordinator's and the API
      # process's CPU per pod, checks the watcher saw every write in resourceVersion
      # order, and ends with the watch/none and watch/api throughput ratio ranges

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

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
                started = time.thread_time()
                for line in resp:
                    event = json.loads(line)
                    out.append(
                        {
                            "type": event["type"],
                            "rv": int(event["object"]["metadata"].get("resourceVersion", 0)),
                        }
                    )
                kubeconfig_holder["watcher_cpu"] = str(time.thread_time() - started)
                return
        except OSError:
            time.sleep(0.05)


#: run modes: no API at all; the API with nobody watching; the API and a pod watcher
MODES = ("none", "api", "watch")
LIMIT_PROBE = Path("/work/shared/tools/limit_probe.py")


@dataclass
class RunFigures:
    pods_s: float
    #: the coordinator's CPU per pod (the run's own "cpu ... per pod" line)
    coord_us: float
    #: the API process's CPU per scheduled pod, from its announcement to the run's end
    api_us: float | None
    events: list[dict[str, Any]]
    #: the watching client's own CPU per pod (its thread in this process)
    watcher_us: float | None = None


def _api_child(parent: int) -> psutil.Process | None:
    for child in psutil.Process(parent).children(recursive=True):
        try:
            if "cluster_sched.kubeapi.process" in " ".join(child.cmdline()):
                return child
        except psutil.Error:
            continue
    return None


def _cpu(proc: psutil.Process | None) -> float:
    if proc is None:
        return 0.0
    try:
        t = proc.cpu_times()
    except psutil.Error:
        return 0.0
    return float(t.user + t.system)


def _run(workload: str, mode: str) -> RunFigures:
    argv = [sys.executable, "-m", "cluster_sched.cli", "run", workload, "--quiet"]
    events: list[dict[str, Any]] = []
    holder: dict[str, str] = {}
    stop = threading.Event()
    if mode != "none":
        argv += ["--api", "127.0.0.1:0", "--no-auth", "--api-linger", "2"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    api_cpu: float | None = None
    thread = None
    if mode != "none":
        if mode == "watch":
            thread = threading.Thread(target=_watcher, args=(holder, events, stop), daemon=True)
            thread.start()
        assert proc.stderr is not None
        child, started = None, 0.0
        for line in proc.stderr:
            if line.startswith("{") and '"api"' in line:
                child = _api_child(proc.pid)
                started = _cpu(child)
                holder["api"] = json.loads(line)["api"]
            elif line.startswith("run finished"):
                api_cpu = _cpu(child) - started
                break
    out, _ = proc.communicate()
    stop.set()
    match = re.search(r"throughput\s+([\d.,]+) pods/s", out)
    cpu = re.search(r"cpu\s+([\d.,]+) µs per pod", out)
    scheduled = re.search(r"scheduled\s+(\d+)", out)
    assert match and cpu and scheduled, out
    pods = int(scheduled.group(1))
    if mode == "watch" and thread is not None:
        thread.join(10)
    watcher = holder.get("watcher_cpu")
    return RunFigures(
        float(match.group(1).replace(",", "")),
        float(cpu.group(1).replace(",", "")),
        None if api_cpu is None else api_cpu * 1e6 / max(pods, 1),
        events,
        None if watcher is None else float(watcher) * 1e6 / max(pods, 1),
    )


def _limit_probe() -> float:
    """The same-run reference: limit_probe's pods/s (5,000 nodes, numpy)."""
    out = subprocess.run(
        [sys.executable, str(LIMIT_PROBE), "5000", "3000", "numpy"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(re.findall(r"[\d.]+", out.replace(",", ""))[-1])


def bench_run(rounds: int, workload: str) -> None:
    """``rounds`` rounds of the three modes, the order rotated each round (no mode
    always runs first on a warmer or colder machine); then the ratios per round."""
    per_round: list[dict[str, RunFigures]] = []
    for r in range(rounds):
        probe = _limit_probe() if LIMIT_PROBE.exists() else float("nan")
        print(f"round {r}: limit_probe 5000 nodes {probe:,.0f} pods/s", flush=True)
        figures: dict[str, RunFigures] = {}
        for mode in MODES[r % 3 :] + MODES[: r % 3]:
            f = figures[mode] = _run(workload, mode)
            line = (
                f"round {r} {mode:5}: {f.pods_s:,.0f} pods/s "
                f"({f.pods_s / probe:.3f} of limit_probe), coordinator {f.coord_us:.0f} us CPU/pod"
            )
            if f.api_us is not None:
                line += f", API process {f.api_us:.0f} us CPU/pod"
            if f.watcher_us is not None:
                line += f", watching client {f.watcher_us:.0f} us CPU/pod"
            if mode == "watch":
                rvs = [e["rv"] for e in f.events]
                ordered = all(a < b for a, b in itertools.pairwise(rvs))
                types = {
                    t: sum(1 for e in f.events if e["type"] == t)
                    for t in ("ADDED", "MODIFIED", "DELETED")
                }
                line += f"; watcher saw {len(f.events)} events {types}, rv increasing: {ordered}"
            print(line, flush=True)
        per_round.append(figures)
    for name, base in (("watch/none", "none"), ("watch/api", "api")):
        ratios = [f["watch"].pods_s / f[base].pods_s for f in per_round]
        print(f"throughput {name}: {min(ratios):.3f} .. {max(ratios):.3f} over {rounds} rounds")


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else "list"
    if what == "list":
        bench_list(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
    elif what == "watch":
        bench_watch(int(sys.argv[2]) if len(sys.argv) > 2 else 50_000)
    elif what == "run":
        rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
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
