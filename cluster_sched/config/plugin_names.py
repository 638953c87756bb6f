"""Every plugin name a configuration writes must name a plugin.

Upstream keeps ``pluginConfig`` args of a name no plugin has (and ``disabled`` entries
no plugin matches) without a word, so a typo (``NodeResourcesFitt``) silently leaves
the default behaviour in place: MostAllocated asked for, LeastAllocated run. Here such a
name is an error naming the file and field (a warning with ``--lenient``, and the entry
is then ignored, as upstream ignores it). Enabled names are checked too, so the error
names the file before any plugin is built.

A name is known when it is an in-tree plugin's (:data:`~cluster_sched.plugins.names.IN_TREE`)
or an out-of-tree import path (``package.module:Attr``, imported when the profile is
built). ``disabled: [{name: "*"}]`` disables every default plugin of the point.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from cluster_sched.plugins import names

from .types import PLUGIN_SET_KEYS

__all__ = ["unknown_plugin_names"]


def _known(name: str) -> bool:
    return name in names.IN_TREE or names.is_import_path(name)


def _named_entries(doc: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """``(field, name, is_disabled_entry)`` of every plugin name written in ``doc``
    (already validated by ``parse_config``: the shapes are right)."""
    for i, profile in enumerate(doc.get("profiles") or ()):
        path = f"profiles[{i}]"
        for j, entry in enumerate(profile.get("pluginConfig") or ()):
            yield f"{path}.pluginConfig[{j}].name", entry.get("name", ""), False
        plugins = profile.get("plugins") or {}
        for point in PLUGIN_SET_KEYS:
            sets = plugins.get(point) or {}
            for key in ("enabled", "disabled"):
                for k, ref in enumerate(sets.get(key) or ()):
                    name = ref.get("name", "")
                    yield f"{path}.plugins.{point}.{key}[{k}].name", name, key == "disabled"


def unknown_plugin_names(doc: Mapping[str, Any]) -> list[str]:
    """One line per plugin name in ``doc`` that names no plugin: ``FIELD: unknown
    plugin "NAME" (did you mean "OTHER"?)``."""
    problems = []
    for field, name, disabled in _named_entries(doc):
        if _known(name) or (disabled and name == "*"):
            continue
        close = difflib.get_close_matches(name, sorted(names.IN_TREE), n=1)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        problems.append(f'{field}: unknown plugin "{name}"{hint}')
    return problems
