"""``kubectl describe`` for a kind without a describer of its own (ResourceClaim,
ResourceSlice, DeviceClass, ResourceClaimTemplate and the like): kubectl's generic
describer prints identity, labels and annotations, then every field of the object,
sorted, as "Title Case" labels nested by indentation (a list's items one after the other
at the same depth), then the Events table — all through one tabwriter, so values line up
across each run of ``Label:<tab>value`` lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from cluster_sched.workload.inspect_render import NONE, describe_event_rows, tabwrite

__all__ = ["render_describe_generic", "smart_label"]

#: kubectl's smartLabelFor acronyms, printed upper-case.
_ACRONYMS = frozenset({"API", "URL", "UID", "OSB", "GUID"})
#: Printed above the content (or not at all), as the generic describer skips them.
_SKIP = frozenset(
    {
        ".metadata.managedFields",
        ".metadata.name",
        ".metadata.namespace",
        ".metadata.labels",
        ".metadata.annotations",
    }
)


def _char_class(ch: str) -> int:
    if ch.islower():
        return 1
    if ch.isupper():
        return 2
    if ch.isdigit():
        return 3
    return 4


def _camel_split(word: str) -> list[str]:
    """fatih/camelcase.Split: runs of one character class; an upper-case letter before
    a lower-case run starts that run ("HTTPServer" -> HTTP, Server)."""
    runs: list[list[str]] = []
    last = 0
    for ch in word:
        cls = _char_class(ch)
        if runs and cls == last:
            runs[-1].append(ch)
        else:
            runs.append([ch])
        last = cls
    for i in range(len(runs) - 1):
        if _char_class(runs[i][0]) == 2 and _char_class(runs[i + 1][0]) == 1:
            runs[i + 1].insert(0, runs[i].pop())
    return ["".join(r) for r in runs if r]


def smart_label(field: str) -> str:
    """kubectl's smartLabelFor: "reservedFor" -> "Reserved For", "uid" -> "UID"; a name
    with characters other than letters and '-' is kept as it is."""
    if any(not (ch.isalpha() or ch == "-") for ch in field):
        return field
    parts = []
    for part in _camel_split(field):
        if part == "_":
            continue
        up = part.upper()
        parts.append(up if up in _ACRONYMS else part[:1].upper() + part[1:])
    return " ".join(parts)


def _go_value(value: Any) -> str:
    """Go's %v of a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        inner = " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items()))
        return f"map[{inner}]"
    return str(value)


def _content(rows: list[list[str]], level: int, content: Mapping[str, Any], prefix: str) -> None:
    """kubectl's printUnstructuredContent, one row per line."""
    indent = "  " * level
    for field in sorted(content):
        value = content[field]
        path = f"{prefix}.{field}"
        if path in _SKIP:
            continue
        if isinstance(value, Mapping):
            rows.append([f"{indent}{smart_label(field)}:"])
            _content(rows, level + 1, value, path)
        elif isinstance(value, list):
            rows.append([f"{indent}{smart_label(field)}:"])
            for child in value:
                if isinstance(child, Mapping):
                    _content(rows, level + 1, child, path)
                else:
                    rows.append([f"{indent}  {_go_value(child)}"])
        else:
            rows.append([f"{indent}{smart_label(field)}:", _go_value(value)])


def _map_rows(label: str, value: Any) -> list[list[str]]:
    """printLabelsMultiline / printAnnotationsMultiline: sorted ``k=v``, one a line."""
    if not isinstance(value, Mapping) or not value:
        return [[f"{label}:", NONE]]
    items = sorted(value.items())
    return [[f"{label}:" if i == 0 else "", f"{k}={v}"] for i, (k, v) in enumerate(items)]


def _event_rows(events: Sequence[Mapping[str, Any]], now: datetime) -> list[list[str]]:
    return [["Events:"], *describe_event_rows(events, now)] if events else [["Events:", NONE]]


def render_describe_generic(
    doc: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: datetime
) -> str:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    rows = [["Name:", str(meta.get("name", ""))], ["Namespace:", str(meta.get("namespace", ""))]]
    rows += _map_rows("Labels", meta.get("labels"))
    rows += _map_rows("Annotations", meta.get("annotations"))
    _content(rows, 0, doc, "")
    rows += _event_rows(events, now)
    return tabwrite(rows, padding=2) + "\n"
