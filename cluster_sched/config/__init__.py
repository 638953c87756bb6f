"""KubeSchedulerConfiguration ``kubescheduler.config.k8s.io/v1``: load, default, validate.

``load_config(path)`` reads a file (or gives upstream's defaults for None) into a
:class:`SchedulerConfiguration` whose profiles hold plugin sets already merged with
the default multiPoint set, and typed plugin args. ``expand_plugins`` / ``expand_config``
then resolve, with the plugin registry's capabilities, the ordered and weighted plugin
list of every extension point. Errors are :class:`~cluster_sched.errors.ConfigError`.
"""

from .defaults import (
    API_VERSION,
    DEFAULT_PLUGINS,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    merge_plugin_set,
    merge_plugins,
)
from .expand import ExpandedPlugins, expand_config, expand_plugins
from .load import default_config, load_config, parse_config
from .plugin_args import parse_plugin_args
from .types import (
    EXTENSION_POINTS,
    MULTI_POINT,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
)

__all__ = [
    "API_VERSION",
    "DEFAULT_PLUGINS",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KIND",
    "MULTI_POINT",
    "ExpandedPlugins",
    "PluginConfig",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "Profile",
    "SchedulerConfiguration",
    "default_config",
    "expand_config",
    "expand_plugins",
    "load_config",
    "merge_plugin_set",
    "merge_plugins",
    "parse_config",
    "parse_plugin_args",
]
