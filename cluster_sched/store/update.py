"""One read-modify-write of a stored object (``ObjectWriter.guaranteed_update_many``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Update"]


@dataclass(frozen=True, slots=True)
class Update:
    """One read-modify-write: ``mutate`` maps the stored object to the new one (None: no
    change; it must not edit its argument); ``uid`` (None: any) is the object's uid
    precondition; ``cached`` the object as the caller last saw it (its watch cache's copy,
    with its resourceVersion), tried first without a read (etcd's GuaranteedUpdate with
    a cached existing object): the write lands only if nothing changed it since."""

    kind: str
    key: str
    mutate: Callable[[dict[str, Any]], dict[str, Any] | None]
    uid: str | None = None
    cached: Mapping[str, Any] | None = None
