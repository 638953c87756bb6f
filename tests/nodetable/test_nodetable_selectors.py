"""Vectorised selector masks agree with the pure-Python matchers of ``api.selectors``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_sched.api.objects import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
)
from cluster_sched.api.selectors import node_selector_matches
from cluster_sched.nodetable.selectors import (
    label_map_mask,
    node_selector_mask,
    preferred_terms_score,
    requirement_mask,
)
from cluster_sched.nodetable.table import NodeTable

KEYS = ["k1", "k2", "example.com/k3"]
#: Values chosen to separate Go's ParseInt from Python's int(): underscores, leading
#: zeros, beyond int64, and beyond float64's exact integers.
VALUES = [
    "a", "b", "1", "5", "10", "007", "1_0", "1.5", "0",
    "9007199254740992", "9007199254740993", "9223372036854775807", "99999999999999999999",
]  # fmt: skip
BOUNDS = ["5", "+5", "-3", "0", "10", "9007199254740992", "9223372036854775807", "x", "1_0"]
NAMES = ["n0", "n1", "n2", "n3", "n4", "n5"]


def _table(label_sets: list[dict[str, str]], removed: set[int] = frozenset()) -> NodeTable:  # type: ignore[assignment]
    table = NodeTable(capacity=2)
    for i, labels in enumerate(label_sets):
        table.upsert_node(Node(ObjectMeta(NAMES[i], labels=labels)))
    for i in removed:
        table.remove_node(NAMES[i])
    return table


requirement = st.one_of(
    st.builds(
        NodeSelectorRequirement,
        st.sampled_from(KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=3).map(tuple),
    ),
    st.builds(
        NodeSelectorRequirement, st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"])
    ),
    st.builds(
        NodeSelectorRequirement,
        st.sampled_from(KEYS),
        st.sampled_from(["Gt", "Lt"]),
        st.sampled_from(BOUNDS).map(lambda v: (v,)),
    ),
)
field_requirement = st.builds(
    NodeSelectorRequirement,
    st.just("metadata.name"),
    st.sampled_from(["In", "NotIn"]),
    st.lists(st.sampled_from([*NAMES, "missing"]), min_size=1, max_size=2).map(tuple),
)
term = st.builds(
    NodeSelectorTerm,
    st.lists(requirement, max_size=3).map(tuple),
    st.lists(field_requirement, max_size=2).map(tuple),
)
selector = st.builds(NodeSelector, st.lists(term, max_size=3).map(tuple))
label_sets = st.lists(
    st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3),
    min_size=1,
    max_size=len(NAMES),
)


@settings(max_examples=300, deadline=None)
@given(label_sets, selector, st.sets(st.integers(0, len(NAMES) - 1), max_size=2))
def test_node_selector_mask_matches_pure_python(
    nodes: list[dict[str, str]], sel: NodeSelector, removed: set[int]
) -> None:
    removed = {i for i in removed if i < len(nodes) - 1}
    table = _table(nodes, removed)
    mask = node_selector_mask(table, sel)
    for i, labels in enumerate(nodes):
        if i in removed:
            continue
        row = table.index[NAMES[i]]
        assert bool(mask[row]) == node_selector_matches(sel, NAMES[i], labels), (NAMES[i], labels)


@settings(max_examples=200, deadline=None)
@given(
    label_sets,
    st.dictionaries(st.sampled_from([*KEYS, "absent"]), st.sampled_from(VALUES), max_size=2),
)
def test_label_map_mask_matches_pure_python(
    nodes: list[dict[str, str]], want: dict[str, str]
) -> None:
    table = _table(nodes)
    mask = label_map_mask(table, want)
    for i, labels in enumerate(nodes):
        expected = all(labels.get(k) == v for k, v in want.items())
        assert bool(mask[table.index[NAMES[i]]]) == expected


@pytest.mark.parametrize(
    ("label", "op", "bound", "want"),
    [
        ("10", "Gt", "5", True),
        ("10", "Lt", "5", False),
        ("007", "Gt", "6", True),  # leading zeros parse
        ("5", "Gt", "+4", True),  # a sign is allowed on the bound
        ("1_0", "Gt", "5", False),  # Go's ParseInt rejects underscores
        ("1.5", "Gt", "1", False),
        ("99999999999999999999", "Gt", "5", False),  # out of int64: no match
        ("9007199254740993", "Gt", "9007199254740992", True),  # exact beyond 2**53
        ("9223372036854775807", "Gt", "9223372036854775806", True),
        ("10", "Gt", "x", False),
    ],
    ids=lambda v: str(v),
)
def test_gt_lt_use_go_integer_semantics(label: str, op: str, bound: str, want: bool) -> None:
    table = _table([{"k": label}, {}])
    mask = requirement_mask(table, NodeSelectorRequirement("k", op, (bound,)))
    assert bool(mask[table.index["n0"]]) is want
    assert not mask[table.index["n1"]]  # a node without the key never matches Gt/Lt


@pytest.mark.parametrize(
    ("op", "want"),
    [
        ("In", [False, False]),
        ("NotIn", [True, True]),
        ("Exists", [False, False]),
        ("DoesNotExist", [True, True]),
    ],
    ids=lambda v: str(v),
)
def test_key_no_node_has(op: str, want: list[bool]) -> None:
    table = _table([{"k": "v"}, {}])
    values = ("v",) if op in ("In", "NotIn") else ()
    mask = requirement_mask(table, NodeSelectorRequirement("nobody", op, values))
    assert [bool(mask[table.index[n]]) for n in ("n0", "n1")] == want


def test_empty_term_and_empty_selector_match_nothing() -> None:
    table = _table([{"k": "v"}])
    assert not node_selector_mask(table, NodeSelector(()))[0]
    assert not node_selector_mask(table, NodeSelector((NodeSelectorTerm(),)))[0]


def test_masks_follow_node_updates() -> None:
    """Results are memoised per node_version: a relabelled node is re-evaluated."""
    table = _table([{"k": "a"}])
    sel = NodeSelector((NodeSelectorTerm((NodeSelectorRequirement("k", "In", ("b",)),)),))
    assert not node_selector_mask(table, sel)[0]
    table.upsert_node(Node(ObjectMeta("n0", labels={"k": "b"})))
    assert node_selector_mask(table, sel)[0]


def test_preferred_terms_score_sums_matching_weights() -> None:
    table = _table([{"k": "a", "z": "1"}, {"k": "a"}, {}])
    a = NodeSelectorTerm((NodeSelectorRequirement("k", "In", ("a",)),))
    z = NodeSelectorTerm((NodeSelectorRequirement("z", "Exists"),))
    score = preferred_terms_score(table, ((3, a), (5, z), (0, z)))
    rows = [table.index[n] for n in ("n0", "n1", "n2")]
    np.testing.assert_array_equal(score[rows], [8, 3, 0])
