"""Manifest pieces shared by the test builders: well-known labels, quantities, selector
and affinity-term dicts, and the metadata methods every object builder has.

Builders write manifest dicts (parsed by ``api.manifest``), so these helpers return dicts
in the API's camelCase shape, not typed objects.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from typing import Any, Self

#: Well-known topology labels.
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"

Quantity = str | int | float


def rfc3339(seconds: float) -> str:
    """Epoch seconds to the RFC 3339 string a manifest carries."""
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return moment.isoformat().replace("+00:00", "Z")


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    """One selector requirement: ``expr("zone", "In", "a", "b")``."""
    req: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        req["values"] = list(values)
    return req


def resource_map(
    resources: Mapping[str, Quantity] | None, named: Mapping[str, Quantity | None]
) -> dict[str, Quantity]:
    """Merge a plain mapping with keyword resources (``ephemeral_storage`` → ``ephemeral-storage``)."""
    out: dict[str, Quantity] = dict(resources or {})
    for name, value in named.items():
        if value is not None:
            out[name.replace("_", "-")] = value
    return out


def selector_dict(
    match_labels: Mapping[str, str] | None, expressions: list[dict[str, Any]] | None
) -> dict[str, Any]:
    sel: dict[str, Any] = {}
    if match_labels:
        sel["matchLabels"] = dict(match_labels)
    if expressions:
        sel["matchExpressions"] = list(expressions)
    return sel


def pod_term(
    topology_key: str,
    match_labels: Mapping[str, str] | None = None,
    *,
    expressions: list[dict[str, Any]] | None = None,
    namespaces: list[str] | None = None,
    namespace_selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A PodAffinityTerm manifest dict."""
    term: dict[str, Any] = {
        "topologyKey": topology_key,
        "labelSelector": selector_dict(match_labels, expressions),
    }
    if namespaces:
        term["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        term["namespaceSelector"] = selector_dict(namespace_selector, None)
    return term


class ObjectBuilder:
    """Metadata helpers shared by the pod and node builders."""

    _doc: dict[str, Any]

    @property
    def _meta(self) -> dict[str, Any]:
        return self._doc["metadata"]  # type: ignore[no-any-return]

    def label(self, key: str, value: str) -> Self:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> Self:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def created(self, seconds: float) -> Self:
        self._meta["creationTimestamp"] = rfc3339(seconds)
        return self

    def manifest(self) -> dict[str, Any]:
        """A fresh deep copy of the manifest (the builder stays usable)."""
        return copy.deepcopy(self._doc)
