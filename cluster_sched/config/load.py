"""Read a KubeSchedulerConfiguration (v1) file, apply upstream's defaults, validate it.

The pipeline is upstream's: strict decode -> ``SetDefaults_KubeSchedulerConfiguration``
(default profile, default scheduler name, plugin merge, plugin args defaults) ->
``ValidateKubeSchedulerConfiguration``. Validation that needs to know which extension
points each plugin implements happens later, in ``config.expand``, because only the
plugin registry knows that.

Every problem is a :class:`~cluster_sched.errors.ConfigError` whose one line names the
file and the field (``sched.yaml: profiles[0].pluginConfig[1].args.x: ...``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from cluster_sched.errors import ConfigError, PluginError, one_line
from cluster_sched.plugins import names

from ._fields import (
    as_mapping,
    check_fields,
    child,
    fail,
    fail_unsupported,
    index,
    opt_bool,
    opt_int,
    opt_list,
    opt_mapping,
    opt_str,
)
from .defaults import (
    API_VERSION,
    DEFAULT_PARALLELISM,
    DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE,
    DEFAULT_PLUGINS,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    merge_plugins,
)
from .extenders import Extender, parse_extenders
from .leader_election import parse_leader_election
from .plugin_args import (
    NodeResourcesFitArgs,
    default_plugin_args,
    has_typed_args,
    parse_plugin_args,
)
from .plugin_names import unknown_plugin_names
from .types import (
    PLUGIN_SET_KEYS,
    QUEUE_SORT,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
)

__all__ = ["default_config", "load_config", "naming_config_file", "parse_config"]

#: Top-level fields upstream's v1 type has but that change nothing here (no API server
#: client or profiling endpoint): accepted so real files load, ignored.
_IGNORED_MAPPINGS = ("clientConnection",)
_IGNORED_BOOLS = ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive")
_TOP_LEVEL_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "leaderElection",
    *_IGNORED_MAPPINGS,
    *_IGNORED_BOOLS,
)
_PROFILE_FIELDS = (
    "schedulerName",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "plugins",
    "pluginConfig",
)


def load_config(path: str | Path | None, *, lenient: bool = False) -> SchedulerConfiguration:
    """Load and validate the configuration file at ``path``; None gives the defaults.

    A plugin name that names no plugin (``config.plugin_names``) is an error, or with
    ``lenient`` a line of the result's ``warnings``."""
    if path is None:
        return default_config()
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{source}: cannot read configuration: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"{source}: configuration is not UTF-8 text") from err
    doc = _load_yaml(text, source)
    if doc is None:
        raise ConfigError(f"{source}: configuration file is empty")
    config = parse_config(doc, source=source)
    problems = [f"{source}: {line}" for line in unknown_plugin_names(doc)]
    if problems and not lenient:
        raise ConfigError(one_line(problems[0]))
    return replace(config, warnings=tuple(f"{line}; ignored" for line in problems))


@contextmanager
def naming_config_file(path: str | Path | None) -> Iterator[None]:
    """Errors raised while profiles are built from the configuration at ``path`` (plugins
    imported, placed at their extension points, given their args) name the file, as
    errors found while loading it do."""
    try:
        yield
    except (ConfigError, PluginError) as err:
        prefix = f"{path}:"
        if path is None or str(err).startswith(prefix):
            raise
        raise type(err)(one_line(f"{prefix} {err}")) from err


def default_config() -> SchedulerConfiguration:
    """What kube-scheduler runs with no configuration file."""
    return parse_config({"apiVersion": API_VERSION, "kind": KIND})


def parse_config(doc: Mapping[str, Any], source: str = "") -> SchedulerConfiguration:
    """Decode, default and validate one configuration document (already YAML-parsed).

    ``source`` (usually the file name) prefixes every error message.
    """
    try:
        return _parse(doc)
    except ConfigError as err:
        if source:
            raise ConfigError(one_line(f"{source}: {err}")) from None
        raise ConfigError(one_line(str(err))) from None


# --- YAML -------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys, as upstream's strict decoder does."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # unhashable key: construct_mapping reports it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate field {key!r}", key_node.start_mark
            )
    mapping: dict[Any, Any] = loader.construct_mapping(node)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = err.problem or err.context or "syntax error"
        raise ConfigError(one_line(f"{source}: invalid YAML{where}: {reason}")) from err
    except yaml.YAMLError as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else "syntax error"
        raise ConfigError(one_line(f"{source}: invalid YAML: {reason}")) from err


# --- document ---------------------------------------------------------------------------


def _percentage(obj: Mapping[str, Any], path: str) -> int | None:
    value = opt_int(obj, "percentageOfNodesToScore", path)
    if value is not None and not 0 <= value <= 100:
        fail(
            child(path, "percentageOfNodesToScore"),
            f"invalid value {value}: not in valid range [0-100]",
        )
    return value


