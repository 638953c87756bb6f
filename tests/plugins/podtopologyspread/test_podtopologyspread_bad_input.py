"""Malformed spread constraints and affinity terms never reach the plugins: the
manifest parser rejects them, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_sched.api.manifest import parse_pod
from cluster_sched.errors import InvalidObjectError
from cluster_sched.testing.builders import make_pod

GOOD_CONSTRAINT = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
}


def _with_constraint(**override: Any) -> dict[str, Any]:
    doc = make_pod("p").manifest()
    doc["spec"]["topologySpreadConstraints"] = [{**GOOD_CONSTRAINT, **override}]
    return doc


def _with_term(term: dict[str, Any]) -> dict[str, Any]:
    doc = make_pod("p").manifest()
    doc["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    return doc


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (_with_constraint(maxSkew=-1), "maxSkew"),
        (_with_constraint(maxSkew=0), "maxSkew"),
        (_with_constraint(topologyKey="not a key!"), "topologyKey"),
        (_with_constraint(topologyKey=""), "topologyKey"),
        (_with_constraint(whenUnsatisfiable="Sometimes"), "whenUnsatisfiable"),
        (_with_constraint(minDomains=0), "minDomains"),
        (_with_constraint(nodeTaintsPolicy="Maybe"), "nodeTaintsPolicy"),
        (_with_term({"topologyKey": "bad key!", "labelSelector": {}}), "topologyKey"),
        (_with_term({"labelSelector": {}}), "topologyKey"),
        (
            _with_term(
                {
                    "topologyKey": "zone",
                    "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]},
                }
            ),
            "operator",
        ),
        (
            _with_term(
                {
                    "topologyKey": "zone",
                    "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
                }
            ),
            "values",
        ),
    ],
    ids=[
        "negative-max-skew",
        "zero-max-skew",
        "invalid-topology-key",
        "empty-topology-key",
        "bad-when-unsatisfiable",
        "zero-min-domains",
        "bad-taints-policy",
        "term-invalid-topology-key",
        "term-missing-topology-key",
        "term-bad-operator",
        "term-in-without-values",
    ],
)
def test_rejected_at_parse_time(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObjectError, match=field):
        parse_pod(doc, source="<test>")
