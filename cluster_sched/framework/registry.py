"""Plugin registry: in-tree plugins by upstream name, out-of-tree ones by import path.

An out-of-tree plugin is named ``package.module:Class`` in the configuration. The class
is built through its ``new(args, handle)`` classmethod/staticmethod if it has one, else as
``Class(args, handle)``. Its extension points are read from the methods it defines (see
``interfaces.capabilities_of``), so nothing in this repository needs to know about it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_sched.errors import PluginError
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import capabilities_of
from cluster_sched.plugins import names

Factory = Callable[[Any, Handle], Any]


@dataclass(frozen=True, slots=True)
class PluginSpec:
    name: str
    factory: Factory
    plugin_class: type

    @property
    def capabilities(self) -> frozenset[str]:
        return capabilities_of(self.plugin_class)


def _in_tree() -> dict[str, PluginSpec]:
    from cluster_sched.plugins import (
        default_binder,
        image_locality,
        node_affinity,
        node_name,
        node_ports,
        node_unschedulable,
        priority_sort,
        scheduling_gates,
        taint_toleration,
        volumes,
    )
    from cluster_sched.plugins.noderesources import balanced_allocation, fit

    specs = [
        PluginSpec(names.PRIORITY_SORT, priority_sort.new, priority_sort.PrioritySort),
        PluginSpec(names.SCHEDULING_GATES, scheduling_gates.new, scheduling_gates.SchedulingGates),
        PluginSpec(
            names.NODE_UNSCHEDULABLE, node_unschedulable.new, node_unschedulable.NodeUnschedulable
        ),
        PluginSpec(names.NODE_NAME, node_name.new, node_name.NodeName),
        PluginSpec(names.TAINT_TOLERATION, taint_toleration.new, taint_toleration.TaintToleration),
        PluginSpec(names.NODE_AFFINITY, node_affinity.new, node_affinity.NodeAffinity),
        PluginSpec(names.NODE_PORTS, node_ports.new, node_ports.NodePorts),
        PluginSpec(names.NODE_RESOURCES_FIT, fit.new, fit.Fit),
        PluginSpec(
            names.NODE_RESOURCES_BALANCED_ALLOCATION,
            balanced_allocation.new,
            balanced_allocation.BalancedAllocation,
        ),
        PluginSpec(names.IMAGE_LOCALITY, image_locality.new, image_locality.ImageLocality),
        PluginSpec(names.DEFAULT_BINDER, default_binder.new, default_binder.DefaultBinder),
        PluginSpec(
            names.VOLUME_RESTRICTIONS, volumes.new_volume_restrictions, volumes.VolumeRestrictions
        ),
        PluginSpec(
            names.NODE_VOLUME_LIMITS, volumes.new_node_volume_limits, volumes.NodeVolumeLimits
        ),
        PluginSpec(names.VOLUME_BINDING, volumes.new_volume_binding, volumes.VolumeBinding),
        PluginSpec(names.VOLUME_ZONE, volumes.new_volume_zone, volumes.VolumeZone),
        PluginSpec(
            names.DYNAMIC_RESOURCES, volumes.new_dynamic_resources, volumes.DynamicResources
        ),
    ]
    specs.extend(_cross_node_specs())
    return {s.name: s for s in specs}


def _cross_node_specs() -> list[PluginSpec]:
    """InterPodAffinity, PodTopologySpread and DefaultPreemption, when present."""
    out: list[PluginSpec] = []
    for module_name, cls_name, name in (
        (
            "cluster_sched.plugins.interpodaffinity.plugin",
            "InterPodAffinity",
            names.INTER_POD_AFFINITY,
        ),
        (
            "cluster_sched.plugins.podtopologyspread.plugin",
            "PodTopologySpread",
            names.POD_TOPOLOGY_SPREAD,
        ),
        (
            "cluster_sched.plugins.defaultpreemption.plugin",
            "DefaultPreemption",
            names.DEFAULT_PREEMPTION,
        ),
    ):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue
            raise
        out.append(PluginSpec(name, module.new, getattr(module, cls_name)))
    return out


def load_out_of_tree(name: str) -> PluginSpec:
    """Import ``package.module:Attr`` and wrap it as a PluginSpec."""
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise PluginError(f'plugin "{name}": an out-of-tree plugin is named "package.module:Attr"')
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f'plugin "{name}": cannot import module {module_name!r}: {exc}') from exc
    target = getattr(module, attr, None)
    if target is None:
        raise PluginError(f'plugin "{name}": module {module_name!r} has no attribute {attr!r}')
    if not isinstance(target, type):
        raise PluginError(
            f'plugin "{name}": {attr!r} must be a class (its methods say which extension points it implements)'
        )
    factory: Factory = getattr(target, "new", None) or target
    return PluginSpec(name, factory, target)


class Registry:
    """Name → PluginSpec; in-tree plus any out-of-tree names it is asked about."""

    def __init__(self, extra: Iterable[PluginSpec] = ()) -> None:
        self._specs = _in_tree()
        for spec in extra:
            self._specs[spec.name] = spec

    def get(self, name: str) -> PluginSpec | None:
        spec = self._specs.get(name)
        if spec is None and names.is_import_path(name):
            spec = load_out_of_tree(name)
            self._specs[name] = spec
        return spec

    def capabilities(self, plugin_names: Iterable[str] = ()) -> Mapping[str, frozenset[str]]:
        """Capabilities of every in-tree plugin plus the out-of-tree ``plugin_names``."""
        for n in plugin_names:
            self.get(n)
        return {name: spec.capabilities for name, spec in self._specs.items()}

    def names(self) -> list[str]:
        return sorted(self._specs)
