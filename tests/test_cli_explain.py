"""``cluster-sched explain`` from the command line: bad input is one line on stderr naming
the file, the object and the field, with exit code 2 and no traceback; JSON output keeps
its documented keys; the table shows the selected node first and truncates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.cli import EXIT_USAGE, main

CLI = Path(sys.executable).with_name("cluster-sched")
#: The directory that makes ``tests.testing_plugins`` importable: the repository root.
SAMPLE_PLUGINS_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_SCORE = "tests.testing_plugins.cs_sample_plugins:PreferNamed"

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]
    },
}
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _with(doc: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(doc))
    cur = out
    for key in path[:-1]:
        cur = cur[key]
    if value is _DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return out


_DELETE = object()


def _write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["explain", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


BAD_SELECTOR_POD = _with(
    POD,
    ["spec", "affinity"],
    {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "Near", "values": ["ssd"]}]}
                ]
            }
        }
    },
)


@pytest.mark.parametrize(
    ("files", "needles"),
    [
        pytest.param(
            {"cluster": _with(NODE, ["status", "capacity", "cpu"], "4x")},
            ["cluster.yaml", "Node n1", "status.capacity.cpu", "'4x'"],
            id="malformed-quantity",
        ),
        pytest.param(
            {"pod": _with(POD, ["spec", "containers", 0, "resources", "requests", "cpu"], "-1")},
            ["pod.yaml", "Pod default/p", "spec.containers[0].resources.requests.cpu"],
            id="negative-request",
        ),
        pytest.param(
            {"pod": _with(POD, ["spec", "containers"], _DELETE)},
            ["pod.yaml", "Pod default/p", "spec.containers"],
            id="pod-without-containers",
        ),
        pytest.param(
            {"pod": BAD_SELECTOR_POD},
            ["pod.yaml", "Pod default/p", "matchExpressions[0].operator", "'Near'"],
            id="invalid-selector-operator",
        ),
        pytest.param(
            {"pod": "apiVersion: v1\nkind: Pod\nmetadata: {name: p\n"},
            ["pod.yaml", "line", "invalid YAML"],
            id="yaml-syntax-error",
        ),
        pytest.param(
            {"config": {**CONFIG, "profiles": [{"plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}]}},
            ["sched.yaml", "profiles[0]", "plugins.score.enabled[0]", '"NoSuchPlugin"'],
            id="unknown-plugin",
        ),
        pytest.param(
            {"config": {**CONFIG, "profiles": [{"plugins": {"filter": {"enabled": [{"name": "cs_missing_mod:Plugin"}]}}}]}},
            ["sched.yaml", '"cs_missing_mod:Plugin"', "cannot import"],
            id="out-of-tree-import-error",
        ),
        pytest.param(
            {"config": {**CONFIG, "percentageOfNodesToScore": 140}},
            ["sched.yaml", "percentageOfNodesToScore"],
            id="invalid-config-field",
        ),
        pytest.param({"missing": "cluster"}, ["cluster.yaml"], id="missing-cluster-file"),
        pytest.param({"missing": "config"}, ["sched.yaml"], id="missing-config-file"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, Any], needles: list[str]
) -> None:
    cluster = _write(tmp_path, "cluster.yaml", files.get("cluster", NODE))
    pod = _write(tmp_path, "pod.yaml", files.get("pod", POD))
    argv = ["--cluster", cluster, "--pod", pod, "--output", "json"]
    if "config" in files:
        argv += ["--config", _write(tmp_path, "sched.yaml", files["config"])]
    missing = files.get("missing")
    if missing == "cluster":
        Path(cluster).unlink()
    elif missing == "config":
        argv += ["--config", str(tmp_path / "sched.yaml")]
    code, out, err = _run(capsys, *argv)
    assert code == EXIT_USAGE == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_installed_entry_point_bad_input(tmp_path: Path) -> None:
    cluster = _write(tmp_path, "cluster.yaml", _with(NODE, ["status", "capacity", "cpu"], "4x"))
    pod = _write(tmp_path, "pod.yaml", POD)
    proc = subprocess.run(
        [str(CLI), "explain", "--cluster", cluster, "--pod", pod],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert (
        "cluster.yaml" in lines[0] and "Node n1" in lines[0] and "status.capacity.cpu" in lines[0]
    )


def test_installed_entry_point_loads_out_of_tree_plugins(tmp_path: Path) -> None:
    """The documented way to ship a plugin: importable on PYTHONPATH, named in --config."""
    config = {
        **CONFIG,
        "profiles": [{"plugins": {"score": {"enabled": [{"name": SAMPLE_SCORE, "weight": 2}]}}}],
    }
    argv = [
        str(CLI), "explain", "--output", "json",
        "--cluster", _write(tmp_path, "cluster.yaml", _nodes(3)),
        "--pod", _write(tmp_path, "pod.yaml", POD),
        "--config", _write(tmp_path, "sched.yaml", config),
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SAMPLE_PLUGINS_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert all(SAMPLE_SCORE in scores for scores in out["rawScores"].values())


def _nodes(n: int, cpu: str = "4") -> str:
    docs = [
        _with(
            _with(NODE, ["metadata", "name"], f"node-{i:02d}"), ["status", "capacity", "cpu"], cpu
        )
        for i in range(n)
    ]
    return yaml.safe_dump_all(docs)


BASE_KEYS = {
    "selectedNode",
    "feasibleNodes",
    "evaluatedNodes",
    "filter",
    "rawScores",
    "scores",
    "finalScores",
    "message",
    "weights",
    "weightedScores",
    "passedPlugins",
    "pluginResults",
}


@pytest.mark.parametrize(
    ("pod", "config", "want_keys"),
    [
        pytest.param(POD, None, BASE_KEYS, id="scheduled"),
        pytest.param(
            _with(POD, ["spec", "containers", 0, "resources", "requests", "cpu"], "64"),
            None, BASE_KEYS | {"preemption"}, id="unschedulable-postfilter-ran",
        ),
        pytest.param(
            _with(POD, ["spec", "containers", 0, "resources", "requests", "cpu"], "64"),
            {**CONFIG, "profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]},
            BASE_KEYS, id="unschedulable-no-postfilter",
        ),
    ],
)  # fmt: skip
def test_json_output_has_exactly_the_documented_keys(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pod: dict[str, Any],
    config: dict[str, Any] | None,
    want_keys: set[str],
) -> None:
    argv = [
        "--cluster",
        _write(tmp_path, "cluster.yaml", _nodes(3)),
        "--pod",
        _write(tmp_path, "pod.yaml", pod),
    ]
    if config is not None:
        argv += ["--config", _write(tmp_path, "sched.yaml", config)]
    code, out, err = _run(capsys, *argv, "--output", "json", "--seed", "1")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert set(doc) == want_keys
    if "preemption" in doc:
        assert set(doc["preemption"]) == {"nominatedNode", "victims"}
    if doc["selectedNode"] is not None:
        assert doc["filter"][doc["selectedNode"]] == {"code": "Success"}
        assert doc["message"] is None
    else:
        assert doc["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")


def _table_rows(out: str) -> list[str]:
    """Node names in table order (first cell of each body row)."""
    rows = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│┃").split("│")]
        if len(cells) > 2 and cells[0].startswith("node-"):
            rows.append(cells[0])
    return rows


@pytest.mark.parametrize(
    ("extra", "shown", "hint"),
    [
        pytest.param(["--top", "5"], 5, "... 7 more nodes (use --all)", id="truncated"),
        pytest.param(["--all"], 12, None, id="all"),
        pytest.param([], 12, None, id="default-top-20"),
    ],
)
def test_table_output_selected_first_and_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    extra: list[str], shown: int, hint: str | None,
) -> None:  # fmt: skip
    monkeypatch.setenv("COLUMNS", "250")
    cluster = yaml.safe_dump_all(
        [yaml.safe_load(d) for d in _nodes(10).split("---")]
        + [yaml.safe_load(d) for d in _nodes(2, cpu="1").replace("node-0", "node-s").split("---")]
    )
    pod = _with(POD, ["spec", "containers", 0, "resources", "requests", "cpu"], "2")
    argv = [
        "--cluster",
        _write(tmp_path, "cluster.yaml", cluster),
        "--pod",
        _write(tmp_path, "pod.yaml", pod),
    ]
    code, json_out, _ = _run(capsys, *argv, "--output", "json", "--seed", "7")
    selected = json.loads(json_out)["selectedNode"]
    code, out, err = _run(capsys, *argv, "--seed", "7", *extra)
    assert code == 0 and err == ""
    rows = _table_rows(out)
    assert len(rows) == shown
    assert rows[0] == f"{selected} *"
    # the two 1-cpu nodes fail NodeResourcesFit and come last
    if shown == 12:
        assert sorted(rows[-2:]) == ["node-s0", "node-s1"]
    if hint is None:
        assert "use --all" not in out
    else:
        assert hint in out


def test_feature_gates_reach_explain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _write(tmp_path, "cluster.yaml", NODE)
    pod = _write(tmp_path, "pod.yaml", POD)
    argv = ["--cluster", cluster, "--pod", pod, "--output", "json"]
    code, out, _err = _run(capsys, *argv, "--feature-gates", "SchedulerAsyncPreemption=false")
    assert code == 0 and json.loads(out)["selectedNode"]
    code, out, err = _run(capsys, *argv, "--feature-gates", "MadeUpGate=true")
    assert code == EXIT_USAGE and out == ""
    assert err.strip() == "error: unrecognized feature gate: MadeUpGate"
    code, _out, err = _run(capsys, *argv, "--feature-gates", "SchedulerQueueingHints=false")
    assert code == EXIT_USAGE
    assert "feature is locked to true" in err
