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

Locked down by default, in both:

- Redis keeps an append-only file (``appendonly yes``, ``appendfsync everysec`` unless
  ``$REDIS_APPENDFSYNC`` / ``$CLUSTER_SCHED_REDIS_APPENDFSYNC`` says otherwise) on the
  ``redis-data`` volume, or in ``<state-dir>/redis-data`` for the launcher.
- Redis requires the ACL user ``cluster-sched`` and its password (the ``default`` user is
  off; clients use ``redis://cluster-sched:PASSWORD@host``),
  runs in protected mode, and listens on the compose network (a container's own
  interfaces) or on 127.0.0.1. Compose takes the password from ``$REDIS_PASSWORD`` (an
  ``.env`` file beside docker-compose.yml; compose refuses to start without it); the
  launcher generates one per run and hands it to redis-server in a 0600 config file,
  never on a command line (``ps`` shows those to every local user).
- Ray uses token authentication (``RAY_AUTH_MODE=token``): the token comes from
  ``$RAY_AUTH_TOKEN`` in compose, a fresh one per launcher run. Its dashboard and Jobs
  API listen on 127.0.0.1 of the head only and are not published.
- Prometheus metrics listen on 127.0.0.1 locally; in a container on its interfaces, with
  the port published on the host's 127.0.0.1 only.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "COMPOSE",
    "COMPOSE_RAY_AUTH_TOKEN",
    "COMPOSE_REDIS_APPENDFSYNC",
    "COMPOSE_REDIS_PASSWORD",
    "DEFAULT_HEAD_CPUS",
    "DEFAULT_SHARDS",
    "DEFAULT_WORKER_CPUS",
    "REDIS_USER",
    "ServiceSpec",
    "Topology",
    "coordinator_service",
    "jaeger_service",
    "ray_auth_env",
    "ray_head_service",
    "ray_worker_service",
    "redis_acl_lines",
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

REDIS_USER: Final = "cluster-sched"
"""The one Redis ACL user every client authenticates as; the ``default`` user is off."""
REDIS_CLI_AUTH_ENV: Final = "REDISCLI_AUTH"
"""The password redis-cli (the compose health check) authenticates with."""

COMPOSE_REDIS_PASSWORD: Final = "${REDIS_PASSWORD:?set REDIS_PASSWORD, see docker-compose.yml}"
"""Compose interpolates the Redis password from the environment or ``.env``; unset, it
refuses to start. URL-safe characters only: it is written into ``redis://`` URLs."""
COMPOSE_REDIS_APPENDFSYNC: Final = "${REDIS_APPENDFSYNC:-everysec}"
"""Redis's fsync policy for the append-only file: at most a second of writes lost on a
crash by default; ``always`` loses none, ``no`` leaves it to the kernel."""
COMPOSE_RAY_AUTH_TOKEN: Final = "${RAY_AUTH_TOKEN:?set RAY_AUTH_TOKEN, see docker-compose.yml}"
"""Compose interpolates Ray's authentication token the same way."""

RAY_NODE_ENV: Final[Mapping[str, str]] = {
    # `ray start --block` drains for 30 s on SIGTERM (meant for Ray Serve replicas); we run
    # no Serve, and `docker compose down` waits only 10 s before SIGKILL.
    "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
}
"""Environment every Ray node gets on top of the Redis URL, OTLP endpoint and Ray auth."""


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
    """Interface Redis and the metrics server bind to: a container's own interfaces
    (the compose network; ports are published on the host's loopback only), or
    loopback locally."""
    dashboard_port: int
    dashboard_agent_port: int
    """Per-node dashboard agent port; fixed in containers, must differ per local node."""
    ray_temp_dir: str
    redis_password: str
    """The password of Redis's ACL user: a compose ``${...}`` reference, or the launcher's
    secret."""
    ray_auth_token: str
    """Ray's token (RAY_AUTH_TOKEN): a compose reference, or the launcher's secret."""
    redis_dir: str = "/data"
    """Where redis-server keeps its append-only file: the compose volume ``redis-data``,
    or ``<state-dir>/redis-data`` locally (kept by ``down``, as compose keeps volumes)."""
    redis_appendfsync: str = COMPOSE_REDIS_APPENDFSYNC
    """``appendfsync``: compose interpolates ``$REDIS_APPENDFSYNC`` (default everysec); the
    launcher reads ``$CLUSTER_SCHED_REDIS_APPENDFSYNC`` (default everysec)."""
    redis_config_file: str | None = None
    """A 0600 file holding the ACL (user and password) that redis-server reads, so the password is
    on no command line (local only: compose passes the reference)."""
    dashboard_host: str = "127.0.0.1"
    """Where Ray's dashboard and Jobs API listen: never beyond the head's loopback."""

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
        redis_password: str,
        ray_auth_token: str,
        redis_config_file: str | None = None,
        otlp_endpoint: str | None = None,
        redis_dir: str = ".",
        redis_appendfsync: str = "everysec",
    ) -> Topology:
        """Every host is 127.0.0.1; the launcher picks the ports, the temp dir and the
        secrets."""
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
            redis_password=redis_password,
            ray_auth_token=ray_auth_token,
            redis_dir=redis_dir,
            redis_appendfsync=redis_appendfsync,
            redis_config_file=redis_config_file,
        )

    @property
    def redis_url(self) -> str:
        """``redis://cluster-sched:PASSWORD@host:port/0``: what every client (coordinator,
        apply, Ray binding workers) is given."""
        return f"redis://{REDIS_USER}:{self.redis_password}@{self.redis_host}:{self.redis_port}/0"

    @property
    def ray_address(self) -> str:
        return f"{self.ray_host}:{self.ray_port}"


