"""String (or tuple) interning: the bridge between Kubernetes names and numpy columns."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class Interner(Generic[K]):
    """Maps values to dense ids 0..n-1 in first-seen order. Ids are never reused, so a
    column of ids stays valid while new values arrive."""

    __slots__ = ("_ids", "values")

    def __init__(self, initial: Iterable[K] = ()) -> None:
        self._ids: dict[K, int] = {}
        self.values: list[K] = []
        for v in initial:
            self.intern(v)

    def intern(self, value: K) -> int:
        i = self._ids.get(value)
        if i is None:
            i = len(self.values)
            self._ids[value] = i
            self.values.append(value)
        return i

    def copy(self) -> Interner[K]:
        """An independent interner with the same ids (simulation tables grow their own)."""
        out: Interner[K] = Interner()
        out._ids = dict(self._ids)
        out.values = list(self.values)
        return out

    def get(self, value: K, default: int = -1) -> int:
        return self._ids.get(value, default)

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, value: object) -> bool:
        return value in self._ids
