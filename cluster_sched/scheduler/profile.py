"""Frameworks from a configuration's profiles (upstream pkg/scheduler/profile NewMap).

The one place a Framework is built for a scheduler, a shard, a binding worker or
``explain``: the in-tree registry is used, and the Framework is set on its own handle,
where DefaultPreemption finds it (plugins are built before their Framework exists).
"""

from __future__ import annotations

from collections.abc import Callable

from cluster_sched.config.types import Profile, SchedulerConfiguration
from cluster_sched.framework.extender import new_http_extenders
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.registry import Registry
from cluster_sched.framework.runtime import Framework
from cluster_sched.plugins.registry import new_in_tree_registry

__all__ = ["new_framework", "new_frameworks"]


def new_framework(
    profile: Profile,
    handle: Handle | None = None,
    *,
    field: str = "profiles[0]",
    registry: Registry | None = None,
) -> Framework:
    """One profile's Framework; ``handle.framework`` is set to it."""
    handle = handle or Handle(profile_name=profile.scheduler_name)
    fwk = Framework.from_profile(
        profile, registry=registry or new_in_tree_registry(), handle=handle, field=field
    )
    handle.framework = fwk
    return fwk


def new_frameworks(
    config: SchedulerConfiguration,
    make_handle: Callable[[Profile], Handle] | None = None,
    *,
    registry: Registry | None = None,
) -> dict[str, Framework]:
    """schedulerName -> Framework for every profile, in configuration order.

    ``make_handle`` gives each profile its handle (snapshot, nominator, executor...);
    by default a bare one. Profile names are unique (the config loader checks)."""
    registry = registry or new_in_tree_registry()
    # One client per extender, shared by every profile (upstream: scheduler-wide).
    extenders = new_http_extenders(config.extenders)
    out: dict[str, Framework] = {}
    for i, profile in enumerate(config.profiles):
        handle = make_handle(profile) if make_handle is not None else None
        if extenders:
            handle = handle or Handle(profile_name=profile.scheduler_name)
            handle.extenders = extenders
        out[profile.scheduler_name] = new_framework(
            profile, handle, field=f"profiles[{i}]", registry=registry
        )
    return out
