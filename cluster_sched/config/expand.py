"""Turn a profile's plugin sets into the ordered plugin list of every extension point.

This is the configuration half of upstream's ``NewFramework``
(``pkg/scheduler/framework/runtime/framework.go``): ``updatePluginList`` for the
explicitly configured extension points, ``expandMultiPointPlugins`` for multiPoint,
then the profile checks (exactly one queueSort, at least one bind) and
``getScoreWeights``. The caller's registry says which extension points each plugin
implements; this module never imports a plugin.

Precedence at one extension point, as upstream:

1. plugins enabled explicitly at that point *and* via multiPoint, in the explicit
   order (the explicit entry overrides the multiPoint one, weight included);
2. the remaining multiPoint plugins that implement the point and are not disabled
   there, in multiPoint order;
3. the remaining explicitly enabled plugins, in their order.

Disabling ``*`` at a point skips multiPoint expansion there entirely.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._fields import INT64_MAX, child, fail, index
from .types import (
    BIND,
    EXTENSION_POINTS,
    MULTI_POINT,
    PLUGIN_SET_KEYS,
    QUEUE_SORT,
    SCORE,
    PluginRef,
    Profile,
    SchedulerConfiguration,
)

__all__ = ["ExpandedPlugins", "expand_config", "expand_plugins"]

#: extension point -> ordered ``(plugin name, weight)``; weight is 0 except at score.
ExpandedPlugins = dict[str, tuple[tuple[str, int], ...]]

# framework.MaxNodeScore and MaxTotalScore: weights times the top node score must not
# overflow int64 when summed.
_MAX_NODE_SCORE = 100
_MAX_TOTAL_SCORE = INT64_MAX


def expand_plugins(
    profile: Profile,
    capabilities: Mapping[str, frozenset[str]],
    *,
    field: str = "profiles[0]",
) -> ExpandedPlugins:
    """Expand ``profile``'s (already merged) plugins into every extension point.

    ``capabilities[name]`` is the set of extension points (config spelling:
    ``"preFilter"``, ``"score"``...) plugin ``name`` implements; a plugin missing from it
    is unknown. ``field`` is the profile's path in the configuration, used in errors.
    Returns a dict with one key per extension point, in :data:`EXTENSION_POINTS` order.
    """
    _check_capabilities(capabilities)
    plugins = profile.plugins
    plugins_path = child(field, "plugins")

    def where(ref: PluginRef, point: str) -> str:
        # Defaults carry no source; blame the point they were expanded from.
        return ref.field or child(plugins_path, point)

    for point in PLUGIN_SET_KEYS:
        for ref in plugins.get(point).enabled:
            if ref.name not in capabilities:
                fail(where(ref, point), f'unknown plugin "{ref.name}"')

    lists: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        names: list[str] = []
        for ref in plugins.get(point).enabled:
            if point not in capabilities[ref.name]:
                fail(where(ref, point), f'plugin "{ref.name}" does not extend {point}')
            if ref.name in names:
                fail(where(ref, point), f'plugin "{ref.name}" already registered as {point}')
            names.append(ref.name)
        lists[point] = names

    multi_point = plugins.multi_point.enabled
    if multi_point:
        for point in EXTENSION_POINTS:
            disabled = plugins.get(point).disabled_names
            if "*" in disabled:
                continue
            explicit = lists[point]
            overridden: set[str] = set()
            expanded: list[str] = []
            for ref in multi_point:
                if point not in capabilities[ref.name] or ref.name in disabled:
                    continue
                if ref.name in explicit:
                    overridden.add(ref.name)
                    continue
                if ref.name in expanded:
                    fail(
                        where(ref, MULTI_POINT),
                        f'plugin "{ref.name}" already registered as {point}',
                    )
                expanded.append(ref.name)
            lists[point] = (
                [n for n in explicit if n in overridden]
                + expanded
                + [n for n in explicit if n not in overridden]
            )

    name = profile.scheduler_name
    if len(lists[QUEUE_SORT]) != 1:
        fail(
            child(plugins_path, QUEUE_SORT),
            f'only one queue sort plugin required for profile with scheduler name "{name}", '
            f"but got {len(lists[QUEUE_SORT])}",
        )
    if not lists[BIND]:
        fail(
            child(plugins_path, BIND),
            f'at least one bind plugin is needed for profile with scheduler name "{name}"',
        )

    weights = _score_weights(profile, capabilities, plugins_path)
    return {
        point: tuple((n, weights[n] if point == SCORE else 0) for n in lists[point])
        for point in EXTENSION_POINTS
    }


def _score_weights(
    profile: Profile, capabilities: Mapping[str, frozenset[str]], plugins_path: str
) -> dict[str, int]:
    """getScoreWeights: the explicit score entry wins over multiPoint; unset or 0 is 1."""
    weights: dict[str, int] = {}
    total = 0
    plugins = profile.plugins
    for ref in (*plugins.score.enabled, *plugins.multi_point.enabled):
        if SCORE not in capabilities[ref.name] or ref.name in weights:
            continue
        weight = ref.weight or 1
        if weight * _MAX_NODE_SCORE > _MAX_TOTAL_SCORE - total:
            fail(
                ref.field or child(plugins_path, SCORE),
                "total score of Score plugins could overflow",
            )
        total += weight * _MAX_NODE_SCORE
        weights[ref.name] = weight
    return weights


def _check_capabilities(capabilities: Mapping[str, frozenset[str]]) -> None:
    """The registry's declarations are code, not config: a bad one is a bug (ValueError)."""
    for name, points in capabilities.items():
        unknown = set(points) - set(EXTENSION_POINTS)
        if unknown:
            raise ValueError(f"plugin {name!r} declares unknown extension points {sorted(unknown)}")


def expand_config(
    config: SchedulerConfiguration, capabilities: Mapping[str, frozenset[str]]
) -> dict[str, ExpandedPlugins]:
    """Expand every profile (keyed by scheduler name) and check they share one queueSort.

    The scheduling queue is shared, so upstream requires the same queue sort plugin for
    every profile; with multiPoint that can only be checked after expansion.
    """
    expanded: dict[str, ExpandedPlugins] = {}
    first_sort: tuple[tuple[str, int], ...] | None = None
    for i, profile in enumerate(config.profiles):
        field = index("profiles", i)
        plugins = expand_plugins(profile, capabilities, field=field)
        if first_sort is None:
            first_sort = plugins[QUEUE_SORT]
        elif plugins[QUEUE_SORT] != first_sort:
            fail(
                child(field, f"plugins.{QUEUE_SORT}"),
                f'queue sort plugin "{plugins[QUEUE_SORT][0][0]}" differs from '
                f'"{first_sort[0][0]}" of profiles[0]: must be the same for all profiles',
            )
        expanded[profile.scheduler_name] = plugins
    return expanded
