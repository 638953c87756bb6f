"""Parse the core/v1 pieces plugin args embed: NodeAffinity and TopologySpreadConstraint.

Kept local to the config package (the manifest parser lives elsewhere) so plugin args
can be validated with upstream's config-time rules: NodeAffinityArgs uses
``component-helpers/.../nodeaffinity`` (NewNodeSelector, NewPreferredSchedulingTerms),
whose checks are those of ``labels.NewRequirement``; PodTopologySpreadArgs replicates
the pod-spec validation of spread constraints and forbids label selectors.
"""

from __future__ import annotations

import re

from cluster_sched.api.objects import (
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
)

from ._fields import (
    INT64_MAX,
    INT64_MIN,
    as_mapping,
    check_fields,
    check_label_value,
    check_qualified_name,
    child,
    fail,
    fail_unsupported,
    index,
    opt_int,
    opt_list,
    opt_str,
    str_list,
)

__all__ = ["DO_NOT_SCHEDULE", "SCHEDULE_ANYWAY", "parse_default_constraint", "parse_node_affinity"]

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")
#: What Go's strconv.ParseInt(v, 10, 64) accepts, before the range check.
_INTEGER = re.compile(r"[+-]?[0-9]+")

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
_POLICIES = ("Honor", "Ignore")


# --- node affinity ----------------------------------------------------------------------


def _requirement(raw: object, path: str, *, is_field: bool) -> NodeSelectorRequirement:
    obj = as_mapping(raw, path)
    check_fields(obj, path, ("key", "operator", "values"))
    key = opt_str(obj, "key", path) or ""
    operator = opt_str(obj, "operator", path) or ""
    values = str_list(obj, "values", path)
    values_path = child(path, "values")
    if is_field:
        # Field selectors take no key validation: only metadata.name ever matches.
        if operator not in _FIELD_OPERATORS:
            fail_unsupported(child(path, "operator"), operator, _FIELD_OPERATORS)
        if len(values) != 1:
            fail(values_path, "must have one element")
        return NodeSelectorRequirement(key, operator, values)

    if operator not in _LABEL_OPERATORS:
        fail_unsupported(child(path, "operator"), operator, _LABEL_OPERATORS)
    check_qualified_name(key, child(path, "key"))
    if operator in ("In", "NotIn") and not values:
        fail(values_path, "for 'in', 'notin' operators, values set can't be empty")
    if operator in ("Exists", "DoesNotExist") and values:
        fail(values_path, "values set must be empty for exists and does not exist")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            fail(values_path, "for 'Gt', 'Lt' operators, exactly one value is required")
        if not _INTEGER.fullmatch(values[0]) or not INT64_MIN <= int(values[0]) <= INT64_MAX:
            fail(index(values_path, 0), "for 'Gt', 'Lt' operators, the value must be an integer")
    for i, value in enumerate(values):
        check_label_value(value, index(values_path, i))
    return NodeSelectorRequirement(key, operator, values)


def _term(raw: object, path: str) -> NodeSelectorTerm:
    obj = as_mapping(raw, path)
    check_fields(obj, path, ("matchExpressions", "matchFields"))
    parts = {}
    for key, is_field in (("matchExpressions", False), ("matchFields", True)):
        items = opt_list(obj, key, path) or ()
        parts[key] = tuple(
            _requirement(item, index(child(path, key), i), is_field=is_field)
            for i, item in enumerate(items)
        )
    return NodeSelectorTerm(parts["matchExpressions"], parts["matchFields"])


def parse_node_affinity(raw: object, path: str) -> NodeAffinity:
    """A v1 NodeAffinity, validated as NodeAffinityArgs.addedAffinity is upstream."""
    obj = as_mapping(raw, path)
    check_fields(obj, path, (_REQUIRED, _PREFERRED))

    required = None
    if obj.get(_REQUIRED) is not None:
        req_path = child(path, _REQUIRED)
        selector = as_mapping(obj[_REQUIRED], req_path)
        check_fields(selector, req_path, ("nodeSelectorTerms",))
        terms_path = child(req_path, "nodeSelectorTerms")
        raw_terms = opt_list(selector, "nodeSelectorTerms", req_path) or ()
        required = NodeSelector(
            tuple(_term(t, index(terms_path, i)) for i, t in enumerate(raw_terms))
        )

    preferred = []
    pref_path = child(path, _PREFERRED)
    for i, item in enumerate(opt_list(obj, _PREFERRED, path) or ()):
        item_path = index(pref_path, i)
        entry = as_mapping(item, item_path)
        check_fields(entry, item_path, ("weight", "preference"))
        weight = opt_int(entry, "weight", item_path) or 0
        preference = entry.get("preference")
        term = (
            NodeSelectorTerm()
            if preference is None
            else _term(preference, child(item_path, "preference"))
        )
        preferred.append(PreferredSchedulingTerm(weight, term))
    return NodeAffinity(required=required, preferred=tuple(preferred))


# --- topology spread constraints --------------------------------------------------------


_CONSTRAINT_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)


def parse_default_constraint(raw: object, path: str) -> TopologySpreadConstraint:
    """One PodTopologySpreadArgs.defaultConstraints entry (no labelSelector allowed:
    selectors are deduced per pod from the Services/ReplicaSets/... that select it)."""
    obj = as_mapping(raw, path)
    check_fields(obj, path, _CONSTRAINT_FIELDS)
    max_skew = opt_int(obj, "maxSkew", path) or 0
    if max_skew <= 0:
        fail(child(path, "maxSkew"), f"invalid value {max_skew}: not in valid range (0, inf)")
    key = opt_str(obj, "topologyKey", path) or ""
    if not key:
        fail(child(path, "topologyKey"), "required value: can not be empty")
    check_qualified_name(key, child(path, "topologyKey"))
    action = opt_str(obj, "whenUnsatisfiable", path) or ""
    if not action:
        fail(child(path, "whenUnsatisfiable"), "required value: can not be empty")
    if action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        fail_unsupported(
            child(path, "whenUnsatisfiable"), action, (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
        )
    if obj.get("labelSelector") is not None:
        fail(
            child(path, "labelSelector"),
            "forbidden: constraint must not define a selector, as they deduced for each pod",
        )
    min_domains = opt_int(obj, "minDomains", path)
    if min_domains is not None and min_domains <= 0:
        fail(child(path, "minDomains"), f"invalid value {min_domains}: must be greater than 0")
    policies: dict[str, str] = {}
    for key_name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
        value = opt_str(obj, key_name, path)
        if value is not None and value not in _POLICIES:
            fail_unsupported(child(path, key_name), value, _POLICIES)
        policies[key_name] = value or default
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=action,
        min_domains=min_domains,
        node_affinity_policy=policies["nodeAffinityPolicy"],
        node_taints_policy=policies["nodeTaintsPolicy"],
        match_label_keys=str_list(obj, "matchLabelKeys", path),
    )
