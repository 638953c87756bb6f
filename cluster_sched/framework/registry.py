"""Plugin registry: plugins by name; out-of-tree ones by import path (upstream runtime.Registry).

The in-tree plugins are listed by ``cluster_sched.plugins.registry`` (upstream
NewInTreeRegistry), so the framework never imports a plugin.

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
    """Name → PluginSpec: the specs it was built with plus any out-of-tree names it is
    asked about."""

    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs = {spec.name: spec for spec in specs}

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
