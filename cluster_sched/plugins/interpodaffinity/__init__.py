"""InterPodAffinity: required pod (anti-)affinity in Filter, preferred terms in Score."""

from cluster_sched.plugins.interpodaffinity.plugin import NAME, InterPodAffinity, new

__all__ = ["NAME", "InterPodAffinity", "new"]
