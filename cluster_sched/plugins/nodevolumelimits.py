"""Upstream NodeVolumeLimits (CSI attach limits): a stub that Skips."""

from __future__ import annotations

from typing import Any

from cluster_sched.framework.handle import Handle
from cluster_sched.plugins import names
from cluster_sched.plugins._novolumes import NoVolumes


class NodeVolumeLimits(NoVolumes):
    name = names.NODE_VOLUME_LIMITS


def new(args: Any, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits()
