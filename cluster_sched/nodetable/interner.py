"""String (or tuple) interning: the bridge between Kubernetes names and numpy columns."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Generic, TypeVar

import numpy as np

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

    def intern_many(self, values: Sequence[K]) -> np.ndarray:
        """``[intern(v) for v in values]`` as int64, new values given ids in the order
        they first appear (the same ids one-by-one interning would give)."""
        ids = self._ids
        before = len(self.values)
        setdefault = ids.setdefault
        # len(ids) is read before each insertion: a new value gets the next id
        codes = np.fromiter(
            (setdefault(v, len(ids)) for v in values), dtype=np.int64, count=len(values)
        )
        if len(ids) > before:
            new = np.flatnonzero(codes >= before)
            _, first = np.unique(codes[new], return_index=True)
            self.values.extend(values[i] for i in new[first].tolist())
        return codes
