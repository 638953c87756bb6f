"""Decoding a v1 Pod manifest: defaults and validation as the API server applies them.

Defaults: namespace ``default``; schedulerName ``default-scheduler``; priority 0;
preemptionPolicy PreemptLowerPriority; port protocol TCP (and hostPort = containerPort
under hostNetwork); toleration operator Equal; a container's missing requests default
to its limits. Validation rejects what the API server would and the scheduler reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_sched.api import _decode as d
from cluster_sched.api import selectors
from cluster_sched.api._claims import pod_claim_statuses, pod_resource_claims
from cluster_sched.api._volumes import pod_volumes
from cluster_sched.api.objects import (
    CPU,
    MEMORY,
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Affinity,
    Container,
    ContainerPort,
    NodeAffinity,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from cluster_sched.api.quantity import INT64_MAX, Amount, quantity_pair
from cluster_sched.api.requests import NON_ZERO_DEFAULTS, aggregate_requests, round_up
from cluster_sched.errors import InvalidObjectError, QuantityError

TAINT_EFFECTS = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})
PREEMPTION_POLICIES = frozenset({"PreemptLowerPriority", "Never"})
WHEN_UNSATISFIABLE = frozenset({"DoNotSchedule", "ScheduleAnyway"})
INCLUSION_POLICIES = frozenset({"Honor", "Ignore"})
PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})
CONTAINER_RESTART_POLICIES = frozenset({"Always", "OnFailure", "Never"})
DEFAULT_SCHEDULER_NAME = "default-scheduler"

_EMPTY: Mapping[str, Any] = {}


def _one_of(value: str, allowed: frozenset[str], field: str) -> str:
    if value not in allowed:
        raise InvalidObjectError(
            f"unsupported value {value!r} (want one of {', '.join(sorted(allowed))})", field=field
        )
    return value


# --- resources -------------------------------------------------------------------------


def resource_list(value: object, field: str) -> tuple[dict[str, int], dict[str, Amount]]:
    """A ResourceList as (canonical ints, exact amounts); negatives are rejected."""
    items = d.mapping(value, field)
    rounded: dict[str, int] = {}
    exact: dict[str, Amount] = {}
    for name, quantity in items.items():
        if type(name) is not str:
            raise d.wrong_type(name, "a resource name", field)
        try:
            as_int, amount = quantity_pair(quantity, resource=name)
        except QuantityError as err:
            raise QuantityError(err.reason, field=f"{field}.{name}") from None
        if amount < 0:
            raise InvalidObjectError(
                f"must be greater than or equal to 0, got {quantity!r}", field=f"{field}.{name}"
            )
        rounded[name] = as_int
        exact[name] = amount
    return rounded, exact


def _check_totals(totals: Mapping[str, int]) -> None:
    """Each quantity fits int64, their sum may not (upstream's PodRequests would wrap)."""
    for name, total in totals.items():
        if total > INT64_MAX:
            why = (
                f"the pod's total {name} request (containers, init containers and overhead) "
                "is beyond the int64 range the scheduler reads"
            )
            raise InvalidObjectError(why, field="spec.containers")


def _container(
    value: object, field: str, host_network: bool
) -> tuple[Container, dict[str, Amount]]:
    spec = d.mapping(value, field)
    name = d.required_string(spec.get("name"), f"{field}.name")
    resources = d.mapping(spec.get("resources"), f"{field}.resources")
    requests: dict[str, int] = {}
    exact: dict[str, Amount] = {}
    limits: dict[str, int] = {}
    if resources:
        requests, exact = resource_list(resources.get("requests"), f"{field}.resources.requests")
        raw_limits = resources.get("limits")
        if raw_limits:
            limits, exact_limits = resource_list(raw_limits, f"{field}.resources.limits")
            for res, limit in exact_limits.items():
                if res not in exact:
                    # API-server defaulting: a limit without a request is the request.
                    requests[res] = limits[res]
                    exact[res] = limit
                elif exact[res] > limit:
                    raise InvalidObjectError(
                        f"must be less than or equal to {res} limit of {str(raw_limits[res]).strip()}",
                        field=f"{field}.resources.requests.{res}",
                    )
    ports: tuple[ContainerPort, ...] = ()
    raw_ports = spec.get("ports")
    if raw_ports:
        ports = tuple(
            _port(item, f"{field}.ports[{i}]", host_network)
            for i, item in enumerate(d.seq(raw_ports, f"{field}.ports"))
        )
    restart_policy = d.string(spec.get("restartPolicy"), f"{field}.restartPolicy")
    if restart_policy:
        _one_of(restart_policy, CONTAINER_RESTART_POLICIES, f"{field}.restartPolicy")
    container = Container(
        name=name,
        image=d.string(spec.get("image"), f"{field}.image"),
        requests=requests,
        limits=limits,
        ports=ports,
        restart_policy=restart_policy,
    )
    return container, exact


def _port(value: object, field: str, host_network: bool) -> ContainerPort:
    port = d.mapping(value, field)
    container_port = d.integer(port.get("containerPort"), f"{field}.containerPort", bits=32)
    if container_port is None or not 1 <= container_port <= 65535:
        raise InvalidObjectError("must be between 1 and 65535", field=f"{field}.containerPort")
    host_port = d.integer(port.get("hostPort"), f"{field}.hostPort", 0, bits=32) or 0
    if not 0 <= host_port <= 65535:
        raise InvalidObjectError("must be between 0 and 65535", field=f"{field}.hostPort")
    if host_network and host_port == 0:
        host_port = container_port
    protocol = d.string(port.get("protocol"), f"{field}.protocol") or "TCP"
    return ContainerPort(
        container_port=container_port,
        host_port=host_port,
        protocol=_one_of(protocol, PROTOCOLS, f"{field}.protocol"),
        host_ip=d.string(port.get("hostIP"), f"{field}.hostIP"),
    )


# --- tolerations, gates ------------------------------------------------------------------


def _toleration(value: object, field: str) -> Toleration:
    tol = d.mapping(value, field)
    key = d.string(tol.get("key"), f"{field}.key")
    operator = d.string(tol.get("operator"), f"{field}.operator") or "Equal"
    tol_value = d.string(tol.get("value"), f"{field}.value")
    effect = d.string(tol.get("effect"), f"{field}.effect")
    seconds = d.integer(tol.get("tolerationSeconds"), f"{field}.tolerationSeconds")
    if key:
        selectors.validate_label_key(key, f"{field}.key")
    elif operator != "Exists":
        raise InvalidObjectError(
            "operator must be Exists when key is empty (which matches all keys and values)",
            field=f"{field}.operator",
        )
    if operator == "Equal":
        selectors.validate_label_value(tol_value, f"{field}.value")
    elif operator == "Exists":
        if tol_value:
            raise InvalidObjectError(
                "value must be empty when operator is 'Exists'", field=f"{field}.value"
            )
    else:
        raise InvalidObjectError(
            f"unsupported operator {operator!r} (want Equal or Exists)", field=f"{field}.operator"
        )
    if effect:
        _one_of(effect, TAINT_EFFECTS, f"{field}.effect")
    if seconds is not None and effect != NO_EXECUTE:
        raise InvalidObjectError(
            "effect must be 'NoExecute' when tolerationSeconds is set", field=f"{field}.effect"
        )
    return Toleration(
        key=key, operator=operator, value=tol_value, effect=effect, toleration_seconds=seconds
    )


def _scheduling_gates(value: object, field: str) -> tuple[str, ...]:
    names: list[str] = []
    for i, item in enumerate(d.seq(value, field)):
        gate = d.mapping(item, f"{field}[{i}]")
        name = d.required_string(gate.get("name"), f"{field}[{i}].name")
        selectors.validate_label_key(name, f"{field}[{i}].name")
        if name in names:
            raise InvalidObjectError(
                f"duplicate scheduling gate {name!r}", field=f"{field}[{i}].name"
            )
        names.append(name)
    return tuple(names)


# --- affinity --------------------------------------------------------------------------


def _weight(value: object, field: str) -> int:
    weight = d.integer(value, field, bits=32)
    if weight is None or not 1 <= weight <= 100:
        raise InvalidObjectError(f"must be in the range 1-100, got {weight}", field=field)
    return weight


def _label_keys(value: object, field: str) -> tuple[str, ...]:
    keys = d.string_list(value, field)
    for i, key in enumerate(keys):
        selectors.validate_label_key(key, f"{field}[{i}]")
    return keys


def _pod_affinity_term(value: object, field: str) -> PodAffinityTerm:
    term = d.mapping(value, field)
    topology_key = d.string(term.get("topologyKey"), f"{field}.topologyKey")
    if not topology_key:
        raise InvalidObjectError("can not be empty", field=f"{field}.topologyKey")
    selectors.validate_label_key(topology_key, f"{field}.topologyKey")
    namespaces = d.string_list(term.get("namespaces"), f"{field}.namespaces")
    for i, namespace in enumerate(namespaces):
        selectors.validate_dns_label(namespace, f"{field}.namespaces[{i}]")
    return PodAffinityTerm(
        label_selector=d.label_selector(term.get("labelSelector"), f"{field}.labelSelector"),
        topology_key=topology_key,
        namespaces=namespaces,
        namespace_selector=d.label_selector(
            term.get("namespaceSelector"), f"{field}.namespaceSelector"
        ),
        match_label_keys=_label_keys(term.get("matchLabelKeys"), f"{field}.matchLabelKeys"),
        mismatch_label_keys=_label_keys(
            term.get("mismatchLabelKeys"), f"{field}.mismatchLabelKeys"
        ),
    )


def _pod_affinity(value: object, field: str) -> PodAffinity | None:
    if value is None:
        return None
    aff = d.mapping(value, field)
    req_path = f"{field}.requiredDuringSchedulingIgnoredDuringExecution"
    pref_path = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_affinity_term(item, f"{req_path}[{i}]")
        for i, item in enumerate(
            d.seq(aff.get("requiredDuringSchedulingIgnoredDuringExecution"), req_path)
        )
    )
    preferred = []
    for i, item in enumerate(
        d.seq(aff.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)
    ):
        weighted = d.mapping(item, f"{pref_path}[{i}]")
        preferred.append(
            WeightedPodAffinityTerm(
                weight=_weight(weighted.get("weight"), f"{pref_path}[{i}].weight"),
                term=_pod_affinity_term(
                    weighted.get("podAffinityTerm"), f"{pref_path}[{i}].podAffinityTerm"
                ),
            )
        )
    return PodAffinity(required=required, preferred=tuple(preferred))


