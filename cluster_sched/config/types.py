"""The KubeSchedulerConfiguration v1 values the rest of the scheduler reads.

Shapes follow upstream's ``k8s.io/kube-scheduler/config/v1`` types; names are snake_case
here, but extension points keep upstream's config spelling (``preFilter``) because they
are keys users write, keys plugin capabilities are declared with, and keys of
:func:`~cluster_sched.config.expand.expand_plugins`' result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from .extenders import Extender

__all__ = [
    "BIND",
    "EXTENSION_POINTS",
    "FILTER",
    "MULTI_POINT",
    "PERMIT",
    "POST_BIND",
    "POST_FILTER",
    "PRE_BIND",
    "PRE_ENQUEUE",
    "PRE_FILTER",
    "PRE_SCORE",
    "QUEUE_SORT",
    "RESERVE",
    "SCORE",
    "PluginConfig",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "Profile",
    "SchedulerConfiguration",
]

PRE_ENQUEUE = "preEnqueue"
QUEUE_SORT = "queueSort"
PRE_FILTER = "preFilter"
FILTER = "filter"
POST_FILTER = "postFilter"
PRE_SCORE = "preScore"
SCORE = "score"
RESERVE = "reserve"
PERMIT = "permit"
PRE_BIND = "preBind"
BIND = "bind"
POST_BIND = "postBind"
#: Not an extension point of its own: plugins listed here are expanded into every
#: extension point they implement.
MULTI_POINT = "multiPoint"

#: Every real extension point, in the order a pod meets them.
EXTENSION_POINTS: tuple[str, ...] = (
    PRE_ENQUEUE,
    QUEUE_SORT,
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    PERMIT,
    PRE_BIND,
    BIND,
    POST_BIND,
)

_ATTRIBUTES: Mapping[str, str] = MappingProxyType(
    {
        PRE_ENQUEUE: "pre_enqueue",
        QUEUE_SORT: "queue_sort",
        PRE_FILTER: "pre_filter",
        FILTER: "filter",
        POST_FILTER: "post_filter",
        PRE_SCORE: "pre_score",
        SCORE: "score",
        RESERVE: "reserve",
        PERMIT: "permit",
        PRE_BIND: "pre_bind",
        BIND: "bind",
        POST_BIND: "post_bind",
        MULTI_POINT: "multi_point",
    }
)

#: Every key of a ``plugins`` section, multiPoint included.
PLUGIN_SET_KEYS: tuple[str, ...] = (*EXTENSION_POINTS, MULTI_POINT)


@dataclass(frozen=True, slots=True)
class PluginRef:
    """One ``{name, weight}`` entry of a plugin set.

    ``weight`` only matters at the score extension point; ``None`` means unset (the
    framework then uses 1). ``field`` is where the entry was written in the
    configuration (``profiles[0].plugins.score.enabled[2]``), empty for built-in
    defaults, so errors found after merging can still name the user's line.
    """

    name: str
    weight: int | None = None
    field: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()

    @property
    def enabled_names(self) -> tuple[str, ...]:
        return tuple(ref.name for ref in self.enabled)

    @property
    def disabled_names(self) -> frozenset[str]:
        return frozenset(ref.name for ref in self.disabled)


_EMPTY = PluginSet()


@dataclass(frozen=True, slots=True)
class Plugins:
    """One :class:`PluginSet` per extension point, plus ``multi_point``."""

    pre_enqueue: PluginSet = _EMPTY
    queue_sort: PluginSet = _EMPTY
    pre_filter: PluginSet = _EMPTY
    filter: PluginSet = _EMPTY
    post_filter: PluginSet = _EMPTY
    pre_score: PluginSet = _EMPTY
    score: PluginSet = _EMPTY
    reserve: PluginSet = _EMPTY
    permit: PluginSet = _EMPTY
    pre_bind: PluginSet = _EMPTY
    bind: PluginSet = _EMPTY
    post_bind: PluginSet = _EMPTY
    multi_point: PluginSet = _EMPTY

    def get(self, point: str) -> PluginSet:
        """The set for ``point`` in config spelling (``"preFilter"``, ``"multiPoint"``)."""
        try:
            return getattr(self, _ATTRIBUTES[point])  # type: ignore[no-any-return]
        except KeyError:
            raise KeyError(f"unknown extension point {point!r}") from None

    def with_set(self, point: str, plugin_set: PluginSet) -> Plugins:
        if point not in _ATTRIBUTES:
            raise KeyError(f"unknown extension point {point!r}")
        return replace(self, **{_ATTRIBUTES[point]: plugin_set})

    def enabled_names(self) -> frozenset[str]:
        """Every plugin enabled anywhere: the plugins a profile must instantiate."""
        return frozenset(ref.name for point in PLUGIN_SET_KEYS for ref in self.get(point).enabled)


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """One ``pluginConfig`` entry. ``args`` is a typed args dataclass for in-tree plugins
    that have one (see ``config.plugin_args``), else the raw read-only mapping."""

    name: str
    args: Any


@dataclass(frozen=True, slots=True)
class Profile:
    """A scheduling profile after defaulting: ``plugins`` is already merged with the
    default plugin set, and ``plugin_config`` holds args for every configured plugin
    plus defaulted args for every enabled in-tree plugin that takes args."""

    scheduler_name: str
    plugins: Plugins
    #: plugin name -> args (typed dataclass, or raw mapping for plugins without a type)
    plugin_config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: None: use the configuration-wide value.
    percentage_of_nodes_to_score: int | None = None

    def args_for(self, plugin_name: str) -> Any:
        """The plugin's args, or None when it has neither config nor typed defaults."""
        return self.plugin_config.get(plugin_name)

    def enabled_plugin_names(self) -> set[str]:
        """Every plugin name enabled at any extension point (out-of-tree ones included)."""
        return {
            ref.name
            for f in fields(self.plugins)
            for ref in getattr(getattr(self.plugins, f.name), "enabled", ())
        }


@dataclass(frozen=True, slots=True)
class LeaderElectionConfiguration:
    """``leaderElection`` (component-base LeaderElectionConfiguration), durations in
    seconds; defaults are upstream kube-scheduler's. Only ``serve`` elects a leader."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"

    @property
    def lease_name(self) -> str:
        """``namespace/name`` of the lease."""
        return f"{self.resource_namespace}/{self.resource_name}"


@dataclass(frozen=True, slots=True)
class SchedulerConfiguration:
    profiles: tuple[Profile, ...]
    #: 0 (or None) means adaptive: 50% minus 1% per 125 nodes, at least 5%.
    percentage_of_nodes_to_score: int | None = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16
    #: HTTP scheduler extenders, non-ignorable ones first (upstream buildExtenders)
    extenders: tuple[Extender, ...] = ()
    leader_election: LeaderElectionConfiguration = field(
        default_factory=LeaderElectionConfiguration
    )
    #: ``--lenient``: one line per problem let through (a misspelled plugin name)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile pods with ``spec.schedulerName == scheduler_name`` use, if any."""
        for profile in self.profiles:
            if profile.scheduler_name == scheduler_name:
                return profile
        return None

    def percentage_for(self, profile: Profile) -> int:
        """percentageOfNodesToScore for ``profile``: its own value wins over the global."""
        if profile.percentage_of_nodes_to_score is not None:
            return profile.percentage_of_nodes_to_score
        return self.percentage_of_nodes_to_score or 0
