"""The in-tree plugins by upstream name (upstream plugins/registry.go NewInTreeRegistry).

Kept beside the plugins so the framework never imports one: the framework knows plugins
only through the ``Registry`` it is handed.
"""

from __future__ import annotations

from cluster_sched.framework.registry import PluginSpec, Registry
from cluster_sched.plugins import (
    defaultbinder,
    dynamicresources,
    imagelocality,
    names,
    nodeaffinity,
    nodename,
    nodeports,
    nodeunschedulable,
    nodevolumelimits,
    queuesort,
    schedulinggates,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)
from cluster_sched.plugins.defaultpreemption import plugin as defaultpreemption
from cluster_sched.plugins.interpodaffinity import plugin as interpodaffinity
from cluster_sched.plugins.noderesources import balanced_allocation, fit
from cluster_sched.plugins.podtopologyspread import plugin as podtopologyspread

__all__ = ["in_tree_specs", "new_in_tree_registry"]


def in_tree_specs() -> list[PluginSpec]:
    """Every in-tree plugin: name, factory ``new(args, handle)`` and class."""
    return [
        PluginSpec(names.PRIORITY_SORT, queuesort.new, queuesort.PrioritySort),
        PluginSpec(names.SCHEDULING_GATES, schedulinggates.new, schedulinggates.SchedulingGates),
        PluginSpec(
            names.NODE_UNSCHEDULABLE, nodeunschedulable.new, nodeunschedulable.NodeUnschedulable
        ),
        PluginSpec(names.NODE_NAME, nodename.new, nodename.NodeName),
        PluginSpec(names.TAINT_TOLERATION, tainttoleration.new, tainttoleration.TaintToleration),
        PluginSpec(names.NODE_AFFINITY, nodeaffinity.new, nodeaffinity.NodeAffinity),
        PluginSpec(names.NODE_PORTS, nodeports.new, nodeports.NodePorts),
        PluginSpec(names.NODE_RESOURCES_FIT, fit.new, fit.Fit),
        PluginSpec(
            names.NODE_RESOURCES_BALANCED_ALLOCATION,
            balanced_allocation.new,
            balanced_allocation.BalancedAllocation,
        ),
        PluginSpec(names.IMAGE_LOCALITY, imagelocality.new, imagelocality.ImageLocality),
        PluginSpec(names.DEFAULT_BINDER, defaultbinder.new, defaultbinder.DefaultBinder),
        PluginSpec(
            names.VOLUME_RESTRICTIONS, volumerestrictions.new, volumerestrictions.VolumeRestrictions
        ),
        PluginSpec(
            names.NODE_VOLUME_LIMITS, nodevolumelimits.new, nodevolumelimits.NodeVolumeLimits
        ),
        PluginSpec(names.VOLUME_BINDING, volumebinding.new, volumebinding.VolumeBinding),
        PluginSpec(names.VOLUME_ZONE, volumezone.new, volumezone.VolumeZone),
        PluginSpec(
            names.DYNAMIC_RESOURCES, dynamicresources.new, dynamicresources.DynamicResources
        ),
        PluginSpec(
            names.INTER_POD_AFFINITY, interpodaffinity.new, interpodaffinity.InterPodAffinity
        ),
        PluginSpec(
            names.POD_TOPOLOGY_SPREAD, podtopologyspread.new, podtopologyspread.PodTopologySpread
        ),
        PluginSpec(
            names.DEFAULT_PREEMPTION, defaultpreemption.new, defaultpreemption.DefaultPreemption
        ),
    ]


def new_in_tree_registry() -> Registry:
    """A Registry of every in-tree plugin; out-of-tree ones load by import path on demand."""
    return Registry(in_tree_specs())