def _node_affinity(value: object, field: str) -> NodeAffinity | None:
    if value is None:
        return None
    aff = d.mapping(value, field)
    pref_path = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, item in enumerate(
        d.seq(aff.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)
    ):
        term = d.mapping(item, f"{pref_path}[{i}]")
        preferred.append(
            PreferredSchedulingTerm(
                weight=_weight(term.get("weight"), f"{pref_path}[{i}].weight"),
                preference=d.node_selector_term(
                    term.get("preference"), f"{pref_path}[{i}].preference"
                ),
            )
        )
    return NodeAffinity(
        required=d.node_selector(
            aff.get("requiredDuringSchedulingIgnoredDuringExecution"),
            f"{field}.requiredDuringSchedulingIgnoredDuringExecution",
        ),
        preferred=tuple(preferred),
    )


def _affinity(value: object) -> Affinity | None:
    aff = d.mapping(value, "spec.affinity")
    if not aff:
        return None
    return Affinity(
        node_affinity=_node_affinity(aff.get("nodeAffinity"), "spec.affinity.nodeAffinity"),
        pod_affinity=_pod_affinity(aff.get("podAffinity"), "spec.affinity.podAffinity"),
        pod_anti_affinity=_pod_affinity(
            aff.get("podAntiAffinity"), "spec.affinity.podAntiAffinity"
        ),
    )


