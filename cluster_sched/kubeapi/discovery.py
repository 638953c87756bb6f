"""Discovery documents in the legacy format, and ``/version``.

Clients choose the parser from the reply's Content-Type; these are plain
``application/json`` (legacy APIVersions / APIGroupList / APIResourceList), so kubectl,
client-go and the Python clients fetch ``/api/v1`` and each ``/apis/<group>/<version>``.
Aggregated discovery is not served (never a legacy body labelled as aggregated).
"""

from __future__ import annotations

import platform
from typing import Any

from cluster_sched.kubeapi.resources import RESOURCES, group_versions

__all__ = ["api_groups", "api_resources", "api_versions", "version_info"]

#: The Kubernetes minor the scheduler follows, reported as the server's version.
GIT_VERSION = "v1.35.0"


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_groups() -> dict[str, Any]:
    groups: list[dict[str, Any]] = []
    for group, version in group_versions():
        if not group:
            continue
        gv = {"groupVersion": f"{group}/{version}", "version": version}
        groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_resources(group: str, version: str) -> dict[str, Any] | None:
    """The APIResourceList of one group-version (None if it is not served)."""
    items: list[dict[str, Any]] = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        items.append(entry)
        for sub in r.subresources:
            verbs = ["create"] if sub == "binding" else ["get", "patch", "update"]
            kind = "Binding" if sub == "binding" else r.kind
            items.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
    if not items:
        return None
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


def version_info() -> dict[str, Any]:
    major, minor = GIT_VERSION[1:].split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": GIT_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"cluster-sched (python {platform.python_version()})",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }
