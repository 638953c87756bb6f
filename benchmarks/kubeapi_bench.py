"""The Kubernetes API's costs: listing 100,000 pods (JSON and Table), watch events per
second, and the scheduler's throughput with and without a watcher on the same store.

usage:
  python benchmarks/kubeapi_bench.py list [PODS]        # GET /api/v1/pods, JSON and Table
  python benchmarks/kubeapi_bench.py watch [EVENTS]     # one watcher following apply_many
  python benchmarks/kubeapi_bench.py run [ROUNDS] [WORKLOAD] [--pods N] [--lock PATH]
      # `cluster-sched run` in three modes per round, order rotated each round: no API,
      # --api with nobody watching, --api plus a pod watcher. WORKLOAD defaults to
      # SchedulingBasic (examples/scheduling-basic.yaml) with N measured pods (60,000:
      # ~20 s of scheduling, so start-up does not weigh on pods/s). Each round holds
      # --lock and starts with limit_probe; prints pods/s, the CPU per pod of the
      # coordinator, its redis-server, the API process and the watching client, checks
      # the watcher saw every pod ADDED then MODIFIED in resourceVersion order, and ends
      # with the per-round ratios' medians (watch/none pods/s, coordinator CPU/pod).

Figures on this shared machine drift: quote ranges over rounds, alternated old/new.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psutil
import yaml  # type: ignore[import-untyped, unused-ignore]

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


class _Watcher:
    """A pod watcher in this process: waits for the run's API, watches pods from the
    start and records each event's (type, resourceVersion, name). It reads the stream in
    blocks and parses every line with orjson (as a client library parses each event), so
    its own CPU competes as little as a real client's can with the run on a small machine."""

    def __init__(self) -> None:
        self.url = ""
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.events: list[tuple[str, int, str]] = []
        self.cpu_s: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.ready.wait()
        while not self.stop.is_set():
            try:
                self._follow()
                return
            except OSError:
                time.sleep(0.05)

    def _follow(self) -> None:
        url = f"{self.url}/api/v1/pods?watch=1&resourceVersion=1&timeoutSeconds=3600"
        with urllib.request.urlopen(url, timeout=3600) as resp:
            started = time.thread_time()
            rest = b""
            events = self.events
            while block := resp.read1(1 << 20):
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    event = orjson.loads(line)
                    meta = event["object"]["metadata"]
                    events.append(
                        (event["type"], int(meta.get("resourceVersion", 0)), meta["name"])
                    )
            self.cpu_s = time.thread_time() - started


def _check_watch(events: list[tuple[str, int, str]], pods: int) -> str:
    """Every pod ADDED once and then MODIFIED (bound), resourceVersions strictly
    increasing and consecutive (a SchedulingBasic run writes nothing but pods once its
    nodes are in, so a skipped version would be a lost event): what the watcher must
    have seen of a run that schedules ``pods`` pods."""
    rvs = [rv for _, rv, _ in events]
    ordered = all(a < b for a, b in itertools.pairwise(rvs))
    gaps = sum(1 for a, b in itertools.pairwise(rvs) if b != a + 1)
    added: set[str] = set()
    bound_after_added = True
    counts = {"ADDED": 0, "MODIFIED": 0, "DELETED": 0}
    for etype, _, name in events:
        counts[etype] = counts.get(etype, 0) + 1
        if etype == "ADDED":
            added.add(name)
        elif etype == "MODIFIED" and name not in added:
            bound_after_added = False
    complete = counts["ADDED"] == pods == len(added) and counts["MODIFIED"] >= pods
    ok = ordered and not gaps and complete and bound_after_added
    return (
        f"watcher saw {len(events)} events {counts}, rv increasing {ordered}, "
        f"{gaps} gaps in resourceVersions, every pod ADDED then MODIFIED "
        f"{bound_after_added and complete}: {'OK' if ok else 'FAILED'}"
    )


#: run modes: no API at all; the API with nobody watching; the API and a pod watcher
MODES = ("none", "api", "watch")
LIMIT_PROBE = Path("/work/shared/tools/limit_probe.py")
#: a round is "quiet" when no run of it shared the machine with more than this many
#: cores of other processes' work (2-core machine: the run itself needs about 1.2)
QUIET_CORES = 0.5
BASIC = Path(__file__).parent.parent / "examples" / "scheduling-basic.yaml"


