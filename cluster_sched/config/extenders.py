"""The ``extenders`` section of KubeSchedulerConfiguration v1: decode and validate.

Shapes follow upstream's ``Extender`` type (urlPrefix, filterVerb, preemptVerb,
prioritizeVerb, bindVerb, weight, enableHTTPS, tlsConfig, httpTimeout, nodeCacheCapable,
managedResources, ignorable); validation is upstream's ``validateExtenders`` (a positive
weight for a prioritizer, at most one binder, managed resources that are extended
resource names and appear once). ``config.load`` turns managed resources marked
``ignoredByScheduler`` into NodeResourcesFit's ``ignoredResources``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._fields import (
    as_mapping,
    check_fields,
    child,
    fail,
    index,
    opt_bool,
    opt_int,
    opt_list,
    opt_mapping,
    opt_str,
    qualified_name_error,
)

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT_SECONDS",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "parse_duration",
    "parse_extenders",
]

#: upstream DefaultExtenderTimeout: used when httpTimeout is unset or zero.
DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0

_EXTENDER_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_STRINGS = ("serverName", "certFile", "keyFile", "caFile")
_TLS_BYTES = ("certData", "keyData", "caData")


@dataclass(frozen=True, slots=True)
class ExtenderManagedResource:
    """An extended resource the extender manages; the pod is sent to the extender only
    if it requests (or limits) one of them."""

    name: str
    #: NodeResourcesFit's Filter then ignores the resource.
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class ExtenderTLSConfig:
    """upstream ExtenderTLSConfig; the ``*_data`` fields are PEM bytes (base64 in YAML).
    Key material is kept out of reprs (and so out of summary.json)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = field(default=b"", repr=False)
    key_data: bytes = field(default=b"", repr=False)
    ca_data: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, slots=True)
class Extender:
    """One HTTP extender. Verbs are appended to ``url_prefix``; an empty verb means the
    extender does not take part in that step."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    #: multiplies the extender's (0..10) scores; must be positive with a prioritizeVerb
    weight: int = 0
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    #: seconds; 0 means DEFAULT_EXTENDER_TIMEOUT_SECONDS
    http_timeout: float = 0.0
    #: send node names only (the extender caches nodes) instead of whole Node objects
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    #: errors of this extender are skipped instead of failing the pod's attempt
    ignorable: bool = False

    @property
    def timeout_seconds(self) -> float:
        return self.http_timeout or DEFAULT_EXTENDER_TIMEOUT_SECONDS


# --- durations (Go's time.ParseDuration) -------------------------------------------------

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Seconds for a Go duration string ("5s", "1m30s", "250ms", "0"), None if invalid."""
    s = text.strip()
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        return None
    pos = 0
    total = 0.0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


# --- decoding ------------------------------------------------------------------------------


def _opt_bytes(obj: Mapping[str, Any], key: str, path: str) -> bytes:
    value = opt_str(obj, key, path)
    if not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        fail(child(path, key), "invalid value: expected base64-encoded data")


def _tls(raw: object, path: str) -> ExtenderTLSConfig:
    obj = as_mapping(raw, path)
    check_fields(obj, path, ("insecure", *_TLS_STRINGS, *_TLS_BYTES))
    strings = {key: opt_str(obj, key, path) or "" for key in _TLS_STRINGS}
    data = {key: _opt_bytes(obj, key, path) for key in _TLS_BYTES}
    return ExtenderTLSConfig(
        insecure=bool(opt_bool(obj, "insecure", path)),
        server_name=strings["serverName"],
        cert_file=strings["certFile"],
        key_file=strings["keyFile"],
        ca_file=strings["caFile"],
        cert_data=data["certData"],
        key_data=data["keyData"],
        ca_data=data["caData"],
    )


def _timeout(obj: Mapping[str, Any], path: str) -> float:
    raw = obj.get("httpTimeout")
    if raw is None:
        return 0.0
    where = child(path, "httpTimeout")
    if not isinstance(raw, str):
        fail(where, f'invalid value {raw!r}: expected a duration string such as "5s"')
    seconds = parse_duration(raw)
    if seconds is None:
        fail(where, f'invalid value "{raw}": not a duration (e.g. "5s", "1m30s", "500ms")')
    if seconds < 0:
        fail(where, f'invalid value "{raw}": must not be negative')
    return seconds


def _managed(raw: object, path: str) -> ExtenderManagedResource:
    obj = as_mapping(raw, path)
    check_fields(obj, path, ("name", "ignoredByScheduler"))
    return ExtenderManagedResource(
        name=opt_str(obj, "name", path) or "",
        ignored_by_scheduler=bool(opt_bool(obj, "ignoredByScheduler", path)),
    )


def _extender(raw: object, path: str) -> Extender:
    obj = as_mapping(raw, path)
    check_fields(obj, path, _EXTENDER_FIELDS)
    url = opt_str(obj, "urlPrefix", path) or ""
    if not url:
        fail(child(path, "urlPrefix"), "required value")
    tls_raw = opt_mapping(obj, "tlsConfig", path)
    resources_path = child(path, "managedResources")
    return Extender(
        url_prefix=url,
        filter_verb=opt_str(obj, "filterVerb", path) or "",
        preempt_verb=opt_str(obj, "preemptVerb", path) or "",
        prioritize_verb=opt_str(obj, "prioritizeVerb", path) or "",
        bind_verb=opt_str(obj, "bindVerb", path) or "",
        weight=opt_int(obj, "weight", path, bits=64) or 0,
        enable_https=bool(opt_bool(obj, "enableHTTPS", path)),
        tls_config=None if tls_raw is None else _tls(tls_raw, child(path, "tlsConfig")),
        http_timeout=_timeout(obj, path),
        node_cache_capable=bool(opt_bool(obj, "nodeCacheCapable", path)),
        managed_resources=tuple(
            _managed(item, index(resources_path, i))
            for i, item in enumerate(opt_list(obj, "managedResources", path) or ())
        ),
        ignorable=bool(opt_bool(obj, "ignorable", path)),
    )


# --- validation (upstream validateExtenders) ----------------------------------------------


def _extended_resource_error(name: str) -> str | None:
    """upstream validateExtendedResourceName: a qualified name that is an extended
    resource (has a domain, not ``kubernetes.io/``, not ``requests.``-prefixed)."""
    problem = qualified_name_error(name)
    if problem is not None:
        return problem
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests.") or qualified_name_error("requests." + name):
        return "is an invalid extended resource name"
    return None


def _validate(extenders: Sequence[Extender], path: str) -> None:
    binders = 0
    seen: set[str] = set()
    for i, ext in enumerate(extenders):
        at = index(path, i)
        if ext.prioritize_verb and ext.weight <= 0:
            fail(
                child(at, "weight"),
                f"invalid value {ext.weight}: must have a positive weight applied to it",
            )
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            res_path = child(index(child(at, "managedResources"), j), "name")
            problem = _extended_resource_error(res.name)
            if problem is not None:
                fail(res_path, f'invalid value "{res.name}": {problem}')
            if res.name in seen:
                fail(
                    res_path,
                    f'invalid value "{res.name}": duplicate extender managed resource name',
                )
            seen.add(res.name)
    if binders > 1:
        fail(
            path,
            f'invalid value "found {binders} extenders implementing bind": '
            "only one extender can implement bind",
        )


def parse_extenders(raw: Sequence[Any] | None, path: str = "extenders") -> tuple[Extender, ...]:
    """Decode and validate the ``extenders`` list (None or empty: no extenders)."""
    extenders = tuple(_extender(item, index(path, i)) for i, item in enumerate(raw or ()))
    _validate(extenders, path)
    return extenders
