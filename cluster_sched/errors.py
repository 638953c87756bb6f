"""The one error hierarchy of cluster-sched.

::

    ClusterSchedError
    ├── InvalidObjectError      a manifest field is wrong (names file, object, field)
    │   └── QuantityError       a resource quantity does not parse
    ├── ConfigError             KubeSchedulerConfiguration is invalid (names the field)
    ├── PluginError             a plugin is unknown, cannot be imported or rejects its args
    ├── StoreError              Redis unreachable or a stored object is unreadable
    │   └── StoreLostError      Redis came back empty or holding another run's data
    ├── UsageError              an option cannot be honoured (busy port, file for a dir)
    └── SchedulerError          an internal invariant broke inside the coordinator

Every message is one line meant for people; the CLI prints it and exits 2.
"""

from __future__ import annotations


class ClusterSchedError(Exception):
    """Base of every error this project raises on purpose."""


class InvalidObjectError(ClusterSchedError):
    """A Kubernetes object has a bad field.

    ``obj`` is ``Kind namespace/name`` (or ``Kind name``), ``field`` the JSON path of the
    field (``spec.containers[0].resources.requests.cpu``), ``source`` the file it came from.
    """

    def __init__(self, message: str, *, obj: str = "", field: str = "", source: str = "") -> None:
        self.reason = message
        self.obj = obj
        self.field = field
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.source:
            parts.append(self.source)
        if self.obj:
            parts.append(self.obj)
        if self.field:
            parts.append(f"field {self.field}")
        prefix = ": ".join(parts)
        # one line whatever a field name or value holds (a fuzzed key may be "\n")
        return one_line(f"{prefix}: {self.reason}" if prefix else self.reason)

    def located(
        self, *, obj: str | None = None, source: str | None = None, field_prefix: str = ""
    ) -> InvalidObjectError:
        """Return a copy that also names where the object came from."""
        field = self.field
        if field_prefix:
            field = f"{field_prefix}.{field}" if field else field_prefix
        err = type(self)(
            self.reason,
            obj=obj if obj is not None and not self.obj else self.obj,
            field=field,
            source=source if source is not None and not self.source else self.source,
        )
        return err


class QuantityError(InvalidObjectError):
    """A resource quantity string (``4x``) is not a Kubernetes quantity."""


class ConfigError(ClusterSchedError):
    """The scheduler configuration is invalid; the message names the field."""


class PluginError(ClusterSchedError):
    """A plugin is unknown, fails to import, or rejects its arguments."""


class StoreError(ClusterSchedError):
    """The Redis store cannot be reached or holds something unreadable."""


class StoreLostError(StoreError):
    """Redis answered again after an outage but lost its data or holds another run's:
    the coordinator refuses to schedule from it (the CLI exits 3)."""


class UsageError(ClusterSchedError):
    """A command-line option cannot be honoured: its port is in use, its path is a file
    where a directory is needed. The message names the option."""


class SchedulerError(ClusterSchedError):
    """An internal invariant of the coordinator broke."""


# Input can smuggle line breaks and control characters into names and keys (a YAML key
# "\n", a stray \x1f); escaped, every message stays on one line.
_ONE_LINE = {code: repr(chr(code))[1:-1] for code in (*range(32), 127, 0x85, 0x2028, 0x2029)}


def one_line(text: str) -> str:
    """``text`` with line breaks and control characters escaped (``\\n``, ``\\x1f``)."""
    return text.translate(_ONE_LINE)
