"""Strict decoding helpers: read one field of a YAML/JSON mapping or fail naming it.

Upstream decodes the configuration strictly (unknown fields and wrong types are errors)
and reports ``field.Path`` strings such as ``profiles[0].pluginConfig[1].args.x``. These
helpers do the same for plain ``dict``/``list`` trees. A ``null`` value always means "not
set", as it does for Go's pointer and slice fields.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NoReturn

from cluster_sched.errors import ConfigError

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def child(path: str, name: str) -> str:
    """``path.name``, or just ``name`` at the root."""
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def fail(path: str, message: str) -> NoReturn:
    """Raise the one-line error every config problem becomes: ``<path>: <message>``."""
    raise ConfigError(f"{path}: {message}" if path else message)


def fail_unsupported(path: str, value: str, supported: Collection[str]) -> NoReturn:
    """field.NotSupported: name the bad value and the accepted ones."""
    listed = ", ".join(f'"{s}"' for s in supported)
    fail(path, f'unsupported value "{value}": supported values: {listed}')


def describe(value: object) -> str:
    """The YAML-ish type name of ``value`` for "expected X, got Y" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, Sequence):
        return "list"
    return type(value).__name__


def as_mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        fail(path, f"expected a mapping, got {describe(value)}")
    for key in value:
        if not isinstance(key, str):
            fail(path, f"field names must be strings, got {describe(key)} {key!r}")
    return value


def check_fields(obj: Mapping[str, Any], path: str, allowed: Collection[str]) -> None:
    """Reject fields the upstream type does not have (strict decoding)."""
    for key in obj:
        if key not in allowed:
            fail(child(path, key), "unknown field")


def opt_mapping(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
    value = obj.get(key)
    return None if value is None else as_mapping(value, child(path, key))


def opt_list(obj: Mapping[str, Any], key: str, path: str) -> Sequence[Any] | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        fail(child(path, key), f"expected a list, got {describe(value)}")
    return value


def opt_str(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        fail(child(path, key), f"expected a string, got {describe(value)}")
    return value


def opt_bool(obj: Mapping[str, Any], key: str, path: str) -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        fail(child(path, key), f"expected a boolean, got {describe(value)}")
    return value


def check_int(value: object, path: str, *, bits: int = 32) -> int:
    """An integer that fits the Go field's width; booleans and floats are rejected."""
    if isinstance(value, bool) or not isinstance(value, int):
        fail(path, f"expected an integer, got {describe(value)}")
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    if not low <= value <= high:
        fail(path, f"invalid value {value}: out of the int{bits} range")
    return value


def opt_int(obj: Mapping[str, Any], key: str, path: str, *, bits: int = 32) -> int | None:
    value = obj.get(key)
    return None if value is None else check_int(value, child(path, key), bits=bits)


def str_list(obj: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    items = opt_list(obj, key, path) or ()
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            fail(index(child(path, key), i), f"expected a string, got {describe(item)}")
        out.append(item)
    return tuple(out)


# --- Kubernetes name syntax (apimachinery/pkg/util/validation) ---------------------------

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def qualified_name_error(value: str) -> str | None:
    """Why ``value`` is not a qualified name (``prefix/name`` label key), or None."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return "prefix part must be a lowercase RFC 1123 subdomain"
    else:
        return "a qualified name must be a name with an optional DNS subdomain prefix and '/'"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character"
        )
    return None


def check_qualified_name(value: str, path: str) -> None:
    problem = qualified_name_error(value)
    if problem is not None:
        fail(path, f"invalid value {value!r}: {problem}")


def check_label_value(value: str, path: str) -> None:
    if len(value) > 63:
        fail(path, f"invalid value {value!r}: must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        fail(
            path,
            f"invalid value {value!r}: a label value must be empty or consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character",
        )