def _parse(doc: Mapping[str, Any]) -> SchedulerConfiguration:
    obj = as_mapping(doc, "")
    for key, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = opt_str(obj, key, "")
        if not value:
            fail(key, "required value")
        if value != want:
            fail_unsupported(key, value, (want,))
    check_fields(obj, "", _TOP_LEVEL_FIELDS)
    for key in _IGNORED_MAPPINGS:
        opt_mapping(obj, key, "")
    for key in _IGNORED_BOOLS:
        opt_bool(obj, key, "")
    leader_election = parse_leader_election(
        opt_mapping(obj, "leaderElection", ""), "leaderElection"
    )
    opt_int(obj, "percentageOfPlacementsToScore", "")
    extenders = parse_extenders(opt_list(obj, "extenders", ""))

    parallelism = opt_int(obj, "parallelism", "")
    parallelism = DEFAULT_PARALLELISM if parallelism is None else parallelism
    if parallelism <= 0:
        fail(
            "parallelism",
            f"invalid value {parallelism}: should be an integer value greater than zero",
        )
    percentage = _percentage(obj, "")
    initial = opt_int(obj, "podInitialBackoffSeconds", "", bits=64)
    initial = DEFAULT_POD_INITIAL_BACKOFF_SECONDS if initial is None else initial
    if initial <= 0:
        fail("podInitialBackoffSeconds", f"invalid value {initial}: must be greater than 0")
    maximum = opt_int(obj, "podMaxBackoffSeconds", "", bits=64)
    maximum = DEFAULT_POD_MAX_BACKOFF_SECONDS if maximum is None else maximum
    if maximum < initial:
        fail(
            "podMaxBackoffSeconds",
            f"invalid value {maximum}: must be greater than or equal to PodInitialBackoffSeconds",
        )

    raw_profiles: Sequence[Any] = opt_list(obj, "profiles", "") or ({},)
    # Only a lone profile gets the default name; with several, each must be named.
    default_name = DEFAULT_SCHEDULER_NAME if len(raw_profiles) == 1 else None
    profiles = tuple(
        _parse_profile(raw, index("profiles", i), default_name)
        for i, raw in enumerate(raw_profiles)
    )
    _check_distinct_names(profiles)
    _check_common_queue_sort(profiles)
    profiles = _apply_ignored_resources(profiles, extenders)
    return SchedulerConfiguration(
        profiles=profiles,
        percentage_of_nodes_to_score=(
            DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE if percentage is None else percentage
        ),
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        parallelism=parallelism,
        # upstream buildExtenders: ignorable extenders go last
        extenders=tuple(sorted(extenders, key=lambda e: e.ignorable)),
        leader_election=leader_election,
    )


def _apply_ignored_resources(
    profiles: tuple[Profile, ...], extenders: Sequence[Extender]
) -> tuple[Profile, ...]:
    """Managed resources marked ignoredByScheduler become NodeResourcesFit's
    ``ignoredResources`` in every profile (upstream buildExtenders: the extenders' list
    replaces the profile's own)."""
    ignored = tuple(
        r.name for ext in extenders for r in ext.managed_resources if r.ignored_by_scheduler
    )
    if not ignored:
        return profiles
    out = []
    for i, profile in enumerate(profiles):
        args = profile.plugin_config.get(names.NODE_RESOURCES_FIT)
        if not isinstance(args, NodeResourcesFitArgs):
            fail(index("profiles", i), "can't find NodeResourcesFitArgs in plugin config")
        plugin_config = dict(profile.plugin_config)
        plugin_config[names.NODE_RESOURCES_FIT] = replace(args, ignored_resources=ignored)
        out.append(replace(profile, plugin_config=MappingProxyType(plugin_config)))
    return tuple(out)


def _parse_profile(raw: object, path: str, default_name: str | None) -> Profile:
    obj = as_mapping(raw, path)
    check_fields(obj, path, _PROFILE_FIELDS)
    name = opt_str(obj, "schedulerName", path)
    name = default_name if name is None else name
    if not name:
        fail(child(path, "schedulerName"), "required value")
    percentage = _percentage(obj, path)
    opt_int(obj, "percentageOfPlacementsToScore", path)

    custom = _parse_plugins(obj.get("plugins"), child(path, "plugins"))
    plugins = merge_plugins(DEFAULT_PLUGINS, custom)

    plugin_config: dict[str, Any] = {}
    for entry in _parse_plugin_configs(obj, path):
        plugin_config[entry.name] = entry.args
    # Upstream appends defaulted args for every enabled plugin that has an args kind.
    for plugin in sorted(plugins.enabled_names()):
        if plugin not in plugin_config and has_typed_args(plugin):
            plugin_config[plugin] = default_plugin_args(plugin)
    return Profile(
        scheduler_name=name,
        plugins=plugins,
        plugin_config=MappingProxyType(plugin_config),
        percentage_of_nodes_to_score=percentage,
    )