# --- topology spread -----------------------------------------------------------------------


def _spread_constraint(value: object, field: str) -> TopologySpreadConstraint:
    spec = d.mapping(value, field)
    max_skew = d.integer(spec.get("maxSkew"), f"{field}.maxSkew", bits=32)
    if max_skew is None or max_skew < 1:
        raise InvalidObjectError(
            f"must be greater than zero, got {max_skew}", field=f"{field}.maxSkew"
        )
    topology_key = d.string(spec.get("topologyKey"), f"{field}.topologyKey")
    if not topology_key:
        raise InvalidObjectError("can not be empty", field=f"{field}.topologyKey")
    selectors.validate_label_key(topology_key, f"{field}.topologyKey")
    when = d.string(spec.get("whenUnsatisfiable"), f"{field}.whenUnsatisfiable")
    _one_of(when, WHEN_UNSATISFIABLE, f"{field}.whenUnsatisfiable")
    min_domains = d.integer(spec.get("minDomains"), f"{field}.minDomains", bits=32)
    if min_domains is not None:
        if min_domains < 1:
            raise InvalidObjectError(
                f"must be greater than zero, got {min_domains}", field=f"{field}.minDomains"
            )
        if when != "DoNotSchedule":
            raise InvalidObjectError(
                "can only be set when whenUnsatisfiable is DoNotSchedule",
                field=f"{field}.minDomains",
            )
    affinity_policy = (
        d.string(spec.get("nodeAffinityPolicy"), f"{field}.nodeAffinityPolicy") or "Honor"
    )
    taints_policy = d.string(spec.get("nodeTaintsPolicy"), f"{field}.nodeTaintsPolicy") or "Ignore"
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=topology_key,
        when_unsatisfiable=when,
        label_selector=d.label_selector(spec.get("labelSelector"), f"{field}.labelSelector"),
        min_domains=min_domains,
        node_affinity_policy=_one_of(
            affinity_policy, INCLUSION_POLICIES, f"{field}.nodeAffinityPolicy"
        ),
        node_taints_policy=_one_of(taints_policy, INCLUSION_POLICIES, f"{field}.nodeTaintsPolicy"),
        match_label_keys=_label_keys(spec.get("matchLabelKeys"), f"{field}.matchLabelKeys"),
    )


