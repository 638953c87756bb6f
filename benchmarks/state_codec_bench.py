"""What a binding job's CycleState costs to encode (every job sent to a Ray binding task
or a shard carries one).

Runs example workloads in-process (``cluster_sched.cli.main(["run", ...])``), keeps the
CycleState of each binding job the coordinator submits, then times per state:
``encode_state`` (assembled from remembered entry encodings) against packing the plain
map it stands for (``encode_value`` of ``{"data", "skip_filter", "skip_score",
"activate"}``: the encoding before, byte for byte the same, which is checked). Best of
five passes over the kept states. A benchmark, not a test: it asserts nothing.

Run: PYTHONPATH=. .venv/bin/python benchmarks/state_codec_bench.py [--states 5000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_sched.cli import main as cli_main
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.state_codec import encode_state, encode_value
from cluster_sched.scheduler.binding import BindingJob, ThreadedOutcomes

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("scheduling-basic", "topology-spreading", "scheduling-pod-affinity")


def _states(workload: Path, keep: int) -> list[CycleState]:
    """The CycleStates of the first ``keep`` binding jobs of one in-process run."""
    kept: list[CycleState] = []
    submit = ThreadedOutcomes.submit

    def keeping(self: ThreadedOutcomes, job: BindingJob) -> None:
        if len(kept) < keep:
            kept.append(job.state)
        submit(self, job)

    ThreadedOutcomes.submit = keeping  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cli_main(["run", str(workload), "--quiet", "--seed", "1"])
    finally:
        ThreadedOutcomes.submit = submit  # type: ignore[method-assign]
    return kept


def _plain(state: CycleState) -> bytes:
    return encode_value(
        {
            "data": state._data,
            "skip_filter": sorted(state.skip_filter_plugins),
            "skip_score": sorted(state.skip_score_plugins),
            "activate": sorted(state.pods_to_activate),
        }
    )


def _per_state(encode: Callable[[CycleState], Any], states: list[CycleState]) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for state in states:
            encode(state)
        best = min(best, time.perf_counter() - start)
    return best / len(states) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=5000, help="binding jobs kept per run")
    args = parser.parse_args()
    print("workload                 states  bytes  encode_state  plain map  identical")
    for name in WORKLOADS:
        states = _states(ROOT / "examples" / f"{name}.yaml", args.states)
        if not states:
            print(f"{name:24s} no binding job")
            continue
        same = all(encode_state(s) == _plain(s) for s in states)
        size = sum(len(encode_state(s)) for s in states) / len(states)
        new, old = _per_state(encode_state, states), _per_state(_plain, states)
        print(
            f"{name:24s} {len(states):6d} {size:6.0f} {new:10.1f} µs {old:7.1f} µs"
            f"  {'yes' if same else 'NO'}"
        )


if __name__ == "__main__":
    main()
