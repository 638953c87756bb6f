"""Upstream's defaults: the default plugin set and how user plugin sets merge into it.

Mirrors ``pkg/scheduler/apis/config/v1/default_plugins.go`` (``getDefaultPlugins``,
``mergePlugins``, ``mergePluginSet``) and the scalar defaults of ``defaults.go``.
The default set lives entirely under multiPoint; the framework expands it into the
extension points each plugin implements (``config.expand``).
"""

from __future__ import annotations

from cluster_sched.plugins import names

from .types import PLUGIN_SET_KEYS, PluginRef, Plugins, PluginSet

__all__ = [
    "API_VERSION",
    "DEFAULT_PARALLELISM",
    "DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE",
    "DEFAULT_PLUGINS",
    "DEFAULT_POD_INITIAL_BACKOFF_SECONDS",
    "DEFAULT_POD_MAX_BACKOFF_SECONDS",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "merge_plugin_set",
    "merge_plugins",
]

#: The only configuration version accepted.
API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
#: Profile name when a configuration has a single, unnamed profile (v1.DefaultSchedulerName).
DEFAULT_SCHEDULER_NAME = "default-scheduler"
#: Parallelism of filter/score work.
DEFAULT_PARALLELISM = 16
#: 0 selects upstream's adaptive percentage.
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0
#: Backoff of a pod after its first failed attempt, in seconds.
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
#: Upper bound of the exponential backoff, in seconds.
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10

#: Upstream's default multiPoint list with the feature gates of a current release
#: applied: the in-tree cloud volume-limit plugins are gone (they are invalid in v1
#: now) and DynamicResources (DRA is GA) sits just before DefaultPreemption, so an idle
#: ResourceClaim is deallocated before any pod is evicted. Only weighted entries carry
#: a weight; the framework gives unweighted score plugins weight 1.
DEFAULT_PLUGINS = Plugins(
    multi_point=PluginSet(
        enabled=(
            PluginRef(names.SCHEDULING_GATES),
            PluginRef(names.PRIORITY_SORT),
            PluginRef(names.NODE_UNSCHEDULABLE),
            PluginRef(names.NODE_NAME),
            PluginRef(names.TAINT_TOLERATION, 3),
            PluginRef(names.NODE_AFFINITY, 2),
            PluginRef(names.NODE_PORTS),
            PluginRef(names.NODE_RESOURCES_FIT, 1),
            PluginRef(names.VOLUME_RESTRICTIONS),
            PluginRef(names.NODE_VOLUME_LIMITS),
            PluginRef(names.VOLUME_BINDING),
            PluginRef(names.VOLUME_ZONE),
            PluginRef(names.POD_TOPOLOGY_SPREAD, 2),
            PluginRef(names.INTER_POD_AFFINITY, 2),
            PluginRef(names.DYNAMIC_RESOURCES),
            PluginRef(names.DEFAULT_PREEMPTION),
            PluginRef(names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
            PluginRef(names.IMAGE_LOCALITY, 1),
            PluginRef(names.DEFAULT_BINDER),
        )
    )
)


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Merge a user's plugin set for one extension point into the default one.

    Upstream rules, kept exactly:

    * ``disabled`` names (custom first, then the default set's own) drop defaults; ``*``
      drops them all. The disabled list is carried on so multiPoint expansion knows not
      to re-insert defaults at this point.
    * A default that the user also enables is replaced in place by the user's entry
      (keeping the default order, taking the user's weight); if the user enabled it
      more than once, the last entry replaces it and the earlier ones are appended.
    * Every other user entry is appended after the defaults, duplicates included:
      duplicate detection happens when the framework expands the profile.
    """
    disabled = tuple(PluginRef(ref.name, field=ref.field) for ref in custom.disabled) + tuple(
        PluginRef(ref.name) for ref in default.disabled
    )
    disabled_names = {ref.name for ref in disabled}

    # Later entries overwrite earlier ones, as upstream's map assignment does.
    custom_by_name = {ref.name: (i, ref) for i, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for ref in default.enabled:
            if ref.name in disabled_names:
                continue
            if ref.name in custom_by_name:
                i, override = custom_by_name[ref.name]
                replaced.add(i)
                enabled.append(override)
            else:
                enabled.append(ref)
    enabled.extend(ref for i, ref in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=tuple(enabled), disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """Merge a profile's ``plugins`` into the defaults, one extension point at a time."""
    if custom is None:
        return default
    merged = default
    for point in PLUGIN_SET_KEYS:
        merged = merged.with_set(point, merge_plugin_set(default.get(point), custom.get(point)))
    return merged
