"""Label and node selector matching and validation, as upstream's labels.Selector and
nodeaffinity helpers behave."""

from __future__ import annotations

import pytest

from cluster_sched.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from cluster_sched.api.selectors import (
    label_selector_matches,
    node_selector_matches,
    node_selector_requirement_matches,
    node_selector_term_matches,
    validate_label_key,
    validate_label_requirement,
    validate_label_value,
    validate_node_field_requirement,
    validate_node_requirement,
)
from cluster_sched.errors import InvalidObjectError

LABELS = {"app": "web", "tier": "frontend", "cores": "8", "bad-int": "eight"}


def lreq(key: str, op: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator=op, values=values)


def nreq(key: str, op: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=op, values=values)


LABEL_SELECTOR_CASES = [
    ("none-matches-nothing", None, False),
    ("empty-matches-everything", LabelSelector(), True),
    ("match-labels-hit", LabelSelector(match_labels=(("app", "web"),)), True),
    ("match-labels-miss", LabelSelector(match_labels=(("app", "db"),)), False),
    ("match-labels-absent", LabelSelector(match_labels=(("zone", "a"),)), False),
    ("in-hit", LabelSelector(match_expressions=(lreq("app", "In", "db", "web"),)), True),
    ("in-miss", LabelSelector(match_expressions=(lreq("app", "In", "db"),)), False),
    ("in-absent-key", LabelSelector(match_expressions=(lreq("zone", "In", "a"),)), False),
    ("notin-hit", LabelSelector(match_expressions=(lreq("app", "NotIn", "db"),)), True),
    ("notin-miss", LabelSelector(match_expressions=(lreq("app", "NotIn", "web"),)), False),
    (
        "notin-absent-key-matches",
        LabelSelector(match_expressions=(lreq("zone", "NotIn", "a"),)),
        True,
    ),
    ("exists", LabelSelector(match_expressions=(lreq("tier", "Exists"),)), True),
    ("exists-absent", LabelSelector(match_expressions=(lreq("zone", "Exists"),)), False),
    ("doesnotexist", LabelSelector(match_expressions=(lreq("zone", "DoesNotExist"),)), True),
    (
        "doesnotexist-present",
        LabelSelector(match_expressions=(lreq("app", "DoesNotExist"),)),
        False,
    ),
    (
        "labels-and-expressions-anded",
        LabelSelector(
            match_labels=(("app", "web"),), match_expressions=(lreq("tier", "In", "backend"),)
        ),
        False,
    ),
    (
        "unknown-operator-never-matches",
        LabelSelector(match_expressions=(lreq("app", "Gt", "1"),)),
        False,
    ),
]


@pytest.mark.parametrize(
    ("sel", "want"), [c[1:] for c in LABEL_SELECTOR_CASES], ids=[c[0] for c in LABEL_SELECTOR_CASES]
)
def test_label_selector_matches(sel: LabelSelector | None, want: bool) -> None:
    assert label_selector_matches(sel, LABELS) is want


NODE_REQ_CASES = [
    ("in", nreq("app", "In", "web"), True),
    ("notin-absent", nreq("zone", "NotIn", "a"), True),
    ("exists", nreq("cores", "Exists"), True),
    ("doesnotexist", nreq("cores", "DoesNotExist"), False),
    ("gt-true", nreq("cores", "Gt", "4"), True),
    ("gt-equal-false", nreq("cores", "Gt", "8"), False),
    ("lt-true", nreq("cores", "Lt", "16"), True),
    ("lt-false", nreq("cores", "Lt", "8"), False),
    ("gt-negative", nreq("cores", "Gt", "-3"), True),
    ("gt-label-unparsable", nreq("bad-int", "Gt", "1"), False),
    ("gt-value-unparsable", nreq("cores", "Gt", "x"), False),
    ("gt-absent-key", nreq("zone", "Gt", "1"), False),
    ("lt-absent-key", nreq("zone", "Lt", "1"), False),
    ("gt-two-values", nreq("cores", "Gt", "1", "2"), False),
]


@pytest.mark.parametrize(
    ("req", "want"), [c[1:] for c in NODE_REQ_CASES], ids=[c[0] for c in NODE_REQ_CASES]
)
def test_node_selector_requirement(req: NodeSelectorRequirement, want: bool) -> None:
    assert node_selector_requirement_matches(req, LABELS) is want


TERM_CASES = [
    ("empty-term-matches-nothing", NodeSelectorTerm(), False),
    ("expression", NodeSelectorTerm(match_expressions=(nreq("app", "In", "web"),)), True),
    (
        "expressions-anded",
        NodeSelectorTerm(match_expressions=(nreq("app", "In", "web"), nreq("cores", "Gt", "9"))),
        False,
    ),
    ("field-in", NodeSelectorTerm(match_fields=(nreq("metadata.name", "In", "n1"),)), True),
    ("field-in-other", NodeSelectorTerm(match_fields=(nreq("metadata.name", "In", "n2"),)), False),
    ("field-notin", NodeSelectorTerm(match_fields=(nreq("metadata.name", "NotIn", "n2"),)), True),
    (
        "field-notin-self",
        NodeSelectorTerm(match_fields=(nreq("metadata.name", "NotIn", "n1"),)),
        False,
    ),
    (
        "field-unknown-key",
        NodeSelectorTerm(match_fields=(nreq("metadata.uid", "In", "n1"),)),
        False,
    ),
    (
        "fields-and-expressions",
        NodeSelectorTerm(
            match_expressions=(nreq("app", "In", "web"),),
            match_fields=(nreq("metadata.name", "In", "n2"),),
        ),
        False,
    ),
]


