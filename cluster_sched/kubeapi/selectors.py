"""``labelSelector`` and ``fieldSelector`` query strings, parsed and matched.

Label selectors take apimachinery's full string syntax: ``k=v``, ``k==v``, ``k!=v``,
``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``, ``k>n``, ``k<n``, comma meaning AND.
Field selectors take ``f=v``, ``f==v``, ``f!=v``; a field the kind does not allow is a
400 "field label not supported", as the API server answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster_sched.kubeapi.errors import bad_request

__all__ = [
    "FieldRequirement",
    "LabelRequirement",
    "Selector",
    "field_value",
    "parse_field_selector",
    "parse_label_selector",
]

_TOKEN = re.compile(r"\s*(notin\b|in\b|==|!=|=|>|<|!|\(|\)|,|[^\s=!<>(),]+)")
_OPS = {"=", "==", "!=", "in", "notin", ">", "<"}


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    #: "=", "!=", "in", "notin", "exists", "!", ">", "<"
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, Any]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        if not has or not isinstance(value, str):
            return False
        try:
            left, right = int(value), int(self.values[0])
        except ValueError:
            return False
        return left > right if self.op == ">" else left < right


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
        out.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def parse_label_selector(text: str) -> list[LabelRequirement]:
    """The requirements of a label selector string (empty: everything)."""
    toks = _tokens(text)
    reqs: list[LabelRequirement] = []
    i = 0

    def fail(why: str) -> Exception:
        return bad_request(f"unable to parse requirement: {why} in label selector {text!r}")

    while i < len(toks):
        if toks[i] == "!":
            if i + 1 >= len(toks) or toks[i + 1] in _OPS or toks[i + 1] in "(),":
                raise fail("expected a key after '!'")
            reqs.append(LabelRequirement(toks[i + 1], "!"))
            i += 2
        else:
            key = toks[i]
            if key in _OPS or key in "(),":
                raise fail(f"unexpected {key!r}")
            i += 1
            if i >= len(toks) or toks[i] == ",":
                reqs.append(LabelRequirement(key, "exists"))
            else:
                op = toks[i]
                i += 1
                if op in ("in", "notin"):
                    if i >= len(toks) or toks[i] != "(":
                        raise fail(f"expected '(' after {op}")
                    i += 1
                    values: list[str] = []
                    while i < len(toks) and toks[i] != ")":
                        if toks[i] != ",":
                            values.append(toks[i])
                        i += 1
                    if i >= len(toks):
                        raise fail("missing ')'")
                    i += 1
                    reqs.append(LabelRequirement(key, op, tuple(values)))
                elif op in ("=", "==", "!=", ">", "<"):
                    value = ""
                    if i < len(toks) and toks[i] != ",":
                        value = toks[i]
                        i += 1
                    if op in (">", "<") and not re.fullmatch(r"-?\d+", value):
                        raise fail(f"for '{op}' the value must be an integer, not {value!r}")
                    reqs.append(LabelRequirement(key, "=" if op == "==" else op, (value,)))
                else:
                    raise fail(f"unexpected {op!r} after key {key!r}")
        if i < len(toks):
            if toks[i] != ",":
                raise fail(f"expected ',' but found {toks[i]!r}")
            i += 1
            if i >= len(toks):
                raise fail("trailing ','")
    return reqs


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    negate: bool
    value: str


def parse_field_selector(text: str, allowed: Sequence[str], plural: str) -> list[FieldRequirement]:
    """The terms of a field selector, each on a field ``allowed`` for the resource."""
    out: list[FieldRequirement] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"([^=!]+?)\s*(==|!=|=)\s*(.*)", part)
        if m is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        name, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if name not in allowed:
            raise bad_request(f'field label not supported: "{name}"')
        out.append(FieldRequirement(name, op == "!=", value))
    return out


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string a field selector compares: booleans as true/false, absent as ""."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True, slots=True)
class Selector:
    """A request's label and field selectors together; ``matches`` an object."""

    labels: tuple[LabelRequirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()
    #: field path -> value getter overrides (events' ``source`` is a struct upstream)
    getters: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        if not isinstance(labels, Mapping):
            labels = {}
        if not all(r.matches(labels) for r in self.labels):
            return False
        getters = dict(self.getters)
        for f in self.fields:
            getter = getters.get(f.field)
            value = getter(obj) if getter else field_value(obj, f.field)
            if (value == f.value) == f.negate:
                return False
        return True
