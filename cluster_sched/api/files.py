"""Reading an input file as text, with one-line errors naming it.

Manifests, workloads, scheduler_perf configs and their templates are all read this way,
so a directory, a missing file, a permission problem or binary junk reads the same
everywhere: ``PATH: is a directory, expected a <what> file``.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from cluster_sched.errors import InvalidObjectError

__all__ = ["read_text"]


def read_text(path: str | PathLike[str], what: str) -> str:
    """The file's UTF-8 text; InvalidObjectError (source = the path) otherwise.
    ``what`` names the kind of file in the message ("manifest", "workload", ...)."""
    source = str(path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except IsADirectoryError:
        raise InvalidObjectError(f"is a directory, expected a {what} file", source=source) from None
    except UnicodeDecodeError as err:
        raise InvalidObjectError(
            f"not UTF-8 text (a binary file?): {err.reason} at byte {err.start}", source=source
        ) from None
    except FileNotFoundError:
        raise InvalidObjectError(
            f"cannot read {what}: no such file or directory", source=source
        ) from None
    except PermissionError:
        raise InvalidObjectError(f"cannot read {what}: permission denied", source=source) from None
    except OSError as err:
        raise InvalidObjectError(
            f"cannot read {what}: {err.strerror or err}", source=source
        ) from None
