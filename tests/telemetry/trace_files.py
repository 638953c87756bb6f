"""Reading what ``--trace-file`` wrote (OTLP JSON, one export request per line): shared
by the tracing tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def spans_in(path: Path) -> list[dict[str, Any]]:
    """Every span of every export request in the file, in file order."""
    out: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend(ss["spans"])
    return out


def attrs_of(span: dict[str, Any]) -> dict[str, Any]:
    """A span's OTLP JSON attributes as plain values (ints arrive as strings)."""
    out: dict[str, Any] = {}
    for kv in span.get("attributes", []):
        (kind, value), *_ = kv["value"].items()
        out[kv["key"]] = int(value) if kind == "intValue" else value
    return out
