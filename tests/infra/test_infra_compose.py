"""docker-compose.yml is valid Compose and says exactly what infra/services.py renders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from infra import services

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).with_name("compose-spec.json")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_file_matches_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft201909Validator(schema)
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def test_schema_rejects_a_broken_compose_file(compose: dict[str, Any]) -> None:
    """The validation above would catch a mistake: a misspelt key fails it."""
    broken = json.loads(json.dumps(compose))
    broken["services"]["redis"]["healthchek"] = broken["services"]["redis"].pop("healthcheck")
    assert not jsonschema.Draft201909Validator(json.loads(SCHEMA.read_text())).is_valid(broken)


def test_the_five_services_are_there(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"redis", "ray-head", "ray-worker", "coordinator", "jaeger"}


@pytest.mark.parametrize("name", sorted(services.render_compose()), ids=str)
def test_service_command_and_environment_come_from_services_py(
    compose: dict[str, Any], name: str
) -> None:
    service = compose["services"][name]
    for key, expected in services.render_compose()[name].items():
        got = service.get(key)
        if key == "environment":
            got = {k: str(v) for k, v in (got or {}).items()}
        assert got == expected, f"{name}.{key}"


def test_ray_worker_is_scalable(compose: dict[str, Any]) -> None:
    worker = compose["services"]["ray-worker"]
    assert "container_name" not in worker
    assert "ports" not in worker


def test_dependencies_wait_for_health(compose: dict[str, Any]) -> None:
    svc = compose["services"]
    assert all(
        "healthcheck" in svc[name] for name in ("redis", "ray-head", "coordinator", "jaeger")
    )
    assert svc["ray-worker"]["depends_on"] == {"ray-head": {"condition": "service_healthy"}}
    assert {dep: spec["condition"] for dep, spec in svc["coordinator"]["depends_on"].items()} == {
        "redis": "service_healthy",
        "ray-head": "service_healthy",
        "jaeger": "service_healthy",
    }


def test_jaeger_receives_otlp_over_http(compose: dict[str, Any]) -> None:
    jaeger = compose["services"]["jaeger"]
    assert jaeger["image"].startswith("jaegertracing/all-in-one:")
    assert {"127.0.0.1:16686:16686", "127.0.0.1:4318:4318"} <= set(jaeger["ports"])
    assert services.COMPOSE.otlp_endpoint == "http://jaeger:4318"


def test_images_are_built_from_infra_dockerfile(compose: dict[str, Any]) -> None:
    for name in ("ray-head", "ray-worker", "coordinator"):
        build = compose["services"][name]["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).is_file()


def test_local_topology_maps_hosts_to_loopback() -> None:
    local = services.Topology.local(
        redis_port=1, ray_port=2, metrics_port=3, dashboard_port=4, dashboard_agent_port=5,
        ray_temp_dir="/tmp/x", redis_password="pw", ray_auth_token="tok",
        redis_config_file="/state/redis.conf",
    )  # fmt: skip
    coordinator = services.coordinator_service(local, join_ray=False)
    assert coordinator.environment == {
        "CLUSTER_SCHED_REDIS_URL": "redis://cluster-sched:pw@127.0.0.1:1/0",
        "RAY_ADDRESS": "127.0.0.1:2",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": "tok",
    }
    compose_argv = services.coordinator_service(services.COMPOSE).argv
    assert coordinator.argv == tuple(
        a.replace("9090", "3").replace("0.0.0.0", "127.0.0.1") for a in compose_argv
    )
    assert coordinator.prelude == ()
    redis = services.redis_service(local).argv
    assert redis[:2] == ("redis-server", "/state/redis.conf")  # the password file
    assert "pw" not in " ".join(redis) and "--user" not in redis
    assert redis[redis.index("--bind") + 1] == "127.0.0.1"


# --------------------------------------------------------------------- locked down


def _ports(service: dict[str, Any]) -> list[str]:
    return [str(p) for p in service.get("ports", [])]


def test_no_port_is_published_beyond_the_hosts_loopback(compose: dict[str, Any]) -> None:
    published = {name: _ports(svc) for name, svc in compose["services"].items()}
    assert any(published.values())
    for name, ports in published.items():
        for port in ports:
            assert port.startswith("127.0.0.1:") and port.count(":") == 2, (name, port)
    assert "ports" not in compose["services"]["ray-head"]  # dashboard, Jobs API, GCS


def test_redis_requires_an_acl_user_and_password_from_the_environment(
    compose: dict[str, Any],
) -> None:
    reference = services.COMPOSE_REDIS_PASSWORD
    assert reference.startswith("${REDIS_PASSWORD:?")  # compose refuses to start unset
    command = compose["services"]["redis"]["command"]
    users = [command[i + 1 : i + 7] for i, arg in enumerate(command) if arg == "--user"]
    assert users == [
        ["default", "off", "--user", "cluster-sched", "on", f">{reference}"],
        ["cluster-sched", "on", f">{reference}", "~*", "&*", "+@all"],
    ]
    assert "--requirepass" not in command  # the default user is off, not password-protected
    assert command[command.index("--protected-mode") + 1] == "yes"
    redis = compose["services"]["redis"]
    assert redis["environment"]["REDISCLI_AUTH"] == reference
    health = redis["healthcheck"]["test"]
    assert health[health.index("--user") + 1] == "cluster-sched"
    urls = [
        svc["environment"]["CLUSTER_SCHED_REDIS_URL"]
        for svc in compose["services"].values()
        if "CLUSTER_SCHED_REDIS_URL" in svc.get("environment", {})
    ]
    assert len(urls) == 3
    assert set(urls) == {f"redis://cluster-sched:{reference}@redis:6379/0"}


def test_launcher_gives_redis_the_same_acl_in_a_file() -> None:
    assert services.redis_acl_lines("pw") == (
        "user default off",
        "user cluster-sched on >pw ~* &* +@all",
    )


def test_ray_authenticates_with_a_token_everywhere(compose: dict[str, Any]) -> None:
    ray_services = ("ray-head", "ray-worker", "coordinator")
    for name in ray_services:
        env = compose["services"][name]["environment"]
        assert env["RAY_AUTH_MODE"] == "token", name
        assert env["RAY_AUTH_TOKEN"] == services.COMPOSE_RAY_AUTH_TOKEN, name
    assert "disabled" not in (ROOT / "docker-compose.yml").read_text()
    head = compose["services"]["ray-head"]["command"]
    assert head[head.index("--dashboard-host") + 1] == "127.0.0.1"


def test_metrics_listen_on_loopback_unless_told_otherwise() -> None:
    from cluster_sched.cli import build_parser

    args = build_parser().parse_args(["serve", "--metrics-port", "0"])
    assert args.metrics_address == "127.0.0.1"
    argv = services.coordinator_service(services.COMPOSE).argv
    # In the container: its own interfaces, published on the host's loopback only.
    assert argv[argv.index("--metrics-address") + 1] == "0.0.0.0"


# --------------------------------------------------------------------- durable


def test_redis_keeps_an_append_only_file_on_a_volume(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] == "${REDIS_APPENDFSYNC:-everysec}"
    assert command[command.index("--save") + 1] == ""  # no RDB snapshots besides the AOF
    data_dir = command[command.index("--dir") + 1]
    assert f"redis-data:{data_dir}" in redis["volumes"]
    assert "redis-data" in compose["volumes"]


def test_launcher_runs_redis_with_the_same_durability() -> None:
    local = services.Topology.local(
        redis_port=1, ray_port=2, metrics_port=3, dashboard_port=4, dashboard_agent_port=5,
        ray_temp_dir="/tmp/x", redis_password="pw", ray_auth_token="tok",
        redis_config_file="/state/redis.conf", redis_dir="/state/redis-data",
    )  # fmt: skip
    argv = services.redis_service(local).argv
    compose_argv = services.redis_service(services.COMPOSE).argv
    for flag in ("--appendonly", "--save", "--protected-mode"):
        assert argv[argv.index(flag) + 1] == compose_argv[compose_argv.index(flag) + 1], flag
    assert argv[argv.index("--appendfsync") + 1] == "everysec"
    assert argv[argv.index("--dir") + 1] == "/state/redis-data"
