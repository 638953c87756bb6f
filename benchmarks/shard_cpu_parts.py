"""Full ``cluster-sched run``s split into CPU per pod by process, over the scheduling window:
the parts of the reduced protocol's scaling model (``shard_protocol_bench.py --full``).

A child process runs one evaluation in-process (``cli_main``) with ``Coordinator.step``
wrapped to note the first and last turn that scheduled a pod, while a thread samples every
process of its tree once a second (CPU time, RSS): the coordinator (this process), the
shard actors, Redis and the rest (Ray's daemons and binding workers). CPU per pod of each
is its CPU between the two notes over the run's pods; the peak RSS is the tree's sum; the
cores other jobs on the machine took meanwhile (its non-idle CPU time minus the tree's).

Also reported (issue 22's start-up and memory figures):
- ``peak_rss_gib_by_kind``: per finer kind (``_rss_kind``: coordinator, redis, shards,
  raylet, gcs, binding workers, other Ray processes), the largest sum of that kind's RSS
  over the samples, and ``peak_rss_gib_largest`` the largest single process per kind;
- ``phases_s``: wall seconds of each start-up phase (``_PHASES``: the workload file
  parsed, the scheduler built with Ray's start and the shard actors' inside, the feeder
  process started and waited for while it writes the nodes, the coordinator's start
  with the informer's listing and the shards' preload inside), then start to first
  scheduling turn, the scheduling window, and the summary after the last turn;
  ``phases_timeline_s`` each phase's [first start, last end] from the run's start (what
  overlapped what); ``start_cpu_s_by_kind`` CPU seconds to the first turn by process
  kind (the feeder's apart); ``summary_parts_s`` the summary's parts (``_AFTER``);
  ``bound_over_time`` [seconds, pods bound] every PROGRESS_S (late rate against early).
A benchmark helper: it measures, asserts nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["child", "measure"]

SAMPLE_S = 0.25
#: seconds between two walks of the process tree (``_tree``). The sampler runs in the
#: coordinator's process and is charged to it: walking the tree (psutil reads every
#: process of the machine for its parent) and reading each process's command line at
#: every sample cost ~10 ms per sample under Ray (13 processes) against ~3.6 in-process,
#: ~26 ms of the coordinator's CPU per second more under Ray than in-process. Reading
#: known processes' CPU and RSS only costs ~1 ms per sample.
REFRESH_S = 1.0

#: a sampled process: its psutil handle, ``_kind`` and ``_rss_kind``
_Watched = tuple[Any, str, str]

#: seconds between two notes of the pods bound (``bound_over_time``: the rate late in a
#: long run against early)
PROGRESS_S = 5.0


def _kind(proc: Any, me: int) -> str:
    if proc.pid == me:
        return "coordinator"
    cmd = " ".join(proc.cmdline())
    if "ShardActor" in cmd:
        return "shards"
    if "redis-server" in proc.name():
        return "redis"
    return "other"


def _rss_kind(proc: Any, me: int) -> str:
    """Finer than ``_kind``: Ray's daemons and workers apart (memory per process kind)."""
    kind = _kind(proc, me)
    if kind != "other":
        return kind
    name = proc.name()
    cmd = " ".join(proc.cmdline())
    if "raylet" in name:
        return "raylet"
    if "gcs_server" in name:
        return "gcs"
    if "cluster_sched.workload.feeder" in cmd:
        return "feeder"
    if cmd.startswith("ray::") and "Agent" not in cmd and "Monitor" not in cmd:
        return "ray_workers"  # the binding tasks run in these
    return "other"


def _tree(me: Any, known: dict[int, _Watched]) -> dict[int, _Watched]:
    """The processes of ``me``'s tree with their kinds: one seen before keeps its psutil
    handle (reading its CPU reads no start time again). Kinds are read again at every
    walk: a Ray worker's command line changes after it starts (its title, set once it
    runs, then as it takes a task or becomes an actor). A process started between two
    walks is first sampled at the next (``REFRESH_S``): CPU per pod counts a process from
    0 when its first sample is in the window, so none of its CPU is lost unless it ends
    before it is seen."""
    import psutil

    out: dict[int, _Watched] = {}
    for proc in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            old = known.get(proc.pid)
            if old is not None and old[0] == proc:
                proc = old[0]
            out[proc.pid] = (proc, _kind(proc, me.pid), _rss_kind(proc, me.pid))
    return out


