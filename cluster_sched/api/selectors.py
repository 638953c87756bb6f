"""Label and node selectors: matching for the non-vectorised paths, and validation.

Matching follows upstream's ``labels.Selector`` (metav1 ``LabelSelectorAsSelector``) and
``component-helpers/scheduling/corev1/nodeaffinity``:

- a ``None`` label selector matches nothing, an empty one everything;
- ``NotIn`` and ``DoesNotExist`` match when the key is absent;
- ``Gt``/``Lt`` compare the label as an integer and fail when it does not parse;
- a node selector term with no expressions and no fields matches nothing, and a node
  selector with no terms matches nothing; terms are ORed, requirements ANDed;
- ``matchFields`` only knows ``metadata.name``.

The ``validate_*`` helpers raise InvalidObjectError carrying the field path they were
given; the manifest parser uses them so a bad selector is rejected at load time and the
matchers never see one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from cluster_sched.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from cluster_sched.errors import InvalidObjectError

__all__ = [
    "LABEL_OPERATORS",
    "NODE_FIELD_OPERATORS",
    "NODE_OPERATORS",
    "OBJECT_NAME_FIELD",
    "label_requirement_matches",
    "label_selector_matches",
    "node_selector_matches",
    "node_selector_requirement_matches",
    "node_selector_term_matches",
    "validate_dns_label",
    "validate_dns_subdomain",
    "validate_label_key",
    "validate_label_requirement",
    "validate_label_value",
    "validate_node_field_requirement",
    "validate_node_requirement",
]

#: Operators of metav1.LabelSelectorRequirement.
LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
#: Operators of v1.NodeSelectorRequirement (matchExpressions).
NODE_OPERATORS = LABEL_OPERATORS | {"Gt", "Lt"}
#: Operators allowed in matchFields.
NODE_FIELD_OPERATORS = frozenset({"In", "NotIn"})
#: The only field key a node selector's matchFields may use.
OBJECT_NAME_FIELD = "metadata.name"


# --- matching --------------------------------------------------------------------------


def label_requirement_matches(
    operator: str, key: str, values: Sequence[str], labels: Mapping[str, str]
) -> bool:
    """One requirement of a label or node selector against a label set."""
    value = labels.get(key)
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        have, want = _parse_int(value), _parse_int(values[0])
        if have is None or want is None:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def label_selector_matches(sel: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: None matches nothing, empty matches everything."""
    if sel is None:
        return False
    for key, value in sel.match_labels:
        if labels.get(key) != value:
            return False
    return all(
        label_requirement_matches(req.operator, req.key, req.values, labels)
        for req in sel.match_expressions
    )


def node_selector_requirement_matches(
    req: NodeSelectorRequirement, labels: Mapping[str, str]
) -> bool:
    """A matchExpressions requirement against a node's labels (Gt/Lt included)."""
    return label_requirement_matches(req.operator, req.key, req.values, labels)


def _field_requirement_matches(req: NodeSelectorRequirement, node_name: str) -> bool:
    if req.key != OBJECT_NAME_FIELD:
        return False
    if req.operator == "In":
        return node_name in req.values
    if req.operator == "NotIn":
        return node_name not in req.values
    return False


def node_selector_term_matches(
    term: NodeSelectorTerm, node_name: str, labels: Mapping[str, str]
) -> bool:
    """All expressions and fields of one term; an empty term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    for req in term.match_expressions:
        if not label_requirement_matches(req.operator, req.key, req.values, labels):
            return False
    return all(_field_requirement_matches(req, node_name) for req in term.match_fields)


def node_selector_matches(sel: NodeSelector, node_name: str, labels: Mapping[str, str]) -> bool:
    """Terms are ORed; a selector without terms matches nothing."""
    return any(node_selector_term_matches(term, node_name, labels) for term in sel.terms)


def _parse_int(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): optional sign, ASCII digits, int64 range."""
    if not _INT_RE.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


_INT_RE = re.compile(r"[+-]?[0-9]+")


# --- validation --------------------------------------------------------------------------

_LABEL_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@lru_cache(maxsize=1 << 14)
def _label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a qualified name (``[prefix/]name``), or None if it is."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if "/" in prefix:
            return "must have at most one '/'"
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.fullmatch(prefix):
            return "prefix part must be a lowercase DNS subdomain (such as example.com)"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _LABEL_NAME_RE.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


