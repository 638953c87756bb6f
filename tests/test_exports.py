"""Curated ``__all__`` lists, guarded by one test over every module that has one.

Found from the source (every module of ``cluster_sched`` and ``workers`` assigning
``__all__``), so a new module is guarded without being listed here. Each list is a
literal (readable without importing), has no duplicates, and names only what the module
defines; a package's list is complete: every public name its ``__init__`` imports is in
it, so nothing is re-exported by accident. The queue package's exact list is pinned in
tests/queue/test_public_api.py.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def modules_with_all() -> dict[str, tuple[Path, ast.Module]]:
    out: dict[str, tuple[Path, ast.Module]] = {}
    for root in ("cluster_sched", "workers"):
        for path in sorted((ROOT / root).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            if any(all_value(node) is not None for node in tree.body):
                name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                out[name.removesuffix(".__init__")] = (path, tree)
    return out


def all_value(node: ast.stmt) -> ast.expr | None:
    """The value assigned to ``__all__`` by a module-level statement, if it is one."""
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    ):
        return node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.value if node.target.id == "__all__" else None
    return None


MODULES = modules_with_all()


def test_the_public_packages_have_curated_lists() -> None:
    """The discovery finds the packages users import from (it cannot silently find none)."""
    assert {"cluster_sched.api", "cluster_sched.queue", "cluster_sched.store"} <= set(MODULES)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_all_is_a_literal_list_of_names_that_exist(name: str) -> None:
    _, tree = MODULES[name]
    (value,) = [v for v in map(all_value, tree.body) if v is not None]
    listed = ast.literal_eval(value)
    assert isinstance(listed, list | tuple) and all(isinstance(n, str) for n in listed), name
    assert len(listed) == len(set(listed)), f"{name}: duplicates in __all__"
    module = importlib.import_module(name)
    assert list(module.__all__) == list(listed), f"{name}: __all__ is changed at import"
    missing = [n for n in listed if not hasattr(module, n)]
    assert missing == [], f"{name}: __all__ names what the module lacks"


@pytest.mark.parametrize(
    "name", sorted(n for n, (p, _) in MODULES.items() if p.name == "__init__.py")
)
def test_a_package_exports_every_public_name_it_imports(name: str) -> None:
    _, tree = MODULES[name]
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if not (alias.asname or alias.name).startswith("_") and alias.name != "annotations"
    }
    listed = set(importlib.import_module(name).__all__)
    submodules = {n for n in imported if _is_submodule(name, n)}
    assert sorted(imported - listed - submodules) == [], f"{name}: imported, not in __all__"


def _is_submodule(package: str, name: str) -> bool:
    path = ROOT.joinpath(*package.split("."))
    return (path / f"{name}.py").exists() or (path / name / "__init__.py").exists()
