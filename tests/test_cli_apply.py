"""``cluster-sched apply`` refuses poison inputs with one line each, storing nothing.

Numbers past what the API holds (an int64 quantity, an int32 priority, a 64-bit field),
integers past Python's digit limit, and binary junk: exit code 2, one ``error:`` line
naming the file, object and field, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from cluster_sched.cli import main

POD = """apiVersion: v1
kind: Pod
metadata: {{name: q}}
spec:
{spec}
  containers: [{{name: c, resources: {{requests: {{cpu: {cpu}}}}}}}]
"""

CASES = [
    ("cpu-2**80", POD.format(spec="", cpu=2**80), ["Pod default/q", "requests.cpu", "int64"]),
    (
        "priority-2**70",
        POD.format(spec=f"  priority: {2**70}", cpu="1"),
        ["Pod default/q", "spec.priority", "int32"],
    ),
    (
        # a field Kubernetes knows and the scheduler never reads (an unknown one is
        # refused earlier, by the schema check)
        "unread-field-2**70",
        POD.format(spec=f"  activeDeadlineSeconds: {2**70}", cpu="1"),
        ["Pod default/q", "cannot be stored"],
    ),
    (
        "unknown-field",
        POD.format(spec="  extra: 1", cpu="1"),
        ["Pod default/q", "field spec.extra: unknown field 'extra'"],
    ),
    (
        "5000-digit-integer",
        POD.format(spec="  priority: 1" + "0" * 5000, cpu="1"),
        ["cannot decode a value"],
    ),
    (
        "node-1e20",
        "apiVersion: v1\nkind: Node\nmetadata: {name: big}\n"
        "status: {allocatable: {cpu: '1e20', memory: '1e20'}}\n",
        ["Node big", "status.allocatable.cpu", "int64"],
    ),
]


def _apply(path: Path, url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["apply", "-f", str(path), "--redis", url])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("text", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_poison_manifest_is_one_line_and_nothing_is_stored(
    tmp_path: Path,
    redis_url: str,
    redis_client: redis.Redis,
    capsys: pytest.CaptureFixture[str],
    text: str,
    words: list[str],
) -> None:
    path = tmp_path / "poison.yaml"
    path.write_text(text)
    code, err = _apply(path, redis_url, capsys)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and str(path) in line, line
    assert all(word in line for word in words), line
    assert redis_client.dbsize() == 0


def test_binary_junk_is_one_line(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "junk.bin"
    path.write_bytes(bytes(range(256)) * 4)
    code, err = _apply(path, redis_url, capsys)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {path}: ") and "UTF-8" in line, line
    assert redis_client.dbsize() == 0
