"""Shared machinery for the fidelity corpus: load case files, run ``explain``, compare.

A case is a YAML mapping (see ``README.md`` beside this file) holding a cluster, a
pending pod, an optional KubeSchedulerConfiguration and the subset of the
``cluster-sched explain --output json`` document that upstream's own unit tests pin
down. Everything here is plain functions so that other suites (InterPodAffinity,
PodTopologySpread, preemption) can reuse them with their own case directories.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

#: Root of the corpus: one sub-directory per plugin (or behaviour) under test.
CASES_DIR = Path(__file__).resolve().parent / "cases"

#: Keys a case may carry; anything else is a typo and fails loading.
REQUIRED_KEYS = frozenset({"name", "upstream", "cluster", "pod", "expect"})
OPTIONAL_KEYS = frozenset({"notes", "config", "seed"})

#: Top-level keys of the explain JSON document an ``expect`` block may constrain.
EXPLAIN_KEYS = frozenset(
    {
        "selectedNode",
        "feasibleNodes",
        "evaluatedNodes",
        "filter",
        "rawScores",
        "scores",
        "finalScores",
        "message",
        "preemption",
    }
)


class CaseFormatError(ValueError):
    """A case file does not follow the documented format."""


@dataclass(frozen=True, slots=True)
class Case:
    """One fidelity case, as loaded from ``cases/<group>/<file>.yaml``."""

    name: str
    upstream: str
    cluster: tuple[Mapping[str, Any], ...]
    pod: Mapping[str, Any]
    expect: Mapping[str, Any]
    path: Path
    group: str
    config: Mapping[str, Any] | None = None
    seed: int | None = None
    notes: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


def _case_from_mapping(data: object, path: Path, index: int | None) -> Case:
    where = f"{path}" if index is None else f"{path}[{index}]"
    if not isinstance(data, Mapping):
        raise CaseFormatError(f"{where}: a case must be a mapping, got {type(data).__name__}")
    missing = REQUIRED_KEYS - data.keys()
    if missing:
        raise CaseFormatError(f"{where}: missing key(s) {sorted(missing)}")
    unknown = data.keys() - REQUIRED_KEYS - OPTIONAL_KEYS
    if unknown:
        raise CaseFormatError(f"{where}: unknown key(s) {sorted(unknown)}")
    name, upstream = data["name"], data["upstream"]
    if not isinstance(name, str) or not name:
        raise CaseFormatError(f"{where}: name must be a non-empty string")
    if not isinstance(upstream, str) or not upstream:
        raise CaseFormatError(f"{where}: upstream must be a non-empty string")
    cluster = data["cluster"]
    if not isinstance(cluster, list) or not all(isinstance(o, Mapping) for o in cluster):
        raise CaseFormatError(f"{where}: cluster must be a list of manifests")
    if not isinstance(data["pod"], Mapping):
        raise CaseFormatError(f"{where}: pod must be a manifest mapping")
    expect = data["expect"]
    if not isinstance(expect, Mapping) or not expect:
        raise CaseFormatError(f"{where}: expect must be a non-empty mapping")
    stray = expect.keys() - EXPLAIN_KEYS
    if stray:
        raise CaseFormatError(f"{where}: expect has key(s) explain never emits: {sorted(stray)}")
    config = data.get("config")
    if config is not None and not isinstance(config, Mapping):
        raise CaseFormatError(f"{where}: config must be a mapping")
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise CaseFormatError(f"{where}: seed must be an integer")
    return Case(
        name=name,
        upstream=upstream,
        cluster=tuple(cluster),
        pod=data["pod"],
        expect=expect,
        path=path,
        group=path.parent.name,
        config=config,
        seed=seed,
        notes=str(data.get("notes") or ""),
        raw=data,
    )


def load_case_file(path: Path) -> list[Case]:
    """Read one case file: either a single case mapping or a list of them."""
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if isinstance(data, list):
        return [_case_from_mapping(item, path, i) for i, item in enumerate(data)]
    return [_case_from_mapping(data, path, None)]


def load_cases(root: Path = CASES_DIR) -> list[Case]:
    """Every case under ``root`` (recursively, ``*.yaml``/``*.yml``), in a stable order.

    Raises :class:`CaseFormatError` on a malformed file or a duplicated case name, so a
    broken corpus fails loudly instead of silently shrinking.
    """
    cases: list[Case] = []
    files = sorted([*root.rglob("*.yaml"), *root.rglob("*.yml")])
    for path in files:
        cases.extend(load_case_file(path))
    seen: dict[str, Path] = {}
    for case in cases:
        if case.name in seen:
            raise CaseFormatError(
                f"duplicate case name {case.name!r} in {case.path} and {seen[case.name]}"
            )
        seen[case.name] = case.path
    return cases


def case_params(cases: Iterable[Case]) -> list[Any]:
    """``pytest.param`` per case, with the case name as the test id."""
    return [pytest.param(case, id=case.name) for case in cases]


def _write_yaml_documents(path: Path, documents: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        yaml.safe_dump_all(
            [dict(doc) for doc in documents], fh, sort_keys=False, default_flow_style=False
        )


def explain_argv(case: Case, workdir: Path) -> list[str]:
    """Write the case's inputs under ``workdir`` and return the ``explain`` argv for them."""
    cluster_path = workdir / "cluster.yaml"
    pod_path = workdir / "pod.yaml"
    _write_yaml_documents(cluster_path, case.cluster)
    _write_yaml_documents(pod_path, [case.pod])
    argv = ["explain", "--cluster", str(cluster_path), "--pod", str(pod_path)]
    if case.config is not None:
        config_path = workdir / "config.yaml"
        _write_yaml_documents(config_path, [case.config])
        argv += ["--config", str(config_path)]
    if case.seed is not None:
        argv += ["--seed", str(case.seed)]
    argv += ["--output", "json"]
    return argv


