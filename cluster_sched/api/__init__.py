"""Kubernetes objects and their semantics: manifests, quantities, selectors, taints,
pod requests. The typed objects live in ``api.objects``; this package re-exports the
functions other packages call."""

from cluster_sched.api.manifest import (
    load_documents,
    load_file,
    parse_namespace,
    parse_node,
    parse_object,
    parse_objects,
    parse_pdb,
    parse_pod,
    parse_priority_class,
    parse_workload_controller,
)
from cluster_sched.api.quantity import exact_quantity, format_quantity, parse_quantity
from cluster_sched.api.requests import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    compute_nonzero_requests,
    compute_requests,
)
from cluster_sched.api.selectors import (
    label_selector_matches,
    node_selector_matches,
    node_selector_requirement_matches,
    node_selector_term_matches,
)
from cluster_sched.api.taints import (
    count_intolerable_prefer_no_schedule,
    find_matching_untolerated_taint,
    toleration_tolerates_taint,
)

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "compute_nonzero_requests",
    "compute_requests",
    "count_intolerable_prefer_no_schedule",
    "exact_quantity",
    "find_matching_untolerated_taint",
    "format_quantity",
    "label_selector_matches",
    "load_documents",
    "load_file",
    "node_selector_matches",
    "node_selector_requirement_matches",
    "node_selector_term_matches",
    "parse_namespace",
    "parse_node",
    "parse_object",
    "parse_objects",
    "parse_pdb",
    "parse_pod",
    "parse_priority_class",
    "parse_quantity",
    "parse_workload_controller",
    "toleration_tolerates_taint",
]
