"""The command line's error paths: one line on stderr, the documented exit code, never a
traceback (bad paths, busy ports, a closed output pipe, Ctrl-C), and help texts that
say what the commands do."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster_sched.cli import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
PERF_CONFIG = ROOT / "examples/scheduler_perf/performance-config.yaml"
SMALL = ROOT / "examples/small-basic.yaml"


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def cli(*argv: str, **kwargs: Any) -> subprocess.Popen[str]:
    """The real entry point in a child process (PYTHONPATH is inherited)."""
    return subprocess.Popen(
        [sys.executable, "-m", "cluster_sched.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("cluster-sched ") and len(out.split()) == 2


def _help(command: str) -> str:
    sub = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return " ".join(sub.format_help().split())


@pytest.mark.parametrize("command", ["apply", "serve"])
def test_store_commands_do_not_claim_a_private_redis(command: str) -> None:
    text = _help(command)
    assert "private" not in text
    assert "Redis URL of an existing store" in text


@pytest.mark.parametrize("command", ["run", "perf"])
def test_evaluation_commands_say_they_start_a_private_redis(command: str) -> None:
    assert "else a private redis-server started for this run" in _help(command)


def test_unsupported_perf_op_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "performance-config.yaml"
    config.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Profiled",
                    "workloadTemplate": [
                        {"opcode": "startCollectingProfile", "type": "CPU"},
                        {"opcode": "createPods", "count": 1, "collectMetrics": True},
                    ],
                    "workloads": [{"name": "w"}],
                }
            ]
        )
    )
    assert main(["perf", str(config), "--output", str(tmp_path)]) == EXIT_USAGE
    line = one_error_line(capsys)
    assert "opcode 'startCollectingProfile' is not supported by cluster-sched" in line
    assert "test case Profiled" in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "{dir}", "--quiet"], "is a directory, expected a workload file"),
        (["perf", "{dir}"], "is a directory, expected a scheduler_perf config file"),
        (
            ["explain", "--cluster", "{dir}", "--pod", "{dir}"],
            "is a directory, expected a manifest file",
        ),
        (["apply", "-f", "{dir}", "--redis", "redis://127.0.0.1:1"], ""),
        (["perf", str(PERF_CONFIG), "--output", "{file}"], "is not a directory (--output)"),
        (["perf", str(PERF_CONFIG), "--workload", "NoSuchWorkload"], "no workload matches"),
        (["run", "{missing}", "--quiet"], "no such file or directory"),
    ],
    ids=[
        "run-dir",
        "perf-dir",
        "explain-dir",
        "apply-dir",
        "perf-output-file",
        "perf-no-match",
        "run-missing",
    ],
)
def test_path_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("x")
    values = {"dir": str(tmp_path), "file": str(afile), "missing": str(tmp_path / "nope.yaml")}
    assert main([a.format(**values) for a in argv]) == EXIT_USAGE
    assert message in one_error_line(capsys)


def test_perf_with_unreachable_redis_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["perf", str(PERF_CONFIG), "--test", "SchedulingBasic", "--workload", "5Nodes"]
    assert main([*argv, "--output", str(tmp_path), "--redis", "redis://127.0.0.1:1"]) == 2
    line = one_error_line(capsys)
    assert "127.0.0.1:1" in line


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))
        s.listen(1)
        yield int(s.getsockname()[1])


def test_serve_on_a_busy_metrics_port_is_one_line(
    busy_port: int, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--redis", redis_url, "--metrics-port", str(busy_port)]
    assert main(argv) == EXIT_USAGE
    assert one_error_line(capsys) == f"error: --metrics-port {busy_port}: address already in use"


def big_cluster(tmp_path: Path, nodes: int = 600) -> tuple[Path, Path]:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i:04d}"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
        for i in range(nodes)
    ]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}\n"
    )
    return cluster, pod


@pytest.mark.parametrize("output", ["json", "table"])
def test_a_closed_output_pipe_ends_quietly(tmp_path: Path, output: str) -> None:
    """``explain ... | head -1``: the reader goes away while explain still writes (the
    output is larger than a pipe holds), and explain stops without a traceback."""
    cluster, pod = big_cluster(tmp_path)
    table_all = ["--all"] if output == "table" else []  # json always lists every node
    proc = cli(
        "explain", "--cluster", str(cluster), "--pod", str(pod), "--output", output, *table_all
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first
    proc.stdout.close()
    rc = proc.wait(timeout=120)
    err = proc.stderr.read()
    assert err == ""
    assert rc == EXIT_BROKEN_PIPE


def wait_for_line(proc: subprocess.Popen[str], prefix: str, timeout: float = 120) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(prefix):
            return line
        if not line and proc.poll() is not None:
            break
    raise AssertionError(
        f"no line starting {prefix!r}; stderr: {proc.stderr.read() if proc.stderr else ''}"
    )


def _long_perf_config(tmp_path: Path) -> Path:
    """A perf test that cannot end before the signal: 200,000 pods to create and schedule
    (upstream's SchedulingBasic sizes now finish within a second of starting)."""
    template = PERF_CONFIG.parent / "templates/pod-default.yaml"
    config = [
        {
            "name": "Long",
            "defaultPodTemplatePath": str(template),
            "workloadTemplate": [
                {"opcode": "createNodes", "countParam": "$initNodes"},
                {"opcode": "createPods", "countParam": "$measurePods", "collectMetrics": True},
            ],
            "workloads": [{"name": "Long", "params": {"initNodes": 100, "measurePods": 200_000}}],
        }
    ]
    path = tmp_path / "long-perf.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_ctrl_c_while_the_commands_are_imported_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Building the parser imports every command's modules (seconds on a loaded
    machine): a Ctrl-C then gave a traceback and status -2."""
    import cluster_sched.cli as cli_module

    def interrupted_import() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "build_parser", interrupted_import)
    assert main(["run", "x.yaml"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "interrupted\n"


def test_ctrl_c_during_perf_is_one_line_and_exit_130(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = cli("perf", str(_long_perf_config(tmp_path)), "--output", str(out_dir))
    try:
        wait_for_line(proc, "running Long/Long")
        time.sleep(1.0)  # into the workload: the store is being filled or scheduled
        assert proc.poll() is None, "the run ended before the signal"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert err == "interrupted\n"


@pytest.mark.parametrize(
    ("sig", "code", "stderr"),
    [(signal.SIGINT, EXIT_INTERRUPTED, "interrupted\n"), (signal.SIGTERM, 0, "")],
    ids=["ctrl-c", "sigterm"],
)
def test_serve_stops_cleanly_on_signals(redis_url: str, sig: int, code: int, stderr: str) -> None:
    proc = cli("serve", "--redis", redis_url)
    try:
        wait_for_line(proc, '{"serving"')
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code
    assert err == stderr


def test_an_object_error_is_one_line_whatever_its_field_holds() -> None:
    """Found by the long fuzz run: an unknown field named "\\n" broke the message."""
    from cluster_sched.errors import InvalidObjectError

    err = InvalidObjectError("unknown field '\\n'", obj="Namespace default", field="spec.\n")
    assert "\n" not in str(err)
    assert str(err) == "Namespace default: field spec.\\n: unknown field '\\n'"
