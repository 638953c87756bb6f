"""Fidelity corpus: kube-scheduler's own plugin unit tests, replayed through ``explain``.

Each YAML file under ``cases/`` is one (or a list of) case(s); see ``README.md``.
``test_case`` runs one case; the other tests guard the corpus itself so that it cannot
shrink or rot without a failure.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.fidelity.harness import (
    CASES_DIR,
    Case,
    CaseFormatError,
    assert_subset,
    case_params,
    load_case_file,
    load_cases,
    run_explain,
    subset_mismatches,
)

CASES = load_cases()

#: Case directories ported in this suite and how many cases each holds. A floor is the
#: count at the time of porting: removing a case means lowering its floor on purpose.
REQUIRED_GROUPS = {
    "noderesourcesfit": 24,
    "leastallocated": 11,
    "mostallocated": 9,
    "requestedtocapacityratio": 7,
    "balancedallocation": 6,
    "tainttoleration": 12,
    "nodeaffinity": 25,
    "imagelocality": 7,
    "nodeports": 8,
    "nodename": 3,
    "nodeunschedulable": 3,
    "defaultprofile": 5,
    "volumebinding": 36,
    "volumezone": 23,
    "nodevolumelimits": 29,
    "volumerestrictions": 22,
}

MIN_CASES = 40


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_explain(case, tmp_path, capsys)
    assert_subset(case.expect, doc)


def test_corpus_is_not_shrinking() -> None:
    assert len(CASES) >= MIN_CASES, f"only {len(CASES)} fidelity cases, want >= {MIN_CASES}"
    per_group = Counter(case.group for case in CASES)
    short = {
        group: (per_group.get(group, 0), least)
        for group, least in REQUIRED_GROUPS.items()
        if per_group.get(group, 0) < least
    }
    assert not short, f"case groups below their floor (have, want): {short}"


def test_every_case_names_its_upstream_test() -> None:
    for case in CASES:
        source = case.upstream.split()[0]
        assert "/" in source and source.endswith(".go"), (
            f"{case.name}: upstream must start with the kubernetes/kubernetes test file "
            f"it was ported from, got {case.upstream!r}"
        )
        assert case.name.startswith(f"{case.group}/"), (
            f"{case.name}: case names are '<directory>/<slug>' ({case.path})"
        )


def test_every_manifest_is_a_kubernetes_object() -> None:
    for case in CASES:
        for obj in [*case.cluster, case.pod]:
            assert obj.get("apiVersion") and obj.get("kind"), f"{case.name}: {obj}"
            assert obj.get("metadata", {}).get("name"), f"{case.name}: unnamed object {obj}"
        assert case.pod["kind"] == "Pod", case.name
        existing = [o for o in case.cluster if o["kind"] == "Pod"]
        for pod in existing:
            assert pod.get("spec", {}).get("nodeName"), (
                f"{case.name}: cluster pod {pod['metadata']['name']} has no spec.nodeName"
            )


# --- the harness itself -------------------------------------------------------------------


def test_subset_accepts_extra_keys_and_missing_none() -> None:
    actual = {"scores": {"n1": {"A": 1, "B": 2}}, "selectedNode": "n1"}
    assert_subset({"scores": {"n1": {"A": 1}}}, actual)
    assert_subset({"message": None}, actual)
    assert_subset({"message": None}, {"message": None})


def test_subset_reports_every_mismatch_with_its_path() -> None:
    problems = subset_mismatches(
        {"scores": {"n1": {"A": 2}, "n2": {"A": 1}}, "filter": {"n1": {"reasons": ["x", "y"]}}},
        {"scores": {"n1": {"A": 1}}, "filter": {"n1": {"reasons": ["y", "x"]}}},
    )
    assert problems == [
        "$.scores.n1.A: expected 2, got 1",
        '$.scores.n2: missing (expected {"A": 1})',
        '$.filter.n1.reasons[0]: expected "x", got "y"',
        '$.filter.n1.reasons[1]: expected "y", got "x"',
    ]
    with pytest.raises(AssertionError, match="4 mismatch"):
        assert_subset(
            {"scores": {"n1": {"A": 2}, "n2": {"A": 1}}, "filter": {"n1": {"reasons": ["x", "y"]}}},
            {"scores": {"n1": {"A": 1}}, "filter": {"n1": {"reasons": ["y", "x"]}}},
        )


def test_subset_lists_must_match_in_length_and_bools_are_not_ints() -> None:
    assert subset_mismatches(["a"], ["a", "b"]) == ['$: expected ["a"], got ["a", "b"]']
    assert subset_mismatches(1, True) == ["$: expected 1, got true"]
    assert subset_mismatches(None, 0) == ["$: expected null, got 0"]


def test_loader_rejects_malformed_cases(tmp_path: Path) -> None:
    good = {
        "name": "g/x",
        "upstream": "pkg/x_test.go",
        "cluster": [],
        "pod": {"kind": "Pod"},
        "expect": {"selectedNode": None},
    }
    bad_files = {
        "missing.yaml": {k: v for k, v in good.items() if k != "expect"},
        "unknown.yaml": {**good, "expected": {}},
        "stray.yaml": {**good, "expect": {"score": {}}},
    }
    import yaml

    for name, data in bad_files.items():
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data))
        with pytest.raises(CaseFormatError):
            load_case_file(path)
    listed = tmp_path / "listed.yaml"
    listed.write_text(yaml.safe_dump([good, {**good, "name": "g/y"}]))
    assert [c.name for c in load_case_file(listed)] == ["g/x", "g/y"]
    dup_root = tmp_path / "dup" / "g"
    dup_root.mkdir(parents=True)
    (dup_root / "a.yaml").write_text(yaml.safe_dump(good))
    (dup_root / "b.yaml").write_text(yaml.safe_dump(good))
    with pytest.raises(CaseFormatError, match="duplicate"):
        load_cases(tmp_path / "dup")


def test_cases_dir_is_the_corpus_root() -> None:
    assert CASES_DIR.is_dir()
    assert {p.name for p in CASES_DIR.iterdir() if p.is_dir()} >= set(REQUIRED_GROUPS)