def run_explain(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Run ``cluster-sched explain`` in-process for ``case`` and return the parsed JSON.

    Fails the test (with the command line, stdout and stderr) when the exit code is
    not 0 or stdout is not one JSON object.
    """
    __tracebackhide__ = True
    from cluster_sched.cli import main  # imported late: the corpus loads without the package

    argv = explain_argv(case, tmp_path)
    capsys.readouterr()  # drop anything printed before this call
    try:
        code = main(argv)
    except SystemExit as exc:  # a CLI that exits instead of returning is still judged
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    where = f"case {case.name!r} ({case.path})\n  argv: {argv}"
    if code != 0:
        pytest.fail(
            f"explain exited {code} for {where}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
        )
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as exc:
        pytest.fail(f"explain did not print JSON for {where}: {exc}\n--- stdout ---\n{out}")
    if not isinstance(doc, dict):
        pytest.fail(f"explain printed {type(doc).__name__}, not an object, for {where}")
    return doc


def _render(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def subset_mismatches(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Every place where ``actual`` does not contain ``expected``, one line each.

    Rules: a mapping matches when each expected key matches (extra actual keys are
    fine); an expected ``None`` also accepts a missing key; a list matches only a list
    of the same length whose items match pairwise (order is part of upstream's
    contract, e.g. the order of Filter reasons); other values compare with ``==``,
    except that ``True``/``False`` never equal ``1``/``0``.
    """
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected an object, got {_render(actual)}"]
        problems: list[str] = []
        for key, want in expected.items():
            sub = f"{path}.{key}"
            if key not in actual:
                if want is not None:
                    problems.append(f"{sub}: missing (expected {_render(want)})")
                continue
            problems.extend(subset_mismatches(want, actual[key], sub))
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected a list {_render(expected)}, got {_render(actual)}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {_render(expected)}, got {_render(actual)}"]
        problems = []
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            problems.extend(subset_mismatches(want, got, f"{path}[{i}]"))
        return problems
    if isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
    else:
        same = expected == actual
    return [] if same else [f"{path}: expected {_render(expected)}, got {_render(actual)}"]


def assert_subset(expected: Any, actual: Any, path: str = "$") -> None:
    """Assert ``actual`` contains ``expected`` (see :func:`subset_mismatches`)."""
    __tracebackhide__ = True
    problems = subset_mismatches(expected, actual, path)
    if problems:
        listing = "\n  ".join(problems)
        raise AssertionError(
            f"{len(problems)} mismatch(es):\n  {listing}\n"
            f"--- expected (subset) ---\n{json.dumps(expected, indent=2, sort_keys=True)}\n"
            f"--- actual ---\n{json.dumps(actual, indent=2, sort_keys=True, default=str)}"
        )
