"""The coordinator's Frameworks for the binding-task tests: the default profile, its
binder writing through ``store`` (as the coordinator builds them)."""

from __future__ import annotations

import random

from cluster_sched.config.load import default_config
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.runtime import Framework
from cluster_sched.scheduler.binding_cycle import store_binder
from cluster_sched.scheduler.profile import new_framework
from cluster_sched.store.store import Store


def frameworks(store: Store) -> dict[str, Framework]:
    profile = default_config().profiles[0]
    handle = Handle(profile_name=profile.scheduler_name, rng=random.Random(0))
    handle.binder = store_binder(store)
    fwk = new_framework(profile, handle)
    return {profile.scheduler_name: fwk}
