"""Container images on nodes, as ImageLocality reads them.

The NodeTable interns every name a node reports for an image and keeps, per image id,
``{row: size}``; ``ImageIndex`` is that map flattened to arrays, rebuilt only when node
columns change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class ImageIndex:
    """Sparse image presence: for image id ``i``, ``rows[i]`` are the nodes holding it
    and ``sizes[i]`` the image size on each of them."""

    rows: dict[int, np.ndarray]
    sizes: dict[int, np.ndarray]

    @classmethod
    def build(cls, image_rows: Mapping[int, Mapping[int, int]]) -> ImageIndex:
        """From image id -> {row: size}; images no node holds are left out."""
        rows: dict[int, np.ndarray] = {}
        sizes: dict[int, np.ndarray] = {}
        for i, present in image_rows.items():
            if present:
                rows[i] = np.fromiter(present.keys(), dtype=np.int64, count=len(present))
                sizes[i] = np.fromiter(present.values(), dtype=np.int64, count=len(present))
        return cls(rows, sizes)


def normalized_image_name(name: str) -> str:
    """Upstream ImageLocality: a pod's image with no tag after the last ``/`` is ``:latest``.
    Node image names are used as the node reports them."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name