@dataclass
class RunFigures:
    pods_s: float
    #: the coordinator's CPU per pod (the run's own "cpu ... per pod" line)
    coord_us: float
    #: the run's redis-server's CPU per scheduled pod over the whole run (loading,
    #: creating, scheduling, the summary's listing; the API's reads with --api)
    redis_us: float
    #: the API process's CPU per scheduled pod, from its announcement to the run's end
    api_us: float | None
    check: str = ""
    #: the watching client's own CPU per pod (its thread in this process)
    watcher_us: float | None = None
    #: the run's wall time, end to end (loading, creating, scheduling, summary)
    wall_s: float = 0.0
    #: cores busy with other processes than this benchmark's over the run (the machine
    #: is shared: a run slowed by a neighbour shows here, not as the watcher's cost)
    others_cores: float = 0.0


def _children(parent: int, marker: str) -> psutil.Process | None:
    try:
        children = psutil.Process(parent).children(recursive=True)
    except psutil.Error:
        return None
    for child in children:
        try:
            if marker in " ".join(child.cmdline()):
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


class _RedisCpu:
    """The run's redis-server's CPU, sampled until it exits with the run (its store
    ends with the run, so the last sample is its total)."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        redis = None
        while psutil.pid_exists(self.parent):
            redis = redis or _children(self.parent, "redis-server")
            self.seconds = max(self.seconds, _cpu(redis))
            time.sleep(0.05)


def _busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (guest time is inside user time)."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0) + getattr(t, "guest", 0.0)
    return float(sum(t) - idle - getattr(t, "guest_nice", 0.0))


def _own_seconds() -> float:
    """CPU seconds of this process and its reaped descendants (the run, its redis-server
    and API process are all waited for by the time a run is over)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _run(workload: str, mode: str) -> RunFigures:
    argv = [sys.executable, "-m", "cluster_sched.cli", "run", workload, "--quiet"]
    if mode != "none":
        argv += ["--api", "127.0.0.1:0", "--no-auth", "--api-linger", "1"]
    began, busy, own = time.perf_counter(), _busy_seconds(), _own_seconds()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    redis = _RedisCpu(proc.pid)
    watcher = _Watcher() if mode == "watch" else None
    if watcher is not None:
        watcher.thread.start()
    assert proc.stderr is not None
    api, api_start, api_cpu = None, 0.0, None
    for line in proc.stderr:
        if line.startswith("{") and '"api"' in line:
            api = _children(proc.pid, "cluster_sched.kubeapi.process")
            api_start = _cpu(api)
            if watcher is not None:
                watcher.url = json.loads(line)["api"]
                watcher.ready.set()
        elif line.startswith("run finished"):  # --api-linger: the API still up
            api_cpu = _cpu(api) - api_start
            break
    out, _ = proc.communicate()
    redis.thread.join(10)
    if watcher is not None:
        watcher.stop.set()
        watcher.ready.set()
        watcher.thread.join(10)
    wall = time.perf_counter() - began
    others = (_busy_seconds() - busy) - (_own_seconds() - own)
    match = re.search(r"throughput\s+([\d.,]+) pods/s", out)
    cpu = re.search(r"cpu\s+([\d.,]+) µs per pod", out)
    scheduled = re.search(r"scheduled\s+(\d+)", out)
    assert match and cpu and scheduled, out
    pods = max(int(scheduled.group(1)), 1)
    return RunFigures(
        float(match.group(1).replace(",", "")),
        float(cpu.group(1).replace(",", "")),
        redis.seconds * 1e6 / pods,
        None if api_cpu is None else api_cpu * 1e6 / pods,
        "" if watcher is None else _check_watch(watcher.events, pods),
        None if watcher is None or watcher.cpu_s is None else watcher.cpu_s * 1e6 / pods,
        wall,
        max(others, 0.0) / wall,
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


def basic_workload(pods: int, path: Path) -> Path:
    """examples/scheduling-basic.yaml (5,000 nodes, 1,000 initial pods) with ``pods``
    measured pods: long enough a run that start-up does not weigh on its pods/s."""
    doc = yaml.safe_load(BASIC.read_text())
    (measured,) = [g for g in doc["spec"]["podGroups"] if g["name"] == "measured"]
    measured["count"] = pods
    doc["metadata"]["name"] = f"scheduling-basic-{pods}"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@contextlib.contextmanager
def _locked(path: str | None) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (the machine's benchmark lock) for the block."""
    if not path:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def bench_run(rounds: int, workload: str, lock: str | None, offset: int = 0) -> None:
    """``rounds`` rounds of the three modes, the order rotated each round (no mode
    always runs first on a warmer or colder machine); each round holds ``lock`` and
    starts with its limit_probe. Then per-round ratios and their medians."""
    per_round: list[dict[str, RunFigures]] = []
    for r in range(offset, offset + rounds):
        with _locked(lock):
            load = os.getloadavg()[0]
            probe = _limit_probe() if LIMIT_PROBE.exists() else float("nan")
            print(f"round {r}: load {load:.2f}, limit_probe 5000 nodes {probe:,.0f} pods/s")
            figures: dict[str, RunFigures] = {}
            for mode in MODES[r % 3 :] + MODES[: r % 3]:
                f = figures[mode] = _run(workload, mode)
                line = (
                    f"round {r} {mode:5}: {f.pods_s:,.0f} pods/s "
                    f"({f.pods_s / probe:.3f} of limit_probe), CPU/pod: coordinator "
                    f"{f.coord_us:.0f} us, redis {f.redis_us:.0f} us"
                )
                if f.api_us is not None:
                    line += f", API process {f.api_us:.1f} us"
                if f.watcher_us is not None:
                    line += f", watching client {f.watcher_us:.1f} us"
                line += f"; {f.wall_s:.0f} s wall, other processes {f.others_cores:.2f} cores"
                print(line + (f"\n    {f.check}" if f.check else ""), flush=True)
        ratios = {
            "pods/s watch/none": figures["watch"].pods_s / figures["none"].pods_s,
            "pods/s watch/api": figures["watch"].pods_s / figures["api"].pods_s,
            "coordinator CPU/pod watch/none": figures["watch"].coord_us / figures["none"].coord_us,
        }
        print(f"round {r} ratios: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
        per_round.append(figures)
    quiet = [f for f in per_round if max(r.others_cores for r in f.values()) < QUIET_CORES]
    for label, chosen in (
        (f"over {rounds} rounds", per_round),
        (f"over the {len(quiet)} quiet rounds (other processes < {QUIET_CORES} cores)", quiet),
    ):
        if not chosen:
            continue
        print(f"{label} (median, then min .. max):")
        for name, num, den, attr in (
            ("pods/s watch/none", "watch", "none", "pods_s"),
            ("pods/s watch/api", "watch", "api", "pods_s"),
            ("pods/s api/none", "api", "none", "pods_s"),
            ("coordinator CPU/pod watch/none", "watch", "none", "coord_us"),
            ("redis CPU/pod watch/none", "watch", "none", "redis_us"),
        ):
            vals = [getattr(f[num], attr) / getattr(f[den], attr) for f in chosen]
            print(f"  {name}: {_median(vals):.3f} ({min(vals):.3f} .. {max(vals):.3f})")
    for mode in MODES:
        per = [f[mode] for f in per_round]
        extra = ""
        if mode != "none":
            extra += f", API process {_median([f.api_us or 0.0 for f in per]):.1f}"
        if mode == "watch":
            extra += f", watching client {_median([f.watcher_us or 0.0 for f in per]):.1f}"
        print(
            f"  {mode:5} median CPU/pod (us): coordinator {_median([f.coord_us for f in per]):.0f}"
            f", redis {_median([f.redis_us for f in per]):.1f}{extra}"
        )


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else "list"
    if what == "list":
        bench_list(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
    elif what == "watch":
        bench_watch(int(sys.argv[2]) if len(sys.argv) > 2 else 50_000)
    elif what == "run":
        p = argparse.ArgumentParser(prog="kubeapi_bench.py run")
        p.add_argument("rounds", type=int, nargs="?", default=5)
        p.add_argument("workload", nargs="?", default=None, help="default: --pods")
        p.add_argument(
            "--pods", type=int, default=60_000, help="measured pods (default %(default)s)"
        )
        p.add_argument("--lock", default=None, help="flock this file around each round")
        p.add_argument("--offset", type=int, default=0, help="first round's number (rotation)")
        args = p.parse_args(sys.argv[2:])
        with tempfile.TemporaryDirectory() as tmp:
            workload = args.workload or str(basic_workload(args.pods, Path(tmp) / "basic.yaml"))
            bench_run(args.rounds, workload, args.lock, args.offset)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
