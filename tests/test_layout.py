"""The source tree's shape: no import cycles, modules of at most 500 lines, and a test
tree of packages whose modules share code only through conftest.py and helper modules.

The import graph counts every ``import x`` / ``from x import y`` anywhere in a module —
inside functions and ``if TYPE_CHECKING:`` blocks too — because a cycle hidden in a
function is still a cycle in the design (each side needs the other to make sense). A
package's ``__init__`` importing its own submodules is a facade, not an edge. These are
the rules of the project's import_cycles.py tool, so this test and the tool agree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOTS = ("cluster_sched", "workers")
MAX_LINES = 500
TESTS = ROOT / "tests"


def project_sources() -> dict[str, tuple[str, bool]]:
    """Dotted name -> (source, is a package), for every module under ROOTS (a package
    is its ``__init__``)."""
    out: dict[str, tuple[str, bool]] = {}
    for root in ROOTS:
        for path in sorted((ROOT / root).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = (path.read_text(), path.name == "__init__.py")
    return out


def imported_names(node: ast.Import | ast.ImportFrom, cur: str, is_package: bool) -> list[str]:
    """Every dotted name an import statement may refer to (``from a import b``: a, a.b)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        pkg = cur.split(".") if is_package else cur.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join([*pkg, base] if base else pkg)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (the nearest enclosing module of each
    imported name)."""
    graph: dict[str, set[str]] = {}
    for cur, (text, is_package) in sources.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(text, cur)):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in imported_names(node, cur, is_package):
                while name and name not in sources:
                    name = name.rpartition(".")[0]
                facade = is_package and name.startswith(cur + ".")
                if name and name != cur and not facade:
                    edges.add(name)
        graph[cur] = edges
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module, each sorted (iterative: no
    recursion limit on deep graphs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(sorted(graph[start]))))
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def describe(cycle: list[str], graph: dict[str, set[str]]) -> str:
    members = set(cycle)
    edges = [f"{a} -> {b}" for a in cycle for b in sorted(graph[a] & members)]
    return f"cycle: {' '.join(cycle)}\n    " + "\n    ".join(edges)


def line_count(text: str) -> int:
    """Lines as a file iterator yields them (a last line without a newline counts)."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def test_no_import_cycles_among_project_modules() -> None:
    graph = import_graph(project_sources())
    cycles = strongly_connected(graph)
    assert cycles == [], "import cycles:\n" + "\n".join(describe(c, graph) for c in cycles)


def test_no_module_over_the_line_limit() -> None:
    sizes = {name: line_count(text) for name, (text, _) in project_sources().items()}
    over = sorted(((n, name) for name, n in sizes.items() if n > MAX_LINES), reverse=True)
    assert over == [], f"modules over {MAX_LINES} lines (split by concept):\n" + "\n".join(
        f"    {name} {n}" for n, name in over
    )


def test_imports_in_functions_and_type_checking_blocks_count() -> None:
    """The rules themselves: function-level and TYPE_CHECKING imports are edges, relative
    imports resolve, a package re-exporting its own submodule is no edge."""
    sources = {
        "pkg": ("from pkg import a\n", True),
        "pkg.a": ("def f():\n    from . import b\n", False),
        "pkg.b": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n",
            False,
        ),
        "pkg.c": ("import pkg.b\n", False),
    }
    graph = import_graph(sources)
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg", "pkg.b"},
        "pkg.b": {"pkg.a"},
        "pkg.c": {"pkg.b"},
    }
    assert strongly_connected(graph) == [["pkg.a", "pkg.b"]]


# --------------------------------------------------------------------- the test tree


def tree_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_test_directory_is_a_package() -> None:
    """Modules are ``tests.<dir>.<module>``: no basename clashes, no sys.path games."""
    dirs = {p.parent for p in tree_files()}
    missing = sorted(str(d.relative_to(ROOT)) for d in dirs if not (d / "__init__.py").exists())
    assert missing == [], "directories without __init__.py: " + " ".join(missing)


def test_test_modules_share_code_only_through_conftest_and_helper_modules() -> None:
    """No test module imports a test module or a conftest (fixtures come from conftest.py
    by pytest's lookup), none imports a helper by its bare file name, none edits sys.path."""
    files = tree_files()
    stems = {p.stem for p in files if p.name != "__init__.py"}
    bad: list[str] = []
    for path in files:
        where = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(), where)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                bad.append(f"{where}:{node.lineno}: uses sys.path")
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                names = [node.module or "", *(a.name for a in node.names)]
                bad += [
                    f"{where}:{node.lineno}: relative import of {n}"
                    for n in names
                    if n.startswith("test_") or n == "conftest"
                ]
                continue
            modules = (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            )
            for module in modules:
                assert module is not None
                parts = module.split(".")
                if parts[0] == "tests" and (
                    parts[-1].startswith("test_") or parts[-1] == "conftest"
                ):
                    bad.append(f"{where}:{node.lineno}: imports the test module {module}")
                elif parts[0] != "tests" and parts[0] in stems:
                    bad.append(f"{where}:{node.lineno}: imports {module} by file name")
    assert bad == [], "\n".join(bad)
