"""Import Alibaba's cluster-trace-gpu-v2023 "openb" CSVs as a replayable Workload.

Input columns (the trace's README):

- ``openb_pod_list.csv``: name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos,
  pod_phase, creation_time, deletion_time, scheduled_time
- ``openb_node_list.csv``: sn, cpu_milli, memory_mib, gpu, model

Output (``import_openb``): ``DIR/pods.jsonl`` in the project's trace format
(``workload.trace``) and ``DIR/workload.yaml``, a Workload with the nodes and one pod
group replaying the trace, ready for ``cluster-sched run DIR/workload.yaml --clock
virtual``.

How the fields map:

- ``arrival`` = creation_time - the earliest creation_time (seconds);
- ``lifetime`` = deletion_time - scheduled_time (creation_time when never scheduled);
  none when deletion_time is empty (the pod runs to the end of the replay);
- requests: ``cpu: <cpu_milli>m``, ``memory: <memory_mib>Mi`` and, for GPU pods, the
  extended resource ``alibabacloud.com/gpu-milli: num_gpu * gpu_milli`` (a node offers
  ``gpu * 1000``). This keeps the total GPU share exact but not the per-GPU packing (a
  0.6-GPU pod may fit on two GPUs that are 0.4 free each): the default scheduler has no
  device-level model, and neither does this import;
- limits equal requests for qos ``Guaranteed``; none otherwise;
- ``gpu_spec`` (one model or ``A|B`` alternatives) becomes a required node affinity on
  ``alibabacloud.com/gpu-model``, the label each node gets from ``model``;
- qos and pod_phase become labels (``openb/qos``, ``openb/phase``); no priority is
  invented (the trace has none).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.trace import TraceRecord, write_trace_jsonl

__all__ = [
    "GPU_MILLI",
    "GPU_MODEL_LABEL",
    "NODE_COLUMNS",
    "POD_COLUMNS",
    "import_openb",
    "openb_nodes",
    "openb_records",
]

POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
#: The extended resource carrying GPU shares (1000 per GPU).
GPU_MILLI = "alibabacloud.com/gpu-milli"
#: The node label carrying the GPU model (``model``), matched by ``gpu_spec``.
GPU_MODEL_LABEL = "alibabacloud.com/gpu-model"
#: Pods a node may hold (the trace gives no limit).
NODE_MAX_PODS = "256"


def _rows(path: Path, columns: tuple[str, ...]) -> Iterable[tuple[int, dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise InvalidObjectError(
                f"missing columns {', '.join(missing)}", obj=path.name, source=str(path)
            )
        yield from enumerate(reader, start=2)


def _int(
    row: Mapping[str, str], col: str, line: int, path: Path, *, optional: bool = False
) -> int | None:
    text = (row.get(col) or "").strip()
    if not text:
        if optional:
            return None
        text = "0"
    try:
        return int(float(text))
    except ValueError:
        raise InvalidObjectError(
            f"must be a number, got {text!r}",
            obj=path.name,
            field=f"line {line}.{col}",
            source=str(path),
        ) from None


def openb_records(path: Path) -> list[TraceRecord]:
    """The pod list as trace records, sorted by arrival."""
    rows = []
    for line, row in _rows(path, POD_COLUMNS):
        created = _int(row, "creation_time", line, path)
        assert created is not None
        rows.append((line, row, created))
    if not rows:
        return []
    origin = min(created for _, _, created in rows)
    out: list[TraceRecord] = []
    for line, row, created in rows:
        scheduled = _int(row, "scheduled_time", line, path, optional=True)
        deleted = _int(row, "deletion_time", line, path, optional=True)
        start = scheduled if scheduled is not None else created
        lifetime = float(max(deleted - start, 0)) if deleted is not None else None
        requests: dict[str, Any] = {
            "cpu": f"{_int(row, 'cpu_milli', line, path)}m",
            "memory": f"{_int(row, 'memory_mib', line, path)}Mi",
        }
        num_gpu = _int(row, "num_gpu", line, path) or 0
        gpu_milli = _int(row, "gpu_milli", line, path) or 0
        if num_gpu > 0:
            requests[GPU_MILLI] = num_gpu * (gpu_milli or 1000)
        qos = (row.get("qos") or "").strip()
        spec = (row.get("gpu_spec") or "").strip()
        labels = {"openb/qos": qos or "none", "openb/phase": (row.get("pod_phase") or "").strip()}
        out.append(
            TraceRecord(
                arrival=float(created - origin),
                name=(row.get("name") or f"openb-pod-{line}").strip().lower(),
                lifetime=lifetime,
                requests=requests,
                limits=dict(requests) if qos == "Guaranteed" else {},
                labels={k: v for k, v in labels.items() if v},
                affinity={GPU_MODEL_LABEL: tuple(spec.split("|"))} if spec else {},
            )
        )
    out.sort(key=lambda r: r.arrival)
    return out


def openb_nodes(path: Path) -> list[dict[str, Any]]:
    """The node list as Node manifests."""
    nodes = []
    for line, row in _rows(path, NODE_COLUMNS):
        name = (row.get("sn") or f"openb-node-{line}").strip().lower()
        allocatable: dict[str, str] = {
            "cpu": f"{_int(row, 'cpu_milli', line, path)}m",
            "memory": f"{_int(row, 'memory_mib', line, path)}Mi",
            "pods": NODE_MAX_PODS,
        }
        gpus = _int(row, "gpu", line, path) or 0
        labels = {"kubernetes.io/hostname": name}
        model = (row.get("model") or "").strip()
        if gpus > 0:
            allocatable[GPU_MILLI] = str(gpus * 1000)
        if model:
            labels[GPU_MODEL_LABEL] = model
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
            }
        )
    return nodes


def import_openb(pods_csv: Path, nodes_csv: Path, out_dir: Path, *, name: str = "openb") -> Path:
    """Write ``out_dir/pods.jsonl`` and ``out_dir/workload.yaml``; returns the latter."""
    records = openb_records(pods_csv)
    nodes = openb_nodes(nodes_csv)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_trace_jsonl(records, out_dir / "pods.jsonl")
    workload = {
        "apiVersion": "cluster-sched.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "nodes": nodes,
            "podGroups": [
                {
                    "name": name,
                    "trace": "pods.jsonl",
                    "template": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": name, "namespace": "default"},
                        "spec": {
                            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]
                        },
                    },
                }
            ],
        },
    }
    header = (
        f"# Imported from {pods_csv.name} and {nodes_csv.name} (cluster-trace-gpu-v2023 "
        f"openb format) by cluster-sched import-trace: {len(nodes)} nodes, "
        f"{len(records)} pods.\n"
    )
    path = out_dir / "workload.yaml"
    path.write_text(header + yaml.safe_dump(workload, sort_keys=False), encoding="utf-8")
    return path
