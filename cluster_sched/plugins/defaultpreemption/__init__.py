"""DefaultPreemption: the PostFilter that evicts lower-priority pods to make room."""

from cluster_sched.framework.handle import PreemptionExecutor
from cluster_sched.plugins.defaultpreemption.plugin import NAME, DefaultPreemption, new

__all__ = ["NAME", "DefaultPreemption", "PreemptionExecutor", "new"]
