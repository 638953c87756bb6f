"""API errors as the API server reports them: a ``Status`` object with reason and code.

Every failure a handler meets is raised as ``ApiError``; the server turns it into one
Status reply (or, on a watch, one ERROR event), so a bad body never reaches the store.
Reasons and messages follow apimachinery's ``api/errors`` (NotFound, AlreadyExists,
Conflict, Invalid, BadRequest, MethodNotAllowed, Expired, UnsupportedMediaType, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ApiError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "fenced",
    "invalid",
    "method_not_allowed",
    "not_found",
    "status_object",
]


@dataclass
class ApiError(Exception):
    """One failed request: HTTP ``code``, Status ``reason`` and a one-line ``message``."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.reason, self.message, self.details)


def status_object(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``meta/v1`` Status (Failure unless ``code`` is 2xx)."""
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if 200 <= code < 300 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        out["details"] = details
    return out


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": plural}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    return out


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(group, plural)} "{name}" not found',
        _details(group, plural, name),
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}',
        _details(group, plural, name),
    )


def invalid(kind: str, name: str, why: str, field_path: str = "") -> ApiError:
    cause = {"reason": "FieldValueInvalid", "message": why}
    if field_path:
        cause["field"] = field_path
    return ApiError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {f"{field_path}: " if field_path else ""}{why}',
        {"name": name, "kind": kind, "causes": [cause]},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def fenced(why: str) -> ApiError:
    """A write the store's fencing check refused (``store/fence.py``): this server's
    store writes with the token of a lease another process now holds, so the script
    wrote nothing. 503: this server cannot take writes; the current leader's can."""
    detail = why[why.find("FENCED") :] if "FENCED" in why else why
    return ApiError(
        503,
        "ServiceUnavailable",
        f"write refused by fencing, nothing was written: {detail} "
        "(another coordinator holds the lease; write through its API)",
        {"causes": [{"reason": "Fenced", "message": detail}]},
    )
