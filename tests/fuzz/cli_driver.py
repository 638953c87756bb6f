"""Drive ``cluster_sched.cli.main`` in-process and judge how it ended."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence

from cluster_sched.cli import EXIT_OK, EXIT_USAGE, main

__all__ = ["assert_clean_end", "run_cli"]


def run_cli(argv: Sequence[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one in-process CLI run. Any exception escaping
    ``main`` is a crash and propagates to the fuzz target."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_clean_end(code: int, err: str) -> None:
    """Success, or exactly one ``error: ...`` line and exit code 2 (never a traceback)."""
    if code == EXIT_OK:
        return
    lines = err.splitlines()
    assert code == EXIT_USAGE, (code, err)
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert errors[0] == lines[-1], err