#: (phase, module, owner, attribute) wrapped with a timer by ``_time_phases``: start-up's
#: parts in the order they run. Nested ones are inside the one above them (``ray_start``
#: and ``shard_actors`` in ``new_scheduler``; ``nodes_written`` is the feeder's wait for
#: the child process's writes; ``listing`` and ``preload`` inside ``coordinator_start``)
_PHASES = (
    ("load_workload", "cluster_sched.workload.runner", None, "load_workload"),
    ("new_scheduler", "cluster_sched.workload.runner", None, "new_scheduler"),
    ("ray_start", "workers.ray_shard", None, "ensure_ray"),
    ("shard_actors", "cluster_sched.scheduler.assembly", None, "new_ray_shard_clients"),
    ("binding_executor", "cluster_sched.scheduler.assembly", None, "_binding_executor"),
    ("feeder_start", "cluster_sched.workload.feeder", "FeederProcess", "__init__"),
    ("feeder_submit", "cluster_sched.workload.feeder", "FeederProcess", "submit"),
    ("nodes_written", "cluster_sched.workload.feeder", "FeederProcess", "wait"),
    ("store_load", "cluster_sched.store.store", "Store", "apply_many"),
    ("coordinator_start", "cluster_sched.scheduler.coordinator", "Coordinator", "start"),
    ("listing", "cluster_sched.scheduler.informer", "Informer", "list_and_watch"),
    ("preload", "cluster_sched.scheduler.shards.source", "ShardedSource", "preload"),
    ("freeze", "cluster_sched.scheduler.coordinator", None, "freeze_started"),
    ("queue_run", "cluster_sched.queue.scheduling_queue", "SchedulingQueue", "run"),
)

#: the same after the last scheduling turn: the summary's parts
_AFTER = (
    ("stats_summary", "cluster_sched.scheduler.stats", "RunStats", "summary"),
    ("store_listing", "cluster_sched.workload.runner", None, "listing"),
    ("close", "cluster_sched.scheduler.coordinator", "Coordinator", "close"),
    ("collect_everything", "cluster_sched.workload.runner", None, "collect_everything"),
    (
        "final_record",
        "cluster_sched.workload.runner",
        None,
        "final_record",
    ),  # the collection inside since final_record releases
    ("report_summary", "cluster_sched.workload.runner", None, "report_summary"),
    ("over_time", "cluster_sched.workload.runner", None, "over_time_figures"),
)


def _time_phases(
    spans: dict[str, list[float]], steps: list[float], after: dict[str, list[float]]
) -> None:
    """Wrap each ``_PHASES`` callable so its calls before the first scheduling turn
    (``steps`` still empty) add to ``spans[phase]`` = [seconds, first start, last end],
    and each ``_AFTER`` one so its calls add to ``after[phase]``."""
    import importlib

    def wrap(phase: str, fn: Any, into: dict[str, list[float]], before: bool) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if before and steps:
                return fn(*args, **kwargs)
            t0 = time.time()
            try:
                return fn(*args, **kwargs)
            finally:
                t1 = time.time()
                span = into.setdefault(phase, [0.0, t0, t1])
                span[0] += t1 - t0
                span[2] = t1

        return timed

    for table, into, before in ((_PHASES, spans, True), (_AFTER, after, False)):
        for phase, module, owner, attr in table:
            try:
                target: Any = importlib.import_module(module)
            except ImportError:  # a checkout without it (Ray absent: a local run)
                continue
            if owner is not None:
                target = getattr(target, owner)
            if hasattr(target, attr):
                setattr(target, attr, wrap(phase, getattr(target, attr), into, before))


