"""Tracing without a collector (issue 26, finding 7): ``--trace-file`` writes OTLP JSON
lines, ``--trace-console`` a line per span; an unreachable collector costs one warning
line and one connection attempt, not retries."""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster_sched.cli import main
from cluster_sched.telemetry.spans import SCHEDULING_CYCLE
from tests.telemetry.trace_files import spans_in
from tests.telemetry.workloads import SMALL_PODS

HEX32 = re.compile(r"[0-9a-f]{32}")
HEX16 = re.compile(r"[0-9a-f]{16}")


def test_trace_file_holds_otlp_json_lines(
    small_workload: Path, tmp_path: Path, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "spans.jsonl"
    rc = main(
        ["run", str(small_workload), "--quiet", "--redis", redis_url, "--trace-file", str(trace)]
    )
    assert rc == 0
    spans = spans_in(trace)
    cycles = [s for s in spans if s["name"] == SCHEDULING_CYCLE]
    assert len(cycles) == SMALL_PODS
    for s in spans:
        assert HEX32.fullmatch(str(s["traceId"])) and HEX16.fullmatch(str(s["spanId"]))
        assert int(str(s["endTimeUnixNano"])) >= int(str(s["startTimeUnixNano"]))
    ids = {s["spanId"] for s in spans}
    # every cycle hangs under its SchedulePod root, by the hex ids as written
    assert all(c["parentSpanId"] in ids for c in cycles)


def test_trace_console_prints_a_line_per_span(
    small_workload: Path, redis_url: str, capfd: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["run", str(small_workload), "--quiet", "--redis", redis_url, "--trace-console"]) == 0
    )
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(f"span {SCHEDULING_CYCLE} ")]
    assert len(lines) == SMALL_PODS


class _Refuser:
    """A real TCP listener that counts connections and answers 503 to each."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(1.0)
                with contextlib.suppress(OSError):
                    conn.recv(1 << 20)
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


@pytest.fixture
def refuser() -> Iterator[_Refuser]:
    r = _Refuser()
    try:
        yield r
    finally:
        r.close()


def test_unreachable_collector_costs_one_warning_and_one_attempt(
    small_workload: Path,
    redis_url: str,
    refuser: _Refuser,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    endpoint = f"http://127.0.0.1:{refuser.port}"
    assert (
        main(
            [
                "run",
                str(small_workload),
                "--quiet",
                "--redis",
                redis_url,
                "--otlp-endpoint",
                endpoint,
            ]
        )
        == 0
    )
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(noisy) == 1, [r.getMessage() for r in noisy]
    assert endpoint in noisy[0].getMessage()
    assert refuser.connections == 1
