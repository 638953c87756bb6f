"""The one source of truth for every service's command line and environment.

docker-compose.yml and the local launcher (``python -m infra.launcher``) run the same
services; this module renders each one for a ``Topology`` — where the other services
are reachable and which ports to use. ``COMPOSE`` is the topology inside the compose
network (service names as hosts, fixed ports); ``Topology.local`` maps every host to
127.0.0.1 and takes ports the launcher picked. tests/infra checks that the compose file's
commands and environments equal ``render_compose()``, so the two cannot drift.

What differs between the two, and why, is only what the topology carries:

- hosts and ports (``redis`` vs 127.0.0.1, fixed vs free ports, so a launcher run does not
  collide with another Ray or Redis on the same machine);
- Ray's ``--temp-dir``: ``/tmp/ray`` (Ray's default) in a container, a private directory
  locally, because ``ray.init()`` with no address joins whatever cluster
  ``/tmp/ray/ray_current_cluster`` names — a launcher cluster there would capture other
  processes' ``ray.init()`` on the machine;
- the coordinator's ``ray start`` prelude (compose only): a Ray driver must run on a Ray
  node, so the coordinator container first joins the cluster as a node with zero CPUs
  (no tasks land there). Locally the coordinator shares the machine with the head node
  and needs no prelude.

Environment variables are the CLI's contract: CLUSTER_SCHED_REDIS_URL,
OTEL_EXPORTER_OTLP_ENDPOINT and RAY_ADDRESS. Ray nodes get the first two as well,
because binding tasks and shard actors run there and write to Redis and export spans.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "COMPOSE",
    "DEFAULT_HEAD_CPUS",
    "DEFAULT_SHARDS",
    "DEFAULT_WORKER_CPUS",
    "ServiceSpec",
    "Topology",
    "coordinator_service",
    "jaeger_service",
    "ray_head_service",
    "ray_worker_service",
    "redis_service",
    "render_compose",
]

DEFAULT_HEAD_CPUS: Final = 2
"""Logical CPUs the head node offers (shard actors and binding tasks run there too)."""
DEFAULT_WORKER_CPUS: Final = 2
"""Logical CPUs each extra Ray node offers."""
DEFAULT_SHARDS: Final = 2
"""Node shards (Ray actors) the coordinator creates."""

REDIS_URL_ENV: Final = "CLUSTER_SCHED_REDIS_URL"
OTLP_ENV: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
RAY_ADDRESS_ENV: Final = "RAY_ADDRESS"

RAY_AUTH_ENV: Final[Mapping[str, str]] = {
    # Explicit, because Ray decides per process otherwise: a head finding ~/.ray/auth_token
    # (any earlier local ray.init() writes one) turns token auth on, while a joining node
    # with no token then fails with InvalidAuthToken. Every Ray process and driver here
    # gets the same answer. Disabled: the compose network and the loopback launcher are the
    # trust boundary; a deployment exposing Ray's ports must switch to token mode.
    "RAY_AUTH_MODE": "disabled",
}
"""Ray authentication mode, shared by the nodes and the coordinator (a driver)."""

RAY_NODE_ENV: Final[Mapping[str, str]] = {
    **RAY_AUTH_ENV,
    # `ray start --block` drains for 30 s on SIGTERM (meant for Ray Serve replicas); we run
    # no Serve, and `docker compose down` waits only 10 s before SIGKILL.
    "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
}
"""Environment every Ray node gets on top of the Redis URL and OTLP endpoint."""


@dataclass(frozen=True, slots=True)
class Topology:
    """Where each service listens, as the other services reach it."""

    redis_host: str
    redis_port: int
    ray_host: str
    ray_port: int
    metrics_port: int
    otlp_endpoint: str | None
    """OTLP base URL, or None to run without tracing."""
    bind_host: str
    """Interface servers bind to: every interface in a container, loopback locally."""
    dashboard_port: int
    dashboard_agent_port: int
    """Per-node dashboard agent port; fixed in containers, must differ per local node."""
    ray_temp_dir: str

    @classmethod
    def local(
        cls,
        *,
        redis_port: int,
        ray_port: int,
        metrics_port: int,
        dashboard_port: int,
        dashboard_agent_port: int,
        ray_temp_dir: str,
        otlp_endpoint: str | None = None,
    ) -> Topology:
        """Every host is 127.0.0.1; the launcher picks the ports and the temp dir."""
        return cls(
            redis_host="127.0.0.1",
            redis_port=redis_port,
            ray_host="127.0.0.1",
            ray_port=ray_port,
            metrics_port=metrics_port,
            otlp_endpoint=otlp_endpoint,
            bind_host="127.0.0.1",
            dashboard_port=dashboard_port,
            dashboard_agent_port=dashboard_agent_port,
            ray_temp_dir=ray_temp_dir,
        )

    @property
    def redis_url(self) -> str:
        return f"redis://{self.redis_host}:{self.redis_port}/0"

    @property
    def ray_address(self) -> str:
        return f"{self.ray_host}:{self.ray_port}"


COMPOSE: Final = Topology(
    redis_host="redis",
    redis_port=6379,
    ray_host="ray-head",
    ray_port=6380,
    metrics_port=9090,
    otlp_endpoint="http://jaeger:4318",
    bind_host="0.0.0.0",
    dashboard_port=8265,
    dashboard_agent_port=52365,
    ray_temp_dir="/tmp/ray",
)
"""The compose network: service names resolve as hosts; ports are the well-known ones."""


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """One service: the process to run and its environment (on top of the inherited one)."""

    name: str
    argv: tuple[str, ...]
    environment: Mapping[str, str] = field(default_factory=dict)
    prelude: tuple[str, ...] = ()
    """A command run to completion before ``argv`` — in containers only (see module doc)."""

    def compose_command(self) -> dict[str, Any]:
        """The ``entrypoint``/``command`` pair compose runs for this service.

        The image's entrypoint is ``cluster-sched``; every service names its own so the
        file reads the same whichever image runs it.
        """
        if self.prelude:
            script = f"{shlex.join(self.prelude)} && exec {shlex.join(self.argv)}"
            return {"entrypoint": ["/bin/sh", "-c"], "command": [script]}
        return {"entrypoint": [self.argv[0]], "command": list(self.argv[1:])}


def _tracing_env(topology: Topology) -> dict[str, str]:
    return {OTLP_ENV: topology.otlp_endpoint} if topology.otlp_endpoint else {}


def redis_service(topology: Topology) -> ServiceSpec:
    """redis-server holding the queue, the objects and the event stream; nothing on disk."""
    return ServiceSpec(
        name="redis",
        argv=(
            "redis-server",
            "--port", str(topology.redis_port),
            "--bind", topology.bind_host,
            "--protected-mode", "no",
            "--save", "",
            "--appendonly", "no",
        ),
    )  # fmt: skip


def _ray_node_env(topology: Topology) -> dict[str, str]:
    return {REDIS_URL_ENV: topology.redis_url, **_tracing_env(topology), **RAY_NODE_ENV}


def ray_head_service(topology: Topology, num_cpus: int = DEFAULT_HEAD_CPUS) -> ServiceSpec:
    """The Ray head: GCS, dashboard, and a raylet with ``num_cpus`` CPUs."""
    return ServiceSpec(
        name="ray-head",
        argv=(
            "ray", "start", "--head",
            "--port", str(topology.ray_port),
            "--num-cpus", str(num_cpus),
            "--dashboard-host", topology.bind_host,
            "--dashboard-port", str(topology.dashboard_port),
            "--dashboard-agent-listen-port", str(topology.dashboard_agent_port),
            "--temp-dir", topology.ray_temp_dir,
            "--disable-usage-stats",
            "--block",
        ),
        environment=_ray_node_env(topology),
    )  # fmt: skip


def _ray_join(topology: Topology, num_cpus: int, agent_port: int) -> tuple[str, ...]:
    return (
        "ray", "start",
        "--address", topology.ray_address,
        "--num-cpus", str(num_cpus),
        "--dashboard-agent-listen-port", str(agent_port),
        "--temp-dir", topology.ray_temp_dir,
        "--disable-usage-stats",
    )  # fmt: skip


def ray_worker_service(
    topology: Topology, num_cpus: int = DEFAULT_WORKER_CPUS, agent_port: int | None = None
) -> ServiceSpec:
    """One more Ray node joining the head; compose scales it with ``--scale ray-worker=N``.

    ``agent_port`` overrides the topology's dashboard agent port: nodes sharing a machine
    (the local launcher) each need their own.
    """
    port = topology.dashboard_agent_port if agent_port is None else agent_port
    return ServiceSpec(
        name="ray-worker",
        argv=(*_ray_join(topology, num_cpus, port), "--block"),
        environment=_ray_node_env(topology),
    )


def coordinator_service(
    topology: Topology, shards: int = DEFAULT_SHARDS, *, join_ray: bool = True
) -> ServiceSpec:
    """``cluster-sched serve`` with the Ray executor; addresses come from the environment.

    ``join_ray`` adds the zero-CPU ``ray start`` prelude a container needs (module doc).
    """
    env = {
        REDIS_URL_ENV: topology.redis_url,
        RAY_ADDRESS_ENV: topology.ray_address,
        **_tracing_env(topology),
        **RAY_AUTH_ENV,
    }
    return ServiceSpec(
        name="coordinator",
        argv=(
            "cluster-sched", "serve",
            "--executor", "ray",
            "--shards", str(shards),
            "--metrics-port", str(topology.metrics_port),
        ),
        environment=env,
        prelude=_ray_join(topology, 0, topology.dashboard_agent_port) if join_ray else (),
    )  # fmt: skip


def jaeger_service() -> ServiceSpec:
    """Jaeger all-in-one receiving OTLP/HTTP on 4318 (compose only: no local binary)."""
    return ServiceSpec(
        name="jaeger",
        argv=(),
        environment={"COLLECTOR_OTLP_ENABLED": "true"},
    )


def render_compose(topology: Topology = COMPOSE) -> dict[str, dict[str, Any]]:
    """What docker-compose.yml must say for each service's entrypoint, command, environment.

    Only the keys this module owns; images, ports, health checks and dependencies are
    the compose file's own business.
    """
    out: dict[str, dict[str, Any]] = {}
    for spec in (
        redis_service(topology),
        ray_head_service(topology),
        ray_worker_service(topology),
        coordinator_service(topology),
    ):
        rendered = spec.compose_command()
        if spec.name == "redis":
            # The official image's entrypoint script wraps redis-server; keep it.
            rendered = {"command": list(spec.argv)}
        if spec.environment:
            rendered["environment"] = dict(spec.environment)
        out[spec.name] = rendered
    out["jaeger"] = {"environment": dict(jaeger_service().environment)}
    return out
