"""Nightly fuzz: the fuzz targets and the extreme-numbers explain test on fresh examples.

CI runs these on a fixed set (``derandomize``), which never explores. This sets
``CLUSTER_SCHED_FUZZ_RANDOM=1`` (random examples), ``CLUSTER_SCHED_FUZZ_EXAMPLES``
(``--examples`` per target) and a hypothesis seed, printed first: a failing night is
repeated with ``--seed``. Pytest's own report says which target failed and prints the
falsifying example.

    .venv/bin/python benchmarks/fuzz_nightly.py --examples 2000
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("tests/fuzz", "tests/scheduler/test_explain_extreme.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000, help="examples per target")
    parser.add_argument("--seed", type=int, help="repeat a night (default: a random one)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"fuzz seed {seed}, {args.examples} examples per target", flush=True)
    env = dict(os.environ)
    env["CLUSTER_SCHED_FUZZ_RANDOM"] = "1"
    env["CLUSTER_SCHED_FUZZ_EXAMPLES"] = str(args.examples)
    started = time.perf_counter()
    code = subprocess.call(
        [
            sys.executable,
            "-m",
            "pytest",
            *TARGETS,
            "-q",
            "-p",
            "no:cacheprovider",
            f"--hypothesis-seed={seed}",
            "-o",
            "timeout=0",
        ],
        cwd=ROOT,
        env=env,
    )
    print(f"fuzz seed {seed}: exit {code} after {time.perf_counter() - started:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
