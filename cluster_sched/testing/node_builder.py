"""The node builder: ``make_node("n1").capacity(cpu="4", pods=110).zone("z1").obj()``.

Nodes get the ``kubernetes.io/hostname`` label the kubelet sets, and no capacity unless
asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from cluster_sched.api.manifest import parse_node
from cluster_sched.api.objects import NO_SCHEDULE, Node
from cluster_sched.testing.manifests import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    ObjectBuilder,
    Quantity,
    resource_map,
)


class NodeBuilder(ObjectBuilder):
    """Builds a v1 Node manifest; every method returns the builder."""

    def __init__(self, name: str) -> None:
        self._doc: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name}},
            "spec": {},
            "status": {},
        }

    def zone(self, zone: str) -> Self:
        return self.label(ZONE_LABEL, zone)

    def capacity(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        """Set capacity (``cpu=``, ``memory=``, ``pods=``, ``ephemeral_storage=``, or a
        mapping); allocatable follows it unless ``.allocatable()`` is called."""
        self._doc["status"].setdefault("capacity", {}).update(resource_map(resources, named))
        return self

    def allocatable(
        self, resources: Mapping[str, Quantity] | None = None, /, **named: Quantity
    ) -> Self:
        self._doc["status"].setdefault("allocatable", {}).update(resource_map(resources, named))
        return self

    def taint(self, key: str, value: str = "", effect: str = NO_SCHEDULE) -> Self:
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self._doc["spec"].setdefault("taints", []).append(taint)
        return self

    def unschedulable(self, flag: bool = True) -> Self:
        self._doc["spec"]["unschedulable"] = flag
        return self

    def image(self, name: str, size_bytes: int, *aliases: str) -> Self:
        self._doc["status"].setdefault("images", []).append(
            {"names": [name, *aliases], "sizeBytes": size_bytes}
        )
        return self

    def obj(self) -> Node:
        return parse_node(self.manifest(), source="<builder>")


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)
