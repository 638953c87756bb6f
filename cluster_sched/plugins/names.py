"""Plugin names, spelled exactly as upstream's ``pkg/scheduler/framework/plugins/names``.

One place for every in-tree name so the config defaults, the registry and the plugin
modules cannot drift apart. Out-of-tree plugins are named by Python import path
(``my_pkg.plugins:MyPlugin``); :func:`is_import_path` recognises that form.
"""

from __future__ import annotations

import re

__all__ = [
    "DEFAULT_BINDER",
    "DEFAULT_PREEMPTION",
    "DYNAMIC_RESOURCES",
    "IMAGE_LOCALITY",
    "INTER_POD_AFFINITY",
    "IN_TREE",
    "NODE_AFFINITY",
    "NODE_NAME",
    "NODE_PORTS",
    "NODE_RESOURCES_BALANCED_ALLOCATION",
    "NODE_RESOURCES_FIT",
    "NODE_UNSCHEDULABLE",
    "NODE_VOLUME_LIMITS",
    "POD_TOPOLOGY_SPREAD",
    "PRIORITY_SORT",
    "REMOVED_IN_V1",
    "SCHEDULING_GATES",
    "TAINT_TOLERATION",
    "VOLUME_BINDING",
    "VOLUME_RESTRICTIONS",
    "VOLUME_ZONE",
    "is_import_path",
]

PRIORITY_SORT = "PrioritySort"
SCHEDULING_GATES = "SchedulingGates"
DEFAULT_BINDER = "DefaultBinder"
DEFAULT_PREEMPTION = "DefaultPreemption"
DYNAMIC_RESOURCES = "DynamicResources"
IMAGE_LOCALITY = "ImageLocality"
INTER_POD_AFFINITY = "InterPodAffinity"
NODE_AFFINITY = "NodeAffinity"
NODE_NAME = "NodeName"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
TAINT_TOLERATION = "TaintToleration"
VOLUME_BINDING = "VolumeBinding"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
VOLUME_ZONE = "VolumeZone"

#: Every in-tree plugin's name (the in-tree registry registers exactly these): a name
#: that is neither one of them nor an import path is a typo.
IN_TREE: frozenset[str] = frozenset(
    {
        PRIORITY_SORT,
        SCHEDULING_GATES,
        DEFAULT_BINDER,
        DEFAULT_PREEMPTION,
        DYNAMIC_RESOURCES,
        IMAGE_LOCALITY,
        INTER_POD_AFFINITY,
        NODE_AFFINITY,
        NODE_NAME,
        NODE_PORTS,
        NODE_RESOURCES_BALANCED_ALLOCATION,
        NODE_RESOURCES_FIT,
        NODE_UNSCHEDULABLE,
        NODE_VOLUME_LIMITS,
        POD_TOPOLOGY_SPREAD,
        TAINT_TOLERATION,
        VOLUME_BINDING,
        VOLUME_RESTRICTIONS,
        VOLUME_ZONE,
    }
)

#: Plugins upstream removed; a v1 configuration that names one is invalid
#: (``invalidPluginsByVersion`` in upstream's config validation).
REMOVED_IN_V1: frozenset[str] = frozenset(
    {"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"}
)

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_IMPORT_PATH = re.compile(rf"{_DOTTED}:{_DOTTED}")


def is_import_path(name: str) -> bool:
    """True if ``name`` is an out-of-tree plugin reference ``package.module:Attr``.

    In-tree names never contain ``:``, so the colon alone tells the two kinds apart;
    this checks the whole shape so a typo fails at config load, not at import.
    """
    return _IMPORT_PATH.fullmatch(name) is not None
