"""Loading a cluster snapshot: how long ``kubectl get -A -o json`` output of N objects
takes to become a run's input.

Run: ``python benchmarks/snapshot_load_bench.py [--objects 10000]``. Builds a snapshot
with ``cluster_sched.testing.cluster_snapshot.scaled_snapshot`` (nodes, Running pods
with managedFields and status, ConfigMaps), writes it as JSON, then times, best of
three: decoding the file (``load_documents``), the unknown-field check alone
(``api.schema.unknown_fields`` over every object, the Kubernetes schemas compiled once
beforehand), and the whole ``load_snapshot`` (check, parse, skip, expand).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_sched.api import schema
from cluster_sched.api.manifest import load_documents
from cluster_sched.testing.cluster_snapshot import scaled_snapshot
from cluster_sched.workload.snapshot import load_snapshot


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.json"
        path.write_text(json.dumps(scaled_snapshot(args.objects)))
        text = path.read_text()
        start = time.perf_counter()
        schema.has_schema("v1", "Pod")  # compiles the definitions
        compile_s = time.perf_counter() - start
        docs = load_documents(text, str(path))
        decode_s = _best(lambda: load_documents(text, str(path)))
        check_s = _best(lambda: [schema.unknown_fields(d) for d in docs])
        load_s = _best(lambda: load_snapshot(path))
    size = path.stat().st_size if path.exists() else len(text)
    print(f"{len(docs)} objects, {size / 1e6:.1f} MB of JSON")
    print(f"schema compile (once)   {compile_s * 1e3:8.1f} ms")
    print(f"decode (json)           {decode_s * 1e3:8.1f} ms")
    print(
        f"unknown-field check     {check_s * 1e3:8.1f} ms  ({check_s / len(docs) * 1e6:.1f} us/object)"
    )
    print(f"load_snapshot (all)     {load_s * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
