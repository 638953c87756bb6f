"""What DynamicResources does for pods without ResourceClaims.

cluster-sched does not model ResourceClaims yet. Upstream's plugin Skips (PreFilter) for
pods that use none; the stub built on ``NoVolumes`` does exactly that for every pod, so
profiles that name it load and behave as upstream does for such pods.
"""

from __future__ import annotations

from typing import Any

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.interfaces import NodeSlice, PreFilterResult
from cluster_sched.framework.status import Status, skip
from cluster_sched.framework.verdicts import NodeVerdicts


class NoVolumes:
    name = ""

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Any
    ) -> tuple[PreFilterResult | None, Status]:
        return None, skip()

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> NodeVerdicts:
        return NodeVerdicts.passing(len(nodes))

    def events_to_register(self) -> tuple[()]:
        """They never reject a pod here, so no event needs to requeue one for them."""
        return ()