#: The compose coordinator's Kubernetes API port (published on the host's 127.0.0.1).
COMPOSE_API_PORT: Final = 6443
#: Where the compose coordinator writes the API's kubeconfig (``docker compose exec``).
COMPOSE_KUBECONFIG: Final = "/tmp/kubeconfig"

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
    redis_password=COMPOSE_REDIS_PASSWORD,
    ray_auth_token=COMPOSE_RAY_AUTH_TOKEN,
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
    """redis-server holding the queue, the objects and the event stream.

    Durable: every write goes to an append-only file in ``redis_dir`` (fsync policy
    ``redis_appendfsync``), so a Redis that crashes or is restarted comes back with the
    cluster; the coordinator waits for it meanwhile. No RDB snapshots (``--save ''``).
    An ACL user and its password required (the default user is off), protected mode on,
    bound to ``bind_host`` only. The ACL comes from ``redis_config_file`` when there is one
    (the password kept off the command line), else ``--user`` arguments (compose: the
    password is a reference the compose file interpolates).
    """
    config = (topology.redis_config_file,) if topology.redis_config_file else ()
    acl = (
        ()
        if config
        else tuple(a for user in _acl_users(topology.redis_password) for a in ("--user", *user))
    )
    return ServiceSpec(
        name="redis",
        argv=(
            "redis-server", *config,
            "--port", str(topology.redis_port),
            "--bind", topology.bind_host,
            "--protected-mode", "yes",
            *acl,
            "--save", "",
            "--appendonly", "yes",
            "--appendfsync", topology.redis_appendfsync,
            "--dir", topology.redis_dir,
        ),
        environment={REDIS_CLI_AUTH_ENV: topology.redis_password},
    )  # fmt: skip


def _acl_users(password: str) -> tuple[tuple[str, ...], ...]:
    return (("default", "off"), (REDIS_USER, "on", f">{password}", "~*", "&*", "+@all"))


def redis_acl_lines(password: str) -> tuple[str, ...]:
    """redis.conf lines: the ``default`` user off, :data:`REDIS_USER` on with
    ``password`` and every permission (the scheduler needs scripts, streams, keys)."""
    return tuple("user " + " ".join(user) for user in _acl_users(password))


def ray_auth_env(topology: Topology) -> dict[str, str]:
    """Token authentication, the same for every Ray node and driver of the cluster.

    Explicit, because Ray decides per process otherwise (a head finding
    ``~/.ray/auth_token`` turns token auth on while a joining node without one fails).
    """
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": topology.ray_auth_token}


def _ray_node_env(topology: Topology) -> dict[str, str]:
    return {
        REDIS_URL_ENV: topology.redis_url,
        **_tracing_env(topology),
        **ray_auth_env(topology),
        **RAY_NODE_ENV,
    }


def ray_head_service(topology: Topology, num_cpus: int = DEFAULT_HEAD_CPUS) -> ServiceSpec:
    """The Ray head: GCS, dashboard, and a raylet with ``num_cpus`` CPUs."""
    return ServiceSpec(
        name="ray-head",
        argv=(
            "ray", "start", "--head",
            "--port", str(topology.ray_port),
            "--num-cpus", str(num_cpus),
            "--dashboard-host", topology.dashboard_host,
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
    topology: Topology,
    shards: int = DEFAULT_SHARDS,
    *,
    join_ray: bool = True,
    api_port: int | None = None,
) -> ServiceSpec:
    """``cluster-sched serve`` with the Ray executor; addresses come from the environment.

    ``join_ray`` adds the zero-CPU ``ray start`` prelude a container needs (module doc);
    ``api_port`` serves the Kubernetes API there (TLS and a bearer token; the kubeconfig
    is written to ``COMPOSE_KUBECONFIG`` in the container).
    """
    api = (
        ("--api", f"{topology.bind_host}:{api_port}", "--kubeconfig", COMPOSE_KUBECONFIG)
        if api_port is not None
        else ()
    )
    env = {
        REDIS_URL_ENV: topology.redis_url,
        RAY_ADDRESS_ENV: topology.ray_address,
        **_tracing_env(topology),
        **ray_auth_env(topology),
    }
    return ServiceSpec(
        name="coordinator",
        argv=(
            "cluster-sched", "serve",
            "--executor", "ray",
            "--shards", str(shards),
            "--metrics-port", str(topology.metrics_port),
            "--metrics-address", topology.bind_host,
            *api,
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
        coordinator_service(topology, api_port=COMPOSE_API_PORT),
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
