"""What the Ray side shares: joining or starting Ray, and the config document actors get.

Ray is joined at ``address`` if one is given, else at ``$RAY_ADDRESS`` (the deployment's
contract, see infra/services.py), else a private local instance is started
(``address="local"``: never whatever cluster ``/tmp/ray`` happens to name).

Authentication follows ``RAY_AUTH_MODE`` / ``RAY_AUTH_TOKEN`` when the environment sets
them (infra/ always does). Otherwise a private local instance gets token authentication
with a fresh random token of this process (inherited by the Ray processes it starts,
written nowhere): an unauthenticated Ray lets anyone who reaches its ports run code.
Joining a cluster without those variables leaves the choice to Ray (token mode when a
token is found, e.g. in ``~/.ray/auth_token``).

A private local instance also gets a quieter log monitor (``LOG_MONITOR_ENV``, unless
the environment sets them): Ray's log monitor globs the session's log directory for new
files ten times a second while fewer than 1,000 files are there, ~8 ms of CPU per second
on this 2-core machine, whatever the scheduler does (``benchmarks/ray_idle_cost.py``).
Worker output is not sent to the driver (``log_to_driver=False``), so nobody reads what
it publishes; a new file is still found, within seconds, and read from its start.
What else a private instance runs costs per second, not per pod, and is kept: each Ray
worker process (shards, binding workers) wakes every 10 ms to check signals (~6 ms of CPU
per second each, fixed in Ray's core worker), the raylet and GCS poll each other.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import secrets
import threading
from pathlib import Path
from typing import Any, Final

import yaml

from cluster_sched.errors import ConfigError, SchedulerError
from cluster_sched.framework.state_codec import StateCodecError, encode_value
from cluster_sched.telemetry.tracing import Tracing, process_tracing, setup_tracing

__all__ = [
    "LOG_MONITOR_ENV",
    "RAY_ADDRESS_ENV",
    "RAY_AUTH_MODE_ENV",
    "RAY_AUTH_TOKEN_ENV",
    "config_document",
    "ensure_ray",
    "worker_tracing",
]

RAY_ADDRESS_ENV: Final = "RAY_ADDRESS"
"""Where the deployment's Ray cluster is (``ray://`` or ``host:port``)."""
RAY_AUTH_MODE_ENV: Final = "RAY_AUTH_MODE"
"""Ray's authentication mode: ``token`` (our default) or ``disabled``."""
RAY_AUTH_TOKEN_ENV: Final = "RAY_AUTH_TOKEN"
"""The shared token every Ray process and driver of one cluster must present."""
LOG_MONITOR_ENV: Final = {
    "RAY_LOG_MONITOR_MANY_FILES_THRESHOLD": "0",
    "LOG_NAME_UPDATE_INTERVAL_S": "5",
}
"""What a private instance's log monitor reads at start: look for new log files every
5 s whatever their number (Ray: every 0.1 s below 1,000 files, else every 0.5 s)."""


def ensure_ray(address: str | None = None) -> None:
    """Connect this process to Ray unless it already is (see the module docstring)."""
    import ray

    if ray.is_initialized():
        return
    target = address or os.environ.get(RAY_ADDRESS_ENV) or "local"
    if target == "local":
        _secure_local_auth()
        for name, value in LOG_MONITOR_ENV.items():  # inherited by the log monitor
            os.environ.setdefault(name, value)
    kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
    if target == "local":
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=target, **kwargs)
    except Exception as exc:  # unreachable cluster, bad address, version mismatch...
        lines = str(exc).strip().splitlines()
        reason = lines[0] if lines else type(exc).__name__
        raise SchedulerError(f"cannot start or join Ray at {target!r}: {reason}") from exc


def _secure_local_auth() -> None:
    """Token authentication for a private local instance unless the environment chose."""
    if os.environ.get(RAY_AUTH_MODE_ENV):
        return
    os.environ[RAY_AUTH_MODE_ENV] = "token"
    if not (os.environ.get(RAY_AUTH_TOKEN_ENV) or os.environ.get("RAY_AUTH_TOKEN_PATH")):
        os.environ[RAY_AUTH_TOKEN_ENV] = secrets.token_hex(32)
    # Ray reads its configuration from the environment once, at import: refresh it so
    # this process (the driver) speaks the mode its child processes will enforce.
    with contextlib.suppress(ImportError, AttributeError):
        config = importlib.import_module("ray._raylet").Config
        config.initialize("")


def config_document(config_path: str | os.PathLike[str] | None) -> bytes:
    """The KubeSchedulerConfiguration file as msgpack bytes (b"" for the defaults), for
    actors and tasks that build their own Frameworks from the same configuration."""
    if config_path is None:
        return b""
    source = str(config_path)
    try:
        doc = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{source}: cannot read configuration: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: configuration must be a mapping")
    try:
        return encode_value(doc)
    except StateCodecError as exc:
        raise ConfigError(
            f"{source}: configuration holds a value that cannot travel: {exc}"
        ) from exc


_tracing_lock = threading.Lock()
_TRACINGS: dict[str, Tracing] = {}


def worker_tracing(endpoint: str | None) -> Tracing:
    """Tracing for code running in a Ray worker, one exporter per endpoint per process.

    The coordinator sends its OTLP endpoint with each task or actor; a worker process
    outlives tasks from coordinators with different endpoints (tests run several), so the
    exporter is cached per endpoint rather than once per process. With no endpoint, the
    process's own (``$OTEL_EXPORTER_OTLP_ENDPOINT``, else off).
    """
    if not endpoint:
        return process_tracing()
    with _tracing_lock:
        tracing = _TRACINGS.get(endpoint)
        if tracing is None:
            tracing = _TRACINGS[endpoint] = setup_tracing(endpoint)
        return tracing
