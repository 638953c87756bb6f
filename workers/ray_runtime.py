"""What the Ray side shares: joining or starting Ray, and the config document actors get.

Ray is joined at ``address`` if one is given, else at ``$RAY_ADDRESS`` (the deployment's
contract, see infra/services.py), else a private local instance is started
(``address="local"``: never whatever cluster ``/tmp/ray`` happens to name). Authentication
follows ``RAY_AUTH_MODE``, defaulting to "disabled" as every process infra/ starts does.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Final

import yaml

from cluster_sched.errors import ConfigError, SchedulerError
from cluster_sched.framework.state_codec import StateCodecError, encode_value
from cluster_sched.telemetry.tracing import Tracing, process_tracing, setup_tracing

__all__ = ["RAY_ADDRESS_ENV", "config_document", "ensure_ray", "worker_tracing"]

RAY_ADDRESS_ENV: Final = "RAY_ADDRESS"
"""Where the deployment's Ray cluster is (``ray://`` or ``host:port``)."""


def ensure_ray(address: str | None = None) -> None:
    """Connect this process to Ray unless it already is (see the module docstring)."""
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    target = address or os.environ.get(RAY_ADDRESS_ENV) or "local"
    kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
    if target == "local":
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=target, **kwargs)
    except Exception as exc:  # unreachable cluster, bad address, version mismatch...
        lines = str(exc).strip().splitlines()
        reason = lines[0] if lines else type(exc).__name__
        raise SchedulerError(f"cannot start or join Ray at {target!r}: {reason}") from exc


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
