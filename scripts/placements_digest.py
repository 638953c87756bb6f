#!/usr/bin/env python3
"""Run every workload in examples/ with a fixed seed and print a digest of its placements.

Used to show that a change keeps behaviour: run it before and after, compare the lines
(``diff <(git stash; ...) <(...)``). Placements are ``namespace/name -> node`` for every
pod bound at the end, written by ``cluster-sched run --output``.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--executor", default="local")
    p.add_argument("examples", nargs="*", help="workload files (default: examples/*.yaml)")
    args = p.parse_args()
    files = [Path(f) for f in args.examples] or sorted((ROOT / "examples").glob("*.yaml"))
    failed = 0
    for wl in files:
        with tempfile.TemporaryDirectory() as out:
            cmd = [
                sys.executable,
                "-m",
                "cluster_sched.cli",
                "run",
                str(wl),
                "--seed",
                str(args.seed),
                "--output",
                out,
                "--quiet",
                "--executor",
                args.executor,
            ]
            r = subprocess.run(cmd, capture_output=True, text=True)
            placements = Path(out) / "placements.json"
            if r.returncode != 0 or not placements.exists():
                print(f"{wl.name}: FAILED (exit {r.returncode}) {r.stderr.strip()[-300:]}")
                failed += 1
                continue
            digest = hashlib.sha256(placements.read_bytes()).hexdigest()[:16]
            print(f"{wl.name}: {digest}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
