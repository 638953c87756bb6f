"""ImageLocality: favours nodes that already hold the pod's images, scaled by how widely
each image is spread (so one node caching a huge image does not attract everything)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cluster_sched.api.objects import Pod
from cluster_sched.framework.cycle_state import CycleState
from cluster_sched.framework.handle import Handle
from cluster_sched.framework.interfaces import MAX_NODE_SCORE, NodeSlice
from cluster_sched.nodetable.images import normalized_image_name
from cluster_sched.nodetable.overflow import saturating_add
from cluster_sched.plugins.names import IMAGE_LOCALITY

NAME = IMAGE_LOCALITY
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    """int64(float64(size) * (numNodes / totalNodes)), as upstream computes it."""
    return int(float(size) * (float(num_nodes) / float(total_nodes)))


class ImageLocality:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def score(self, state: CycleState, pod: Pod, nodes: NodeSlice) -> np.ndarray:
        table = nodes.table
        snapshot = self._handle.snapshot
        total = snapshot.num_nodes if snapshot is not None else table.n_nodes
        index = table.image_index()
        # sum over init containers then containers, per node holding each image
        per_row = np.zeros(table._cap, dtype=np.int64)
        for c in (*pod.init_containers, *pod.containers):
            name = normalized_image_name(c.image)
            i = table.images.get(name)
            if i < 0 or i not in index.rows:
                continue
            state_ = snapshot.image_state(name) if snapshot is not None else None
            if state_ is None:
                size, num = int(index.sizes[i][0]), len(index.rows[i])
            else:
                size, num = state_
            # Saturating: sizes are int64, so a few huge images pass int64 (upstream wraps);
            # anything past max_threshold scores the same.
            at = index.rows[i]
            per_row[at] = saturating_add(per_row[at], scaled_image_score(size, num, total))
        sums = nodes.take(per_row)
        n_containers = len(pod.init_containers) + len(pod.containers)
        max_threshold = MAX_CONTAINER_THRESHOLD * n_containers
        clipped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clipped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def new(args: Any, handle: Handle) -> ImageLocality:
    return ImageLocality(handle)
