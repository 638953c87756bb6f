"""One ``cluster-sched run`` (or ``perf``) in-process, with the process's CPU time: pods/s
(``perf``: upstream's SchedulingThroughput of the measured pods) and CPU seconds per pod
(user + system of this process, which holds the coordinator, its binding threads and the
in-process executor; the Redis server is another process), and in brackets the same over
the loop alone (``run_workload``: feeding, scheduling, binding; without start-up, the
record and the report), and the longest time between two binds (a stall shows there).
The pods are written by the feeder process unless ``--feeder inline`` (issue 23): its
CPU is the client's, not the coordinator's, and is printed beside it ("feeder"), not
hidden; a checkout without a feeder process prints none.
For alternating old and new checkouts run by run:

    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/cpu_run.py run examples/topology-spreading.yaml
    .venv/bin/python benchmarks/cpu_run.py run examples/scheduling-basic.yaml --waits
    .venv/bin/python benchmarks/cpu_run.py perf examples/scheduler_perf/performance-config.yaml \
        --test TopologySpreading --workload 5000Nodes

``--waits`` (after the workload) also prints the loop thread's wall time per pod inside
its Redis calls, by call site (pops, queue adds and give-backs, watch reads, the
feeder's writes): how long the loop waits for Redis, there and in all. The
process is GIL-bound: what the loop stops waiting for, the other threads' CPU fills
(issue 23; the calls a checkout lacks are left out).

A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cluster_sched.cli import main as cli_main
from cluster_sched.report import summary as summary_module
from cluster_sched.workload import runner as runner_module

_group_figures = summary_module.group_figures


#: the longest time between two consecutive binds of the run (issue 23 item 4: no stall)
_longest_gap = [0.0]


def _with_last_bind(record: Any) -> dict[str, dict[str, object]]:
    """``group_figures`` plus each group's last bind (``stats.bound_at``), so a group's
    rate is its pods over the time since the previous group's last bind."""
    out = _group_figures(record)
    times = sorted(record.stats.bound_at.values())
    _longest_gap[0] = max((b - a for a, b in itertools.pairwise(times)), default=0.0)
    for name, keys in record.groups.items():
        ends = [record.stats.bound_at[k] for k in keys if k in record.stats.bound_at]
        out[name]["last_bind"] = max(ends, default=float("nan"))
    return out


summary_module.group_figures = _with_last_bind  # type: ignore[assignment]

#: CPU seconds of this process spent inside ``run_workload`` (the loop: feeding,
#: scheduling, binding; not start-up, the record or the report), summed over calls.
_loop_cpu = [0.0]
_run_workload = runner_module.run_workload


#: the informer's own-binding counters after the loop (``own_counts``)
_own: dict[str, int] = {}


def own_counts(informer: Any) -> dict[str, int]:
    """The informer's watch entries of our own bindings: applied from their mark
    (``own_confirmed``) and decoded in full (``own_decoded``; a checkout without that
    counter leaves it out: every binding of ours not confirmed was decoded)."""
    return {
        k: int(getattr(informer, k))
        for k in ("own_confirmed", "own_decoded", "relists")
        if hasattr(informer, k)
    }


def _timed_run_workload(*args: Any, **kwargs: Any) -> None:
    cpu0 = _cpu()
    try:
        _run_workload(*args, **kwargs)
    finally:
        _loop_cpu[0] += _cpu() - cpu0
        coord = args[1] if len(args) > 1 else kwargs.get("coord")
        for k, v in own_counts(getattr(coord, "informer", None)).items():
            _own[k] = _own.get(k, 0) + v


runner_module.run_workload = _timed_run_workload

#: CPU seconds of the feeder processes (the workload's client), summed over runs
_feeder_cpu = [0.0]


def _count_feeder_cpu() -> bool:
    """Add each feeder process's CPU to ``_feeder_cpu`` when it is closed; False for a
    checkout without one."""
    try:
        from cluster_sched.workload import feeder
    except ImportError:
        return False
    close = feeder.FeederProcess.close

    def counted(self: Any) -> None:
        close(self)
        _feeder_cpu[0] += self.cpu_seconds

    feeder.FeederProcess.close = counted  # type: ignore[method-assign]
    return True


_HAS_FEEDER = _count_feeder_cpu()


#: wall seconds the loop thread spent inside each timed Redis call site (``--waits``)
_waits: dict[str, float] = {}