def _removed(name: str) -> str:
    return (
        f'invalid value "{name}": was invalid in version "{API_VERSION}" '
        f'(KubeSchedulerConfiguration is version "{API_VERSION}")'
    )


def _plugin_ref(raw: object, path: str, *, enabled: bool) -> PluginRef:
    obj = as_mapping(raw, path)
    check_fields(obj, path, ("name", "weight"))
    name = opt_str(obj, "name", path) or ""
    if not name:
        fail(child(path, "name"), "required value")
    weight = opt_int(obj, "weight", path)
    if enabled:
        if name in names.REMOVED_IN_V1:
            fail(path, _removed(name))
        if ":" in name and not names.is_import_path(name):
            fail(
                child(path, "name"),
                f'invalid value "{name}": an out-of-tree plugin is named by its import '
                'path, "package.module:Attribute"',
            )
        # Upstream lets a negative weight through and scores with it; refuse it instead.
        if weight is not None and weight < 0:
            fail(child(path, "weight"), f"invalid value {weight}: must not be negative")
    return PluginRef(name, weight, field=path)


def _parse_plugin_set(raw: object, path: str) -> PluginSet:
    obj = as_mapping(raw, path)
    check_fields(obj, path, ("enabled", "disabled"))
    refs: dict[str, tuple[PluginRef, ...]] = {}
    for key in ("enabled", "disabled"):
        items = opt_list(obj, key, path) or ()
        refs[key] = tuple(
            _plugin_ref(item, index(child(path, key), i), enabled=key == "enabled")
            for i, item in enumerate(items)
        )
    return PluginSet(enabled=refs["enabled"], disabled=refs["disabled"])


def _parse_plugins(raw: object, path: str) -> Plugins | None:
    if raw is None:
        return None
    obj = as_mapping(raw, path)
    check_fields(obj, path, PLUGIN_SET_KEYS)
    plugins = Plugins()
    for point in PLUGIN_SET_KEYS:
        if obj.get(point) is not None:
            plugins = plugins.with_set(point, _parse_plugin_set(obj[point], child(path, point)))
    return plugins


def _parse_plugin_configs(obj: Mapping[str, Any], path: str) -> list[PluginConfig]:
    entries: list[PluginConfig] = []
    seen: set[str] = set()
    list_path = child(path, "pluginConfig")
    for i, item in enumerate(opt_list(obj, "pluginConfig", path) or ()):
        item_path = index(list_path, i)
        entry = as_mapping(item, item_path)
        check_fields(entry, item_path, ("name", "args"))
        name = opt_str(entry, "name", item_path) or ""
        if not name:
            fail(child(item_path, "name"), "required value")
        if name in seen:
            fail(item_path, f'duplicate value "{name}"')
        seen.add(name)
        if name in names.REMOVED_IN_V1:
            fail(item_path, _removed(name))
        args = parse_plugin_args(name, entry.get("args"), child(item_path, "args"))
        entries.append(PluginConfig(name, args))
    return entries


def _check_distinct_names(profiles: Sequence[Profile]) -> None:
    first: dict[str, int] = {}
    for i, profile in enumerate(profiles):
        if profile.scheduler_name in first:
            fail(
                child(index("profiles", i), "schedulerName"),
                f'duplicate value "{profile.scheduler_name}" '
                f"(also profiles[{first[profile.scheduler_name]}].schedulerName)",
            )
        first[profile.scheduler_name] = i


def _check_common_queue_sort(profiles: Sequence[Profile]) -> None:
    """validateCommonQueueSort: one queue serves every profile, so every profile must
    configure queueSort (plugin set and args) exactly as the first one does."""
    canon = profiles[0].plugins.queue_sort
    if len(canon.enabled) > 1:
        fail(
            "profiles[0].plugins.queueSort.enabled",
            f"invalid value {len(canon.enabled)}: only one queue sort plugin can be enabled",
        )
    sort_name = canon.enabled[0].name if canon.enabled else ""
    canon_args = profiles[0].plugin_config.get(sort_name)
    for i, profile in enumerate(profiles[1:], start=1):
        if profile.plugins.queue_sort != canon:
            fail(
                child(index("profiles", i), f"plugins.{QUEUE_SORT}"),
                "invalid value: must be the same for all profiles",
            )
        args = profile.plugin_config.get(sort_name, canon_args) if sort_name else canon_args
        if args != canon_args:
            fail(
                child(index("profiles", i), "pluginConfig"),
                f'invalid value: queueSort args of "{sort_name}" must be the same for all profiles',
            )
