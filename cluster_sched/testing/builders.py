"""Fluent builders for test objects: they write manifest dicts and parse them with
``api.manifest``, so a built object's ``raw`` is exactly what a workload file would hold.

::

    pod = make_pod("web-1").req(cpu="1", memory="1Gi").label("app", "web").priority(10).obj()
    node = make_node("n1").capacity(cpu="4", memory="32Gi", pods=110).zone("z1").obj()

Every ``.req()``/``.limits()`` call adds one container (``c0``, ``c1``...); ``.init_req()``
and ``.sidecar_req()`` add init containers. A pod built without containers gets one
container with no requests. Nodes get the ``kubernetes.io/hostname`` label the kubelet
sets, and no capacity unless asked.

The builders live by object in ``pod_builder``, ``node_builder`` and ``objects`` (shared
manifest pieces in ``manifests``); this module is the one place tests import them from.
"""

from __future__ import annotations

from cluster_sched.testing.manifests import HOSTNAME_LABEL, ZONE_LABEL, expr, pod_term, rfc3339
from cluster_sched.testing.node_builder import NodeBuilder, make_node
from cluster_sched.testing.objects import (
    make_controller,
    make_namespace,
    make_pdb,
    make_priority_class,
)
from cluster_sched.testing.pod_builder import PodBuilder, make_pod

__all__ = [
    "HOSTNAME_LABEL",
    "ZONE_LABEL",
    "NodeBuilder",
    "PodBuilder",
    "expr",
    "make_controller",
    "make_namespace",
    "make_node",
    "make_pdb",
    "make_pod",
    "make_priority_class",
    "pod_term",
    "rfc3339",
]