@pytest.mark.parametrize(
    ("term", "want"), [c[1:] for c in TERM_CASES], ids=[c[0] for c in TERM_CASES]
)
def test_node_selector_term(term: NodeSelectorTerm, want: bool) -> None:
    assert node_selector_term_matches(term, "n1", LABELS) is want


def test_node_selector_terms_are_ored() -> None:
    miss = NodeSelectorTerm(match_expressions=(nreq("app", "In", "db"),))
    hit = NodeSelectorTerm(match_fields=(nreq("metadata.name", "In", "n1"),))
    assert node_selector_matches(NodeSelector(terms=(miss, hit)), "n1", LABELS)
    assert not node_selector_matches(NodeSelector(terms=(miss,)), "n1", LABELS)
    assert not node_selector_matches(NodeSelector(terms=(NodeSelectorTerm(), miss)), "n1", LABELS)


def test_node_selector_without_terms_matches_nothing() -> None:
    assert not node_selector_matches(NodeSelector(), "n1", LABELS)


# --- validation ------------------------------------------------------------------------------

KEYS_OK = ["app", "example.com/zone", "kubernetes.io/hostname", "a.b-c_d", "A1", "x" * 63]
KEYS_BAD = [
    "",
    "-app",
    "app-",
    "a/b/c",
    "/app",
    "Example.com/x",
    "x" * 64,
    "has space",
    "ex_ample.com/a",
]


@pytest.mark.parametrize("key", KEYS_OK, ids=KEYS_OK)
def test_valid_label_keys(key: str) -> None:
    validate_label_key(key, "f")


@pytest.mark.parametrize("key", KEYS_BAD, ids=[k[:12] or "empty" for k in KEYS_BAD])
def test_invalid_label_keys(key: str) -> None:
    with pytest.raises(InvalidObjectError, match="invalid label key") as info:
        validate_label_key(key, "spec.x")
    assert info.value.field == "spec.x"


@pytest.mark.parametrize(
    ("value", "ok"),
    [("", True), ("v1.2_3-a", True), ("-a", False), ("a" * 64, False), ("a b", False)],
    ids=["empty", "ok", "leading-dash", "too-long", "space"],
)
def test_label_values(value: str, ok: bool) -> None:
    if ok:
        validate_label_value(value, "f")
    else:
        with pytest.raises(InvalidObjectError):
            validate_label_value(value, "f")


LABEL_REQ_ERRORS = [
    ("bad-operator", lreq("app", "Gt", "1"), "f.operator", "not a valid label selector operator"),
    ("in-no-values", lreq("app", "In"), "f.values", "non-empty"),
    ("notin-no-values", lreq("app", "NotIn"), "f.values", "non-empty"),
    ("exists-with-values", lreq("app", "Exists", "x"), "f.values", "must be empty"),
    ("doesnotexist-with-values", lreq("app", "DoesNotExist", "x"), "f.values", "must be empty"),
    ("bad-key", lreq("-x", "Exists"), "f.key", "invalid label key"),
    ("bad-value", lreq("app", "In", "a b"), "f.values[0]", "invalid label value"),
]


@pytest.mark.parametrize(
    ("req", "field", "message"),
    [c[1:] for c in LABEL_REQ_ERRORS],
    ids=[c[0] for c in LABEL_REQ_ERRORS],
)
def test_label_requirement_validation(
    req: LabelSelectorRequirement, field: str, message: str
) -> None:
    with pytest.raises(InvalidObjectError, match=message) as info:
        validate_label_requirement(req, "f")
    assert info.value.field == field


NODE_REQ_ERRORS = [
    ("bad-operator", nreq("a", "Like", "x"), "f.operator", "not a valid node selector operator"),
    ("gt-no-value", nreq("a", "Gt"), "f.values", "exactly one"),
    ("lt-two-values", nreq("a", "Lt", "1", "2"), "f.values", "exactly one"),
    ("gt-not-integer", nreq("a", "Gt", "1.5"), "f.values[0]", "integer"),
    ("in-no-values", nreq("a", "In"), "f.values", "non-empty"),
    ("exists-values", nreq("a", "Exists", "x"), "f.values", "must be empty"),
]


@pytest.mark.parametrize(
    ("req", "field", "message"),
    [c[1:] for c in NODE_REQ_ERRORS],
    ids=[c[0] for c in NODE_REQ_ERRORS],
)
def test_node_requirement_validation(
    req: NodeSelectorRequirement, field: str, message: str
) -> None:
    with pytest.raises(InvalidObjectError, match=message) as info:
        validate_node_requirement(req, "f")
    assert info.value.field == field


def test_node_requirement_accepts_gt_lt_integers() -> None:
    validate_node_requirement(nreq("cores", "Gt", "-4"), "f")
    validate_node_requirement(nreq("cores", "Lt", "+10"), "f")


FIELD_REQ_ERRORS = [
    ("unknown-key", nreq("metadata.uid", "In", "x"), "f.key"),
    ("bad-operator", nreq("metadata.name", "Exists"), "f.operator"),
    ("two-values", nreq("metadata.name", "In", "a", "b"), "f.values"),
    ("no-values", nreq("metadata.name", "NotIn"), "f.values"),
]


@pytest.mark.parametrize(
    ("req", "field"), [c[1:] for c in FIELD_REQ_ERRORS], ids=[c[0] for c in FIELD_REQ_ERRORS]
)
def test_node_field_requirement_validation(req: NodeSelectorRequirement, field: str) -> None:
    with pytest.raises(InvalidObjectError) as info:
        validate_node_field_requirement(req, "f")
    assert info.value.field == field
