"""``cluster-sched compare``: every (workload, config, seed) as an independent evaluation.

Each evaluation is a whole ``run_evaluation`` with its own private redis-server
(``redis_server.redis_session``), so evaluations share nothing and may run anywhere:

- ``--executor ray``: one Ray task per evaluation (``ray.init`` locally, or joining
  ``--ray-address``): a sweep scales out with the cluster. A task gets file paths and
  numbers, and returns its result as msgpack bytes (no user object is pickled);
- ``--executor local --parallel N``: N worker processes at a time
  (``python -m cluster_sched.workload.compare``, the job as JSON on stdin, the result as
  msgpack on stdout); ``--parallel 1`` runs them one after another in this process.

The results are gathered in job order, whatever order they finish in, so the report is
the same for every executor: ``DIR/compare.json`` (``report.compare.aggregate``) and
``DIR/compare.html`` (``report.compare_render``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import msgpack

from cluster_sched.errors import UsageError

__all__ = ["CompareOptions", "EvalJob", "evaluate", "jobs_for", "run_compare"]

SWEEP_EXECUTORS = ("local", "ray")


@dataclass(frozen=True, slots=True)
class EvalJob:
    """One evaluation: plain strings and numbers (what crosses to a task or process)."""

    workload: str
    config: str | None
    seed: int | None
    clock: str = "real"
    horizon: float | None = None
    feature_gates: str | None = None


@dataclass(slots=True)
class CompareOptions:
    workloads: list[str]
    configs: list[str]
    seeds: list[int]
    output: str
    executor: str = "local"
    parallel: int = 1
    ray_address: str | None = None
    clock: str = "real"
    horizon: float | None = None
    feature_gates: str | None = None


def jobs_for(opts: CompareOptions) -> list[EvalJob]:
    """Workload-major, then config, then seed: the order of compare.json's runs."""
    if not opts.configs:
        raise UsageError("compare needs at least one --config")
    return [
        EvalJob(w, c, s, opts.clock, opts.horizon, opts.feature_gates)
        for w in opts.workloads
        for c in opts.configs
        for s in opts.seeds
    ]


def evaluate(job: dict[str, Any]) -> bytes:
    """Run one evaluation; its ``run_digest`` and identity as msgpack bytes."""
    from cluster_sched.report.compare import run_digest
    from cluster_sched.workload.runner import RunOptions, run_evaluation

    e = EvalJob(**job)
    result = run_evaluation(
        RunOptions(
            workload=e.workload,
            config=e.config,
            seed=e.seed,
            quiet=True,
            report=False,
            clock=e.clock,
            horizon=e.horizon,
            feature_gates=e.feature_gates,
        )
    )
    out = run_digest(result.summary, result.placements, result.record)
    out.update(
        workload=str(result.summary.get("workload") or Path(e.workload).stem),
        workload_file=e.workload,
        config=_config_label(e.config),
        seed=e.seed,
    )
    return msgpack.packb(out, use_bin_type=True)


def _config_label(config: str | None) -> str:
    return Path(config).stem if config else "default"


def _run_local(jobs: Sequence[EvalJob], parallel: int) -> list[bytes]:
    if parallel <= 1:
        return [evaluate(asdict(j)) for j in jobs]

    def in_process(job: EvalJob) -> bytes:
        done = subprocess.run(
            [sys.executable, "-m", "cluster_sched.workload.compare"],
            input=json.dumps(asdict(job)).encode(),
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(f"evaluation {job} failed: " + " | ".join(tail))
        return done.stdout

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(in_process, jobs))


def _run_ray(jobs: Sequence[EvalJob], address: str | None) -> list[bytes]:
    import ray

    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        task = ray.remote(num_cpus=1)(evaluate)
        refs = [task.remote(asdict(j)) for j in jobs]
        return list(ray.get(refs))
    finally:
        if started:
            ray.shutdown()


def run_compare(
    opts: CompareOptions, *, report: bool = True, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run the sweep and write ``compare.json`` (and ``compare.html`` if ``report``)."""
    from cluster_sched.report.compare import aggregate

    if opts.executor not in SWEEP_EXECUTORS:
        raise UsageError(f"--executor must be local or ray, got {opts.executor!r}")
    labels = [_config_label(c) for c in opts.configs]
    if len(set(labels)) != len(labels):
        raise UsageError(f"--config files need distinct names, got {', '.join(labels)}")
    jobs = jobs_for(opts)
    if progress is not None:
        progress(f"{len(jobs)} evaluations on {opts.executor}")
    if opts.executor == "ray":
        packed = _run_ray(jobs, opts.ray_address)
    else:
        packed = _run_local(jobs, opts.parallel)
    runs = [msgpack.unpackb(p, raw=False) for p in packed]
    data = aggregate(runs)
    out = Path(opts.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(data, indent=1) + "\n")
    if report:
        from cluster_sched.report.compare_render import write_compare_report

        write_compare_report(data, runs, out)
    return data


def _worker_main() -> int:
    """``python -m cluster_sched.workload.compare``: one job from stdin, msgpack out."""
    job = json.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(evaluate(job))
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker_main())
