"""Upstream DynamicResources (DRA ResourceClaims): a stub that Skips."""

from __future__ import annotations

from typing import Any

from cluster_sched.framework.handle import Handle
from cluster_sched.plugins import names
from cluster_sched.plugins._novolumes import NoVolumes


class DynamicResources(NoVolumes):
    name = names.DYNAMIC_RESOURCES


def new(args: Any, handle: Handle) -> DynamicResources:
    return DynamicResources()