@lru_cache(maxsize=1 << 14)
def _label_value_problem(value: str) -> str | None:
    if not value:
        return None
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_NAME_RE.fullmatch(value):
        return (
            "must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


def validate_label_key(key: str, field: str) -> None:
    """A label key / topology key must be a qualified name (``example.com/zone``)."""
    problem = _label_key_problem(key)
    if problem is not None:
        raise InvalidObjectError(f"invalid label key {key!r}: {problem}", field=field)


def validate_label_value(value: str, field: str) -> None:
    """A label value: empty, or ≤ 63 alphanumerics/``-_.`` starting and ending alphanumeric."""
    problem = _label_value_problem(value)
    if problem is not None:
        raise InvalidObjectError(f"invalid label value {value!r}: {problem}", field=field)


def validate_dns_subdomain(name: str, field: str) -> None:
    """Object names of pods, nodes and most kinds (RFC 1123 subdomain, ≤ 253)."""
    if len(name) > 253 or not _DNS_SUBDOMAIN_RE.fullmatch(name):
        raise InvalidObjectError(
            f"invalid name {name!r}: must be a lowercase RFC 1123 subdomain "
            "(alphanumerics, '-' and '.', starting and ending with an alphanumeric)",
            field=field,
        )


def validate_dns_label(name: str, field: str) -> None:
    """Namespace names (RFC 1123 label, ≤ 63)."""
    if len(name) > 63 or not _DNS_LABEL_RE.fullmatch(name):
        raise InvalidObjectError(
            f"invalid name {name!r}: must be a lowercase RFC 1123 label "
            "(alphanumerics and '-', starting and ending with an alphanumeric, at most 63)",
            field=field,
        )


def _validate_values_count(operator: str, values: Sequence[str], field: str) -> None:
    if operator in ("In", "NotIn"):
        if not values:
            raise InvalidObjectError(
                f"values must be non-empty when operator is {operator!r}", field=f"{field}.values"
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            raise InvalidObjectError(
                f"values must be empty when operator is {operator!r}", field=f"{field}.values"
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise InvalidObjectError(
                f"exactly one value is required when operator is {operator!r}",
                field=f"{field}.values",
            )
        if _parse_int(values[0]) is None:
            raise InvalidObjectError(
                f"value {values[0]!r} must be an integer when operator is {operator!r}",
                field=f"{field}.values[0]",
            )


def validate_label_requirement(req: LabelSelectorRequirement, field: str) -> None:
    """metav1 LabelSelectorRequirement: key, operator, and the value-count rules."""
    validate_label_key(req.key, f"{field}.key")
    if req.operator not in LABEL_OPERATORS:
        raise InvalidObjectError(
            f"{req.operator!r} is not a valid label selector operator "
            f"(want one of {', '.join(sorted(LABEL_OPERATORS))})",
            field=f"{field}.operator",
        )
    _validate_values_count(req.operator, req.values, field)
    for i, value in enumerate(req.values):
        validate_label_value(value, f"{field}.values[{i}]")


def validate_node_requirement(req: NodeSelectorRequirement, field: str) -> None:
    """v1 NodeSelectorRequirement in matchExpressions (Gt/Lt need one integer value)."""
    validate_label_key(req.key, f"{field}.key")
    if req.operator not in NODE_OPERATORS:
        raise InvalidObjectError(
            f"{req.operator!r} is not a valid node selector operator "
            f"(want one of {', '.join(sorted(NODE_OPERATORS))})",
            field=f"{field}.operator",
        )
    _validate_values_count(req.operator, req.values, field)
    if req.operator in ("In", "NotIn"):
        for i, value in enumerate(req.values):
            validate_label_value(value, f"{field}.values[{i}]")


def validate_node_field_requirement(req: NodeSelectorRequirement, field: str) -> None:
    """matchFields: key ``metadata.name``, In/NotIn, exactly one value (as upstream)."""
    if req.key != OBJECT_NAME_FIELD:
        raise InvalidObjectError(
            f"{req.key!r} is not a valid field selector key (only {OBJECT_NAME_FIELD!r})",
            field=f"{field}.key",
        )
    if req.operator not in NODE_FIELD_OPERATORS:
        raise InvalidObjectError(
            f"{req.operator!r} is not a valid field selector operator (want In or NotIn)",
            field=f"{field}.operator",
        )
    if len(req.values) != 1:
        raise InvalidObjectError(
            f"exactly one value is required when operator is {req.operator!r}",
            field=f"{field}.values",
        )