def _spread_constraints(value: object, field: str) -> tuple[TopologySpreadConstraint, ...]:
    constraints: list[TopologySpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(d.seq(value, field)):
        constraint = _spread_constraint(item, f"{field}[{i}]")
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in seen:
            raise InvalidObjectError(
                f"duplicate constraint for topologyKey {pair[0]!r} and whenUnsatisfiable {pair[1]!r}",
                field=f"{field}[{i}]",
            )
        seen.add(pair)
        constraints.append(constraint)
    return tuple(constraints)


# --- the pod -----------------------------------------------------------------------------


#: Parsed pod specs by value: replicas of one template share their spec byte for byte,
#: so a workload of 100k pods has few distinct specs, and each is parsed once instead of
#: once per pod (most of a pod's parse time; ParseCache says why sharing is safe).
_SPECS = d.ParseCache[dict[str, Any]](4096)


def _parse_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The Pod fields that depend on spec alone."""
    host_network = d.boolean(spec.get("hostNetwork"), "spec.hostNetwork")

    raw_containers = d.seq(spec.get("containers"), "spec.containers")
    if not raw_containers:
        raise InvalidObjectError("a pod needs at least one container", field="spec.containers")
    containers: list[Container] = []
    exact: list[dict[str, Amount]] = []
    for i, item in enumerate(raw_containers):
        container, amounts = _container(item, f"spec.containers[{i}]", host_network)
        containers.append(container)
        exact.append(amounts)
    init_containers: list[Container] = []
    init_exact: list[tuple[dict[str, Amount], bool]] = []
    raw_init = spec.get("initContainers")
    if raw_init:
        for i, item in enumerate(d.seq(raw_init, "spec.initContainers")):
            container, amounts = _container(item, f"spec.initContainers[{i}]", host_network)
            init_containers.append(container)
            init_exact.append((amounts, container.restart_policy == "Always"))
    overhead: dict[str, int] = {}
    overhead_exact: dict[str, Amount] = {}
    if spec.get("overhead"):
        overhead, overhead_exact = resource_list(spec["overhead"], "spec.overhead")

    total = aggregate_requests(exact, init_exact, overhead_exact)
    requests = {name: round_up(amount) for name, amount in total.items()}
    if all(CPU in a and MEMORY in a for a in exact) and all(
        CPU in a and MEMORY in a for a, _ in init_exact
    ):
        nonzero_cpu, nonzero_memory = requests[CPU], requests[MEMORY]  # no defaults apply
    else:
        nonzero = aggregate_requests(
            exact, init_exact, overhead_exact, non_missing=NON_ZERO_DEFAULTS
        )
        nonzero_cpu, nonzero_memory = round_up(nonzero[CPU]), round_up(nonzero[MEMORY])
    _check_totals(
        {
            **requests,
            CPU: max(requests.get(CPU, 0), nonzero_cpu),
            MEMORY: max(requests.get(MEMORY, 0), nonzero_memory),
        }
    )

    preemption_policy = (
        d.string(spec.get("preemptionPolicy"), "spec.preemptionPolicy") or "PreemptLowerPriority"
    )
    raw_selector = spec.get("nodeSelector")
    raw_tolerations = spec.get("tolerations")
    raw_spread = spec.get("topologySpreadConstraints")
    raw_gates = spec.get("schedulingGates")
    raw_volumes, raw_claims = spec.get("volumes"), spec.get("resourceClaims")
    return {
        "containers": tuple(containers),
        "init_containers": tuple(init_containers),
        "overhead": overhead,
        "node_name": d.string(spec.get("nodeName"), "spec.nodeName"),
        "scheduler_name": d.string(spec.get("schedulerName"), "spec.schedulerName")
        or DEFAULT_SCHEDULER_NAME,
        "priority": d.integer(spec.get("priority"), "spec.priority", 0, bits=32) or 0,
        "priority_class_name": d.string(spec.get("priorityClassName"), "spec.priorityClassName"),
        "preemption_policy": _one_of(
            preemption_policy, PREEMPTION_POLICIES, "spec.preemptionPolicy"
        ),
        "node_selector": d.label_map(raw_selector, "spec.nodeSelector") if raw_selector else {},
        "affinity": _affinity(spec.get("affinity")),
        "tolerations": tuple(
            _toleration(item, f"spec.tolerations[{i}]")
            for i, item in enumerate(d.seq(raw_tolerations, "spec.tolerations"))
        )
        if raw_tolerations
        else (),
        "topology_spread_constraints": _spread_constraints(
            raw_spread, "spec.topologySpreadConstraints"
        )
        if raw_spread
        else (),
        "scheduling_gates": _scheduling_gates(raw_gates, "spec.schedulingGates")
        if raw_gates
        else (),
        "volumes": pod_volumes(raw_volumes, "spec.volumes") if raw_volumes else (),
        "resource_claims": pod_resource_claims(raw_claims, "spec.resourceClaims"),
        "requests": requests,
        "nonzero_cpu": nonzero_cpu,
        "nonzero_memory": nonzero_memory,
    }


def _spec_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``_parse_spec`` by cache, keyed without nodeName: bound replicas share one parse."""
    node = spec.get("nodeName")
    if not node or type(node) is not str:
        return _SPECS.get_or_parse(spec, _parse_spec)
    unbound = {k: v for k, v in spec.items() if k != "nodeName"}
    return {**_SPECS.get_or_parse(unbound, _parse_spec), "node_name": node}


def decode_pod(doc: Mapping[str, Any]) -> Pod:
    """A v1 Pod dict to a Pod; raises InvalidObjectError naming only the field."""
    meta = d.object_meta(doc, namespaced=True)
    spec = d.mapping(doc.get("spec"), "spec")
    status = d.mapping(doc.get("status"), "status")
    return Pod(
        meta=meta,
        **_spec_fields(spec),
        nominated_node_name=d.string(status.get("nominatedNodeName"), "status.nominatedNodeName"),
        phase=d.string(status.get("phase"), "status.phase") or "Pending",
        start_time=d.timestamp(status.get("startTime"), "status.startTime"),
        resource_claim_statuses=pod_claim_statuses(status),
        raw=doc,
    )
