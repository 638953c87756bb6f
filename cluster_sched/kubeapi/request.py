"""One API request as the handlers see it, and the checks every body goes through.

A body is decoded (JSON, or YAML for ``application/yaml``), must be an object of the
URL's kind and apiVersion, and is checked for fields Kubernetes does not know, as the
API server's ``fieldValidation`` says: Strict refuses them (400), Warn answers with a
``Warning`` header, Ignore drops them silently; in every case they are never stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml  # type: ignore[import-untyped, unused-ignore]

from cluster_sched.api.schema import unknown_fields
from cluster_sched.kubeapi.errors import ApiError, bad_request
from cluster_sched.kubeapi.resources import Resource

__all__ = [
    "Request",
    "Response",
    "Stream",
    "decode_body",
    "dumps",
    "parse_bool",
    "strip_unknown",
]

_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/json").split(";")[0].strip().lower()

    @property
    def accept(self) -> str:
        return self.headers.get("accept", "")


@dataclass
class Response:
    code: int
    body: Any
    content_type: str = "application/json"
    warnings: list[str] = field(default_factory=list)


@dataclass
class Stream:
    """A streamed (watch) reply: ``chunks`` yields one encoded event at a time."""

    chunks: Iterator[bytes]
    content_type: str = "application/json"


def dumps(value: Any) -> bytes:
    """Compact JSON, with orjson (a 100k-pod list or a busy watch is mostly encoding);
    the standard library for anything orjson refuses (an integer past 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), default=str).encode()


def parse_bool(value: str | None) -> bool:
    """Go's strconv.ParseBool, which the API server uses for ``watch`` and friends."""
    if value is None or value == "":
        return False
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise bad_request(f"invalid boolean value {value!r}")


def decode_body(request: Request) -> Any:
    """The request body as JSON (or YAML); a 400 Status when it does not parse."""
    if not request.body:
        raise bad_request("the request body is empty")
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request("the request body is not UTF-8") from None
    if request.content_type in ("application/yaml", "application/apply-patch+yaml"):
        try:
            return yaml.load(text, Loader=_YAML_LOADER)
        except yaml.YAMLError as exc:
            raise bad_request(f"error decoding YAML: {str(exc).splitlines()[0]}") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise bad_request(f"error decoding JSON: {exc}") from None


def _delete_path(doc: Any, path: str) -> None:
    parts = [
        m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _PATH_PART.finditer(path)
    ]
    cur = doc
    for part in parts[:-1]:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return
    last = parts[-1] if parts else None
    if isinstance(cur, dict) and isinstance(last, str):
        cur.pop(last, None)


def strip_unknown(doc: dict[str, Any], validation: str) -> list[str]:
    """Remove fields no Kubernetes schema knows; their paths (for Warn), or 400 (Strict)."""
    mode = validation or "Warn"
    if mode not in ("Strict", "Warn", "Ignore"):
        raise bad_request(
            f'fieldValidation must be one of "Ignore", "Warn", "Strict", not "{validation}"'
        )
    found: list[str] = []
    for _ in range(100):
        paths = unknown_fields(doc)
        if not paths:
            break
        if mode == "Strict":
            listed = ", ".join(f'unknown field "{p}"' for p in paths)
            raise bad_request(f"strict decoding error: {listed}")
        found.extend(paths)
        for path in paths:
            _delete_path(doc, path)
    return [f'unknown field "{p}"' for p in found] if mode == "Warn" else []


def check_object(resource: Resource, body: Any, what: str = "object") -> dict[str, Any]:
    """``body`` as an object of ``resource``'s kind: kind and apiVersion filled if
    absent, 400 if they name another kind, metadata a map."""
    if not isinstance(body, dict):
        raise bad_request(f"the {what} must be a JSON object, not {type(body).__name__}")
    kind = body.get("kind")
    if kind in (None, ""):
        body["kind"] = resource.kind
    elif kind != resource.kind:
        raise bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({resource.kind})"
        )
    api_version = body.get("apiVersion")
    if api_version in (None, ""):
        body["apiVersion"] = resource.api_version
    elif api_version != resource.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({resource.api_version})"
        )
    meta = body.get("metadata")
    if meta is None:
        body["metadata"] = meta = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata must be a JSON object")
    for name in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        if meta.get(name) is not None and not isinstance(meta[name], str):
            raise bad_request(f"metadata.{name} must be a string")
    for name in ("labels", "annotations"):
        value = meta.get(name)
        if value is not None and (
            not isinstance(value, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        ):
            raise bad_request(f"metadata.{name} must be a map of strings to strings")
    return body


def require(condition: bool, code: int, reason: str, message: str) -> None:
    if not condition:
        raise ApiError(code, reason, message)