def child(workload: str, extra: list[str]) -> dict[str, Any]:
    """One run in this process (see the module docstring)."""
    import psutil

    from cluster_sched.cli import main as cli_main
    from cluster_sched.scheduler import coordinator as coordinator_module
    from cluster_sched.workload import runner as runner_module

    steps: list[float] = []
    step = coordinator_module.Coordinator.step

    progress: list[list[float]] = []  # [seconds since the start, pods bound] every ~5 s

    def noted(self: Any, *args: Any, **kwargs: Any) -> bool:
        got = step(self, *args, **kwargs)
        if got:
            now = time.time()
            if not steps:
                steps.extend((now, now))
            steps[1] = now
            if not progress or now - started - progress[-1][0] >= PROGRESS_S:
                progress.append([round(now - started, 2), len(self.stats.bound_node)])
        return got

    coordinator_module.Coordinator.step = noted  # type: ignore[method-assign]
    own: dict[str, int] = {}
    view = runner_module.informer_view

    def counted(informer: Any) -> Any:
        own.update(
            (k, int(getattr(informer, k)))
            for k in ("own_confirmed", "own_decoded", "relists")
            if hasattr(informer, k)
        )
        return view(informer)

    runner_module.informer_view = counted
    started = time.time()
    spans: dict[str, list[float]] = {}
    after: dict[str, list[float]] = {}
    _time_phases(spans, steps, after)
    samples: list[tuple[float, dict[int, tuple[str, float]]]] = []
    busy: list[float] = []  # the machine's non-idle CPU seconds at each sample
    peak = [0]
    kind_peak: dict[str, int] = {}
    largest: dict[str, int] = {}
    kinds: dict[int, str] = {}  # pid -> its _rss_kind
    done = threading.Event()

    def watch() -> None:
        me = psutil.Process()
        procs: dict[int, _Watched] = {}
        refreshed = -REFRESH_S
        while not done.is_set():
            if time.monotonic() - refreshed >= REFRESH_S:
                refreshed = time.monotonic()
                procs = _tree(me, procs)
            row, rss = {}, 0
            by_kind: dict[str, int] = {}
            for pid, (proc, kind, rss_kind) in procs.items():
                with contextlib.suppress(psutil.Error), proc.oneshot():
                    cpu = proc.cpu_times()
                    row[pid] = (kind, cpu.user + cpu.system)
                    one = proc.memory_info().rss
                    rss += one
                    by_kind[rss_kind] = by_kind.get(rss_kind, 0) + one
                    kinds[pid] = rss_kind
                    largest[rss_kind] = max(largest.get(rss_kind, 0), one)
            for kind, got in by_kind.items():
                kind_peak[kind] = max(kind_peak.get(kind, 0), got)
            t = psutil.cpu_times()
            busy.append(sum(t) - t.idle - getattr(t, "iowait", 0.0))
            samples.append((time.time(), row))
            peak[0] = max(peak[0], rss)
            done.wait(SAMPLE_S)

    threading.Thread(target=watch, daemon=True).start()
    with tempfile.TemporaryDirectory() as out:
        argv = ["run", workload, "--no-report", "--quiet", "--output", out, "--seed", "1"]
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main([*argv, *extra])
        done.set()
        ended = time.time()
        summary = json.loads((Path(out) / "summary.json").read_text())
    if rc != 0 or len(steps) < 2:
        raise SystemExit(f"cluster-sched run exited {rc}")

    # the sample at or before the first note; every process's last sample up to the last
    # note (a shard stopped right after it is still counted)
    i0 = max([i for i, (t, _) in enumerate(samples) if t <= steps[0]], default=0)
    i1 = max([i for i, (t, _) in enumerate(samples) if t <= steps[1]], default=len(samples) - 1)
    first = samples[i0][1]
    last: dict[int, tuple[str, float]] = {}
    for _, row in samples[i0 : i1 + 1]:
        last.update(row)
    pods = max(1, int(summary.get("pods") or 0))
    # CPU seconds by finer kind from the start to the first turn (who worked meanwhile)
    upto: dict[int, float] = {}
    for _, row in samples[: i0 + 1]:
        upto.update((pid, got) for pid, (_, got) in row.items())
    startup_cpu: dict[str, float] = {}
    for pid, got in upto.items():
        kind = kinds.get(pid, "other")
        startup_cpu[kind] = round(startup_cpu.get(kind, 0.0) + got, 1)
    cpu: dict[str, float] = {}
    for pid, (kind, t1) in last.items():
        cpu[kind] = cpu.get(kind, 0.0) + t1 - first.get(pid, (kind, 0.0))[1]
    span = max(samples[i1][0] - samples[i0][0], 1e-9)
    # cores the rest of the machine (other jobs) took meanwhile
    others = max(0.0, (busy[i1] - busy[i0] - sum(cpu.values())) / span)
    spec = summary.get("shard_speculation") or {}
    phases = {k: round(v[0], 2) for k, v in spans.items()}
    # each phase's [start, end] from the run's start: what overlapped what
    timeline = {k: [round(v[1] - started, 2), round(v[2] - started, 2)] for k, v in spans.items()}
    phases["start_to_first_turn"] = round(steps[0] - started, 2)
    phases["scheduling"] = round(steps[1] - steps[0], 2)
    phases["summary"] = round(ended - steps[1], 2)
    gib = 2**30
    return {
        "throughput": float(summary["throughput"]),
        "cpu_per_pod": {k: v / pods for k, v in cpu.items()},
        "peak_rss_gib": peak[0] / 2**30,
        "other_jobs_cores": others,
        "shard_wait_us_per_pod": spec.get("shard_wait_us_per_pod"),
        "reduced_attempts": spec.get("reduced_attempts"),
        "pods": pods,
        "scheduled": summary.get("scheduled"),
        #: the informer's own-binding watch entries: from their mark, decoded in full
        #: (a checkout without ``own_decoded``: scheduled - own_confirmed were decoded)
        "own_watch": own,
        "phases_s": phases,
        "phases_timeline_s": timeline,
        "bound_over_time": progress,
        "start_cpu_s_by_kind": startup_cpu,
        "summary_parts_s": {k: round(v[0], 2) for k, v in after.items()},
        "peak_rss_gib_by_kind": {k: round(v / gib, 3) for k, v in sorted(kind_peak.items())},
        "peak_rss_gib_largest": {k: round(v / gib, 3) for k, v in sorted(largest.items())},
    }


def measure(workload: Path, *extra: str) -> dict[str, Any]:
    """``child`` in a fresh process (each run its own Ray, its own heap)."""
    cmd = [sys.executable, __file__, str(workload), *extra]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], sys.argv[2:])))
