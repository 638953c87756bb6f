"""The exactness matrix at a size CI does not afford: every mode against the serial loop.

Runs ``pressure_workload`` (low-priority fill, high-priority arrivals that preempt,
departures that requeue; ``cluster_sched/testing/pressure_workload.py``) on ``--nodes``
nodes for each seed and driver, serially (batch 1, numpy, in-process) and under batch
1/5/7/64 x compiled on/off x in-process, 2 and 3 in-process shards (and, with
``--ray``, real Ray shard actors 2 and 3), with the harness of the exactness tests
(``tests/scheduler/exactness_harness.py``: backoff timing kept, queue drained,
placements / attempts / FailedScheduling and Preempted messages / nominatedNodeName
compared). Prints each mode's wall time and the paths it took (rotated windows, masked
head overruns, prefetch hits, preemptions); exits 1 on the first difference.

    PYTHONPATH=. .venv/bin/python benchmarks/exactness_matrix.py --nodes 1000 --seeds 2 --ray
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cluster_sched.redis_server import RedisServer, connect  # noqa: E402
from cluster_sched.scheduler.assembly import ExecutorOptions  # noqa: E402
from cluster_sched.testing.pressure_workload import pressure_workload  # noqa: E402
from tests.scheduler.exactness_harness import (  # noqa: E402
    DRIVERS,
    install_driver,
    modes,
    run_workload,
)

PATHS = ("rotated_windows", "head_overruns", "prefetch_hits", "preemptions", "requeued_pods")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=2, help="random seeds (printed)")
    parser.add_argument("--seed", type=int, action="append", help="these seeds instead")
    parser.add_argument("--ray", action="store_true", help="Ray shard actors 2 and 3 too")
    parser.add_argument("--driver", choices=DRIVERS, action="append")
    parser.add_argument(
        "--fill",
        default="60,75,90,100",
        help="percent of cpu the bound pods fill, per node (below ~300 nodes use 40,50,60,75: "
        "windows rotate only when 100 nodes fit a pod)",
    )
    args = parser.parse_args()
    seeds = args.seed or [random.randrange(100_000) for _ in range(args.seeds)]
    executors = [("local", 1), ("shards", 2), ("shards", 3)]
    if args.ray:
        import ray

        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        executors += [("ray", 2), ("ray", 3)]
    failures = 0
    with RedisServer() as server:
        client = connect(server.url)
        for seed in seeds:
            fill = tuple(int(x) for x in args.fill.split(","))
            phases = pressure_workload(seed, n_nodes=args.nodes, fill=fill).phases()
            for driver in args.driver or DRIVERS:
                with pytest.MonkeyPatch.context() as mp:
                    install_driver(mp, driver)
                    failures += _matrix(client, server.url, phases, seed, driver, executors)
                    if failures:
                        return 1
        client.close()
    return 0


def _matrix(client, url, phases, seed, driver, executors) -> int:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    serial = run_workload(client, phases, ExecutorOptions("local", compiled=False), 1)
    took = time.perf_counter() - started
    print(f"seed {seed} driver {driver!r}: serial {took:.1f} s {_paths(serial.paths)}")
    for options, batch in modes(executors=executors, redis_url=url):
        client.flushall()
        started = time.perf_counter()
        got = run_workload(client, phases, options, batch)
        took = time.perf_counter() - started
        name = f"{options.executor}/{options.shards} compiled={options.compiled} batch={batch}"
        if got != serial:
            print(f"  {name}: DIFFERS: {got.difference(serial)}")
            return 1
        print(f"  {name}: same, {took:.1f} s {_paths(got.paths)}")
    return 0


def _paths(paths: dict[str, int]) -> str:
    return " ".join(f"{k}={paths[k]}" for k in PATHS if k in paths)


if __name__ == "__main__":
    sys.exit(main())
