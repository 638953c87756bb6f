"""CycleState: per-cycle scratch space shared by a profile's plugins."""

from __future__ import annotations

from typing import Any


class CycleState:
    """Plugins write their PreFilter/PreScore state under their own key and read it back
    in Filter/Score. ``clone`` is shallow: stored values must be treated as immutable,
    except by PreFilter AddPod/RemovePod extensions, which replace (never mutate) them."""

    __slots__ = ("_data", "pods_to_activate", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        #: Plugins whose PreFilter returned Skip: their Filter is not run this cycle.
        self.skip_filter_plugins: set[str] = set()
        #: Plugins whose PreScore returned Skip: their Score is not run this cycle.
        self.skip_score_plugins: set[str] = set()
        #: Pod keys a plugin asks the queue to activate after this cycle (PodsToActivate).
        self.pods_to_activate: set[str] = set()

    def read(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"{key!r} not found in CycleState") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def data_copy(self) -> dict[str, Any]:
        """The plugins' entries (a shallow copy: values are immutable, see class doc)."""
        return dict(self._data)

    def restore(
        self, data: dict[str, Any], skip_filter: frozenset[str], skip_score: frozenset[str]
    ) -> None:
        """Take entries and Skip sets another pod's PreFilter/PreScore produced, when they
        are known to be this pod's too (``scheduler.pre_cycle``)."""
        self._data = dict(data)
        self.skip_filter_plugins = set(skip_filter)
        self.skip_score_plugins = set(skip_score)

    def clone(self) -> CycleState:
        c = CycleState()
        c._data = dict(self._data)
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.pods_to_activate = set(self.pods_to_activate)
        return c
