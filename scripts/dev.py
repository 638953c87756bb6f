#!/usr/bin/env python3
"""One entry point for a fresh machine: create .venv, install, then run or test.

Only the standard library is used here, because this script runs before anything
is installed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed"


def _ensure_venv() -> None:
    """Create the venv and (re)install when pyproject.toml changed since last install."""
    if sys.version_info < (3, 11):  # noqa: UP036 - runs before anything checks the version
        sys.exit("cluster-sched needs Python 3.11 or newer")
    if not (BIN / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(digest)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "setup"}:
        print("usage: python3 scripts/dev.py run|test|setup [args...]", file=sys.stderr)
        return 2
    _ensure_venv()
    cmd, rest = argv[0], argv[1:]
    if cmd == "setup":
        return 0
    if cmd == "run":
        args = rest or [
            str(ROOT / "examples" / "scheduling-basic.yaml"),
            "--output",
            str(ROOT / "out"),
        ]
        return subprocess.call([str(BIN / "cluster-sched"), "run", *args], cwd=ROOT)
    return _test(rest)


#: The static checks the test command runs before the suite (each must pass):
#: lint and formatting, types, then pytest (whose tests/test_layout.py guards import
#: cycles and module sizes).
CHECKS = (
    ["-m", "ruff", "check", "."],
    ["-m", "ruff", "format", "--check", "."],
    ["-m", "mypy"],
)


#: The suite runs in two pytest-xdist worker processes (the project's machines have 2
#: cores; serial, it took 18.6 min there, over the 15-min budget). Whole files go to one
#: worker (``loadfile``): a module's Ray session (``ray_session``, module-scoped) and its
#: tests stay in one process, so Ray starts once per module, not once per worker.
PARALLEL = ["-n", "2", "--dist", "loadfile"]


def _parallel(pytest_args: list[str]) -> list[str]:
    """``PARALLEL`` before ``pytest_args``, unless these choose for themselves
    (``-n N``/``--numprocesses``, ``--dist``, or ``-p no:xdist``)."""
    for arg in pytest_args:
        if arg in ("-n", "no:xdist", "-pno:xdist") or arg.startswith(("--numprocesses", "--dist")):
            return pytest_args
        if arg.startswith("-n") and arg[2:].isdigit():
            return pytest_args
    return [*PARALLEL, *pytest_args]


def _test(pytest_args: list[str]) -> int:
    """ruff, mypy, then pytest (``_parallel``); the first failure ends the run with its
    exit code."""
    python = str(BIN / "python")
    for check in CHECKS:
        print("$ python " + " ".join(check), flush=True)
        rc = subprocess.call([python, *check], cwd=ROOT)
        if rc != 0:
            return rc
    return subprocess.call([python, "-m", "pytest", *_parallel(pytest_args)], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
