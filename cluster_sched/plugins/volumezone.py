"""Upstream VolumeZone (PV topology labels): a stub that Skips."""

from __future__ import annotations

from typing import Any

from cluster_sched.framework.handle import Handle
from cluster_sched.plugins import names
from cluster_sched.plugins._novolumes import NoVolumes


class VolumeZone(NoVolumes):
    name = names.VOLUME_ZONE


def new(args: Any, handle: Handle) -> VolumeZone:
    return VolumeZone()
