"""Test helpers shared by every package's tests: fluent object builders."""

from cluster_sched.testing.builders import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    NodeBuilder,
    PodBuilder,
    expr,
    make_controller,
    make_namespace,
    make_node,
    make_pdb,
    make_pod,
    make_priority_class,
    pod_term,
    rfc3339,
)

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
