"""``leaderElection`` of KubeSchedulerConfiguration v1 (component-base's
LeaderElectionConfiguration): decoding, upstream's defaults and validation.

Durations are Go duration strings as upstream writes them ("15s", "1m30s", "500ms").
Only the ``leases`` resource lock exists here (the lease lives in Redis, see
``scheduler/leader.py``); the other upstream locks were removed upstream too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._fields import check_fields, child, fail, fail_unsupported, opt_bool, opt_str
from .types import LeaderElectionConfiguration

__all__ = ["parse_duration", "parse_leader_election"]

_FIELDS = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(value: object, path: str) -> float:
    """A Go duration string (time.ParseDuration) in seconds."""
    if not isinstance(value, str) or not value:
        fail(path, f"expected a duration such as '15s', got {value!r}")
    text = value[1:] if value[0] in "+-" else value
    if text == "0":
        return 0.0
    if not text:
        fail(path, f"invalid duration {value!r}")
    pos, total = 0, 0.0
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None:
            fail(path, f"invalid duration {value!r}")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return -total if value[0] == "-" else total


def _duration(obj: Mapping[str, Any], key: str, path: str, default: float) -> float:
    if key not in obj or obj[key] is None:
        return default
    seconds = parse_duration(obj[key], child(path, key))
    if seconds <= 0:
        fail(child(path, key), f"must be greater than zero, got {obj[key]!r}")
    return seconds


def parse_leader_election(obj: Mapping[str, Any] | None, path: str) -> LeaderElectionConfiguration:
    """Defaults as upstream's RecommendedDefaultLeaderElectionConfiguration with the
    scheduler's lock name; validation as ValidateLeaderElectionConfiguration."""
    d = LeaderElectionConfiguration()
    if obj is None:
        return d
    check_fields(obj, path, _FIELDS)
    elect = opt_bool(obj, "leaderElect", path)
    lease = _duration(obj, "leaseDuration", path, d.lease_duration)
    renew = _duration(obj, "renewDeadline", path, d.renew_deadline)
    retry = _duration(obj, "retryPeriod", path, d.retry_period)
    lock = opt_str(obj, "resourceLock", path) or d.resource_lock
    name = opt_str(obj, "resourceName", path)
    namespace = opt_str(obj, "resourceNamespace", path)
    if lock != "leases":
        fail_unsupported(child(path, "resourceLock"), lock, ("leases",))
    if lease <= renew:
        fail(child(path, "leaseDuration"), "LeaseDuration must be greater than RenewDeadline")
    if renew <= retry:
        fail(child(path, "renewDeadline"), "RenewDeadline must be greater than RetryPeriod")
    if name == "":
        fail(child(path, "resourceName"), "resourceName is required")
    if namespace == "":
        fail(child(path, "resourceNamespace"), "resourceNamespace is required")
    return LeaderElectionConfiguration(
        leader_elect=d.leader_elect if elect is None else elect,
        lease_duration=lease,
        renew_deadline=renew,
        retry_period=retry,
        resource_lock=lock,
        resource_name=name or d.resource_name,
        resource_namespace=namespace or d.resource_namespace,
    )
