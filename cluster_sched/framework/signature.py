"""Pod signatures for OpportunisticBatching (upstream SignPod, KEP-5598).

Two pods with the same signature get the same Filter and Score answers on every node in
the same cluster state. A profile signs pods only if every PreFilter, Filter, PreScore and
Score plugin can (upstream computeBatchablePlugins); each contributes fragments, or
declares the pod unsignable (None), which turns the optimisation off for that pod.

A plugin signs through its own ``sign_pod(pod) -> Sequence[tuple[str, object]] | None``
when it has one (out-of-tree plugins); the in-tree plugins' signers are the functions
below, keyed by plugin name, mirroring upstream's SignPod of each plugin:

- resources (NodeResourcesFit, BalancedAllocation): the effective requests;
- NodeAffinity: nodeSelector and node affinity; NodeName: spec.nodeName;
- NodePorts: host ports; TaintToleration, NodeUnschedulable: tolerations;
- ImageLocality: container images;
- volume plugins: the pod's volumes (configMap/secret-like ones excluded); pods with
  PersistentVolumeClaims or ephemeral volumes are unsignable here (their fit depends on
  claim binding state that the pod's own placement changes);
- PodTopologySpread: unsignable with constraints, or when default constraints apply
  (System defaulting or listed ones), as upstream;
- InterPodAffinity: unsignable with pod (anti-)affinity; else namespace and labels
  (existing pods' terms select on them);
- DynamicResources: unsignable with resource claims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cluster_sched.api.objects import EPHEMERAL_VOLUME, OTHER_VOLUME, PVC_VOLUME, Pod
from cluster_sched.plugins import names

__all__ = ["PodSignature", "Signer", "profile_signers", "sign_pod", "signature_follows_shape"]

#: A pod's signature: comparable and hashable; None means unsignable.
PodSignature = tuple[tuple[str, str], ...]
#: (plugin instance, pod) -> fragments, or None when the plugin cannot sign the pod
Signer = Callable[[Any, Pod], Sequence[tuple[str, object]] | None]


def _resources(_pl: Any, pod: Pod) -> list[tuple[str, object]]:
    reqs = tuple(sorted(pod.requests.items()))
    return [("Resources", (reqs, pod.nonzero_cpu, pod.nonzero_memory))]


def _node_affinity(_pl: Any, pod: Pod) -> list[tuple[str, object]]:
    node_affinity = pod.affinity.node_affinity if pod.affinity is not None else None
    return [("NodeAffinity", (tuple(sorted(pod.node_selector.items())), node_affinity))]


def _node_name(_pl: Any, pod: Pod) -> list[tuple[str, object]]:
    return [("NodeName", pod.node_name)]


def _host_ports(_pl: Any, pod: Pod) -> list[tuple[str, object]]:
    ports = tuple(p for c in pod.containers for p in c.ports if p.host_port)
    return [("HostPorts", ports)]


def _tolerations(_pl: Any, pod: Pod) -> list[tuple[str, object]]:
    return [("Tolerations", pod.tolerations)]


def _images(_pl: Any, pod: Pod) -> list[tuple[str, object]]:
    return [("Images", tuple(c.image for c in (*pod.init_containers, *pod.containers)))]


def _volumes(_pl: Any, pod: Pod) -> list[tuple[str, object]] | None:
    if any(v.source in (PVC_VOLUME, EPHEMERAL_VOLUME) for v in pod.volumes):
        return None
    return [("Volumes", tuple(v for v in pod.volumes if v.source != OTHER_VOLUME))]


def _topology_spread(pl: Any, pod: Pod) -> list[tuple[str, object]] | None:
    if pod.topology_spread_constraints:
        return None
    if getattr(pl, "system_defaulted", False) or getattr(pl, "default_constraints", ()):
        return None
    return []


def _inter_pod_affinity(_pl: Any, pod: Pod) -> list[tuple[str, object]] | None:
    a = pod.affinity
    if a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None):
        return None
    return [("Labels", (pod.namespace, tuple(sorted(pod.labels.items()))))]


def _dynamic_resources(_pl: Any, pod: Pod) -> list[tuple[str, object]] | None:
    spec = (pod.raw or {}).get("spec") or {}
    return None if spec.get("resourceClaims") else []


IN_TREE_SIGNERS: dict[str, Signer] = {
    names.NODE_RESOURCES_FIT: _resources,
    names.NODE_RESOURCES_BALANCED_ALLOCATION: _resources,
    names.NODE_AFFINITY: _node_affinity,
    names.NODE_NAME: _node_name,
    names.NODE_PORTS: _host_ports,
    names.TAINT_TOLERATION: _tolerations,
    names.NODE_UNSCHEDULABLE: _tolerations,
    names.IMAGE_LOCALITY: _images,
    names.VOLUME_BINDING: _volumes,
    names.VOLUME_RESTRICTIONS: _volumes,
    names.VOLUME_ZONE: _volumes,
    names.NODE_VOLUME_LIMITS: _volumes,
    names.POD_TOPOLOGY_SPREAD: _topology_spread,
    names.INTER_POD_AFFINITY: _inter_pod_affinity,
    names.DYNAMIC_RESOURCES: _dynamic_resources,
}


def _own_signer(pl: Any) -> Signer:
    def sign(_pl: Any, pod: Pod) -> Sequence[tuple[str, object]] | None:
        return pl.sign_pod(pod)  # type: ignore[no-any-return]

    return sign


def profile_signers(fwk: Any) -> list[tuple[Any, Signer]] | None:
    """The signers of a profile's PreFilter/Filter/PreScore/Score plugins, each plugin
    once; None when one of them cannot sign (signatures are off for the profile)."""
    if hasattr(fwk, "_pod_signers"):
        cached: list[tuple[Any, Signer]] | None = fwk._pod_signers
        return cached
    out: list[tuple[Any, Signer]] | None = []
    seen: set[str] = set()
    for pl in (*fwk.pre_filter, *fwk.filter, *fwk.pre_score, *fwk.score):
        if pl.name in seen:
            continue
        seen.add(pl.name)
        if callable(getattr(pl, "sign_pod", None)):
            signer = _own_signer(pl)
        elif pl.name in IN_TREE_SIGNERS:
            signer = IN_TREE_SIGNERS[pl.name]
        else:
            out = None
            break
        assert out is not None
        out.append((pl, signer))
    if out is not None:
        # The signature is sorted by key, so the order is free: the signers that often
        # refuse (spread, affinity, volumes, claims) first, so an unsignable pod costs
        # one or two calls.
        out.sort(key=lambda entry: entry[0].name not in _OFTEN_UNSIGNABLE)
    fwk._pod_signers = out
    return out


_OFTEN_UNSIGNABLE = frozenset(
    {
        names.POD_TOPOLOGY_SPREAD,
        names.INTER_POD_AFFINITY,
        names.VOLUME_BINDING,
        names.DYNAMIC_RESOURCES,
    }
)


def sign_pod(fwk: Any, pod: Pod) -> PodSignature | None:
    """upstream SignPod: the scheduler name plus every plugin's fragments, or None."""
    signers = profile_signers(fwk)
    if signers is None:
        return None
    parts: dict[str, str] = {"SchedulerName": pod.scheduler_name}
    for pl, signer in signers:
        fragments = signer(pl, pod)
        if fragments is None:
            return None
        for key, value in fragments:
            parts[key] = repr(value)
    return tuple(sorted(parts.items()))


_IN_TREE = frozenset(map(id, IN_TREE_SIGNERS.values()))


def signature_follows_shape(fwk: Any) -> bool:
    """Whether pods of one shape (``scheduler.pre_cycle.shape_refs``: the same parsed
    spec objects, plus namespace, labels, requests, volumes and resource claims) always
    sign alike in this profile: every signer is an in-tree one, which reads nothing
    else. Out-of-tree signers may read anything of the pod."""
    signers = profile_signers(fwk)
    return signers is not None and all(id(signer) in _IN_TREE for _pl, signer in signers)