def _time_waits() -> None:
    """Wrap the loop thread's Redis call sites with a wall-clock timer (``--waits``)."""
    import threading

    from cluster_sched.queue.scripts import QueueScripts
    from cluster_sched.scheduler import informer
    from cluster_sched.store import streams
    from cluster_sched.store.store import Store

    loop = threading.main_thread()

    def timed(owner: Any, name: str, label: str) -> None:
        call = getattr(owner, name, None)
        if call is None:
            return

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not loop:
                return call(*args, **kwargs)
            began = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                _waits[label] = _waits.get(label, 0.0) + time.perf_counter() - began

        setattr(owner, name, wrapper)

    timed(QueueScripts, "pop_many", "pop")
    timed(QueueScripts, "add", "queue add")
    timed(QueueScripts, "add_args", "queue add")
    timed(QueueScripts, "unpop", "give back")
    timed(Store, "apply_many", "writes (feeder, nodes)")
    if hasattr(informer, "read_entries"):
        timed(streams, "read_entries", "watch read")
        informer.read_entries = streams.read_entries  # type: ignore[attr-defined]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _perf(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as out:
        cpu0, wall0 = _cpu(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(["perf", *argv, "--output", out])
        cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
        if rc != 0:
            raise SystemExit(f"cluster-sched perf exited {rc}")
        for path in sorted(Path(out).glob("*.json")):
            doc = json.loads(path.read_text())
            items = doc.get("dataItems", doc) if isinstance(doc, dict) else doc
            throughput = [
                d.get("data", {})
                for d in items
                if isinstance(d, dict)
                and d.get("labels", {}).get("Metric") == "SchedulingThroughput"
            ]
            print(
                f"{path.stem}: throughput {json.dumps(throughput)}, wall {wall:.1f} s, "
                f"CPU {cpu:.1f} s{_feeder_text(None)}"
            )
    return 0


def _feeder_text(pods: int | None) -> str:
    """The feeder process's CPU (seconds, per pod if ``pods``), when there was one."""
    if not _HAS_FEEDER or _feeder_cpu[0] == 0.0:
        return ""
    if pods is None:
        return f", feeder process CPU {_feeder_cpu[0]:.1f} s"
    return f", feeder process CPU {_feeder_cpu[0]:.1f} s = {1e6 * _feeder_cpu[0] / max(pods, 1):.0f} us/pod"


USAGE = (
    "usage: cpu_run.py run WORKLOAD [--waits] [run options] | cpu_run.py perf CONFIG [perf options]"
)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("run", "perf"):
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] == "perf":
        return _perf(argv[1:])
    workload, extra = argv[1], argv[2:]
    if "--waits" in extra:
        extra = [a for a in extra if a != "--waits"]
        _time_waits()
    with tempfile.TemporaryDirectory() as out:
        cpu0, wall0 = _cpu(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(["run", workload, "--output", out, "--quiet", *extra])
        cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
        if rc != 0:
            raise SystemExit(f"cluster-sched run exited {rc}")
        summary = json.loads((Path(out) / "summary.json").read_text())
    pods = int(summary["pods"])
    groups = summary.get("groups") or {}
    rates = []
    prev = None
    for name, g in groups.items():
        end = float(g.get("last_bind", float("nan")))
        if prev is not None:
            rates.append(f"{name} {int(g['scheduled']) / (end - prev):.0f} pods/s")
        prev = end
    per_group = ", ".join(rates) or "-"
    print(
        f"{Path(workload).name}: {summary['scheduled']}/{pods} pods, "
        f"{float(summary['throughput']):.1f} pods/s [{per_group}], wall {wall:.1f} s, "
        f"CPU {cpu:.1f} s = {1e6 * cpu / max(pods, 1):.0f} us/pod "
        f"(loop {1e6 * _loop_cpu[0] / max(pods, 1):.0f}){_feeder_text(pods)}, "
        f"longest gap between binds {1e3 * _longest_gap[0]:.0f} ms, "
        f"compiled {json.dumps(summary.get('compiled_path'))}, "
        f"own-binding watch entries {json.dumps(_own)} of {summary['scheduled']} bound"
    )
    if _waits:
        parts = ", ".join(f"{k} {1e6 * v / max(pods, 1):.0f}" for k, v in _waits.items())
        print(
            f"loop thread inside Redis calls, us/pod: {parts}; all {1e6 * sum(_waits.values()) / max(pods, 1):.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
