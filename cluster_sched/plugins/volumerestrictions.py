"""Upstream VolumeRestrictions (ReadWriteOncePod, conflicting inline volumes): a stub that Skips."""

from __future__ import annotations

from typing import Any

from cluster_sched.framework.handle import Handle
from cluster_sched.plugins import names
from cluster_sched.plugins._novolumes import NoVolumes


class VolumeRestrictions(NoVolumes):
    name = names.VOLUME_RESTRICTIONS


def new(args: Any, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions()
