"""The seam between deciding preemption and carrying it out.

DefaultPreemption's PostFilter only *decides* (candidate node and victims). Acting on
the decision (upstream prepareCandidate) changes the cluster and the queue, so it goes
through an executor the coordinator puts in ``handle.services["preemption_executor"]``.
``explain`` provides none, which makes its PostFilter a pure dry run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cluster_sched.api.objects import Pod
from cluster_sched.framework.status import Status

#: Key of the executor in ``Handle.services``.
EXECUTOR_SERVICE = "preemption_executor"
#: Key of the Framework the plugin runs filters with (set by whoever builds it).
FRAMEWORK_SERVICE = "framework"
#: Optional: nominated pods per node, a ``Mapping[str, Sequence[Pod]]`` or a
#: ``Callable[[str], Sequence[Pod]]``; filters on simulated nodes add those of equal or
#: higher priority, as upstream RunFilterPluginsWithNominatedPods does.
NOMINATED_PODS_SERVICE = "nominated_pods"


@runtime_checkable
class PreemptionExecutor(Protocol):
    """Carries out a preemption decision (upstream Evaluator.prepareCandidate)."""

    def prepare_candidate(self, pod: Pod, node_name: str, victims: Sequence[Pod]) -> Status:
        """Before ``pod`` is nominated to ``node_name``: reject victims waiting in Permit
        and delete the others, clear the nominations of lower-priority pods nominated to
        ``node_name``, and record the nomination (nominator and store). A non-success
        Status aborts the preemption; it is returned as PostFilter's status."""
        ...
