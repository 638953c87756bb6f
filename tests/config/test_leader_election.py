"""leaderElection: upstream's defaults, Go durations, and its validation messages."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.config import parse_config
from cluster_sched.config.defaults import API_VERSION, KIND
from cluster_sched.config.leader_election import parse_duration
from cluster_sched.config.types import LeaderElectionConfiguration
from cluster_sched.errors import ConfigError


def _le(**fields: Any) -> LeaderElectionConfiguration:
    doc = {"apiVersion": API_VERSION, "kind": KIND, "leaderElection": fields}
    return parse_config(doc).leader_election


def test_defaults_are_upstreams() -> None:
    le = parse_config({"apiVersion": API_VERSION, "kind": KIND}).leader_election
    assert le == LeaderElectionConfiguration(
        leader_elect=True,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        resource_lock="leases",
        resource_name="kube-scheduler",
        resource_namespace="kube-system",
    )
    assert le.lease_name == "kube-system/kube-scheduler"


def test_fields_are_read() -> None:
    le = _le(
        leaderElect=False,
        leaseDuration="1m30s",
        renewDeadline="20s",
        retryPeriod="500ms",
        resourceName="my-scheduler",
        resourceNamespace="sched",
    )
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        False,
        90.0,
        20.0,
        0.5,
    )
    assert le.lease_name == "sched/my-scheduler"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15.0), ("1h2m", 3720.0), ("1.5s", 1.5), ("250ms", 0.25), ("0", 0.0)],
    ids=["s", "hm", "fraction", "ms", "zero"],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "x") == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"leaseDuration": "10s"},
            "leaseDuration: LeaseDuration must be greater than RenewDeadline",
        ),
        ({"retryPeriod": "10s"}, "renewDeadline: RenewDeadline must be greater than RetryPeriod"),
        ({"retryPeriod": "soon"}, "retryPeriod: invalid duration 'soon'"),
        ({"leaseDuration": "-1s"}, "leaseDuration: must be greater than zero"),
        ({"resourceLock": "endpoints"}, 'resourceLock: unsupported value "endpoints"'),
        ({"resourceName": ""}, "resourceName: resourceName is required"),
        ({"leaderElect": "yes"}, "leaderElection.leaderElect"),
        ({"leaseTime": "1s"}, "leaseTime: unknown field"),
    ],
    ids=[
        "lease-le-renew",
        "renew-le-retry",
        "bad-duration",
        "negative",
        "lock",
        "name",
        "bool",
        "unknown",
    ],
)
def test_invalid(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _le(**fields)
    assert message in str(err.value)
