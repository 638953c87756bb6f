"""What every workload controller shares: owner references, generated names, the
pod-template hash, and a pod built from a template (upstream GetPodFromTemplate).

Names are deterministic for a given seed: each controller draws its suffixes from its
own ``random.Random`` seeded with ``seed`` and the controller's identity, so adding an
object elsewhere in the snapshot does not rename another controller's pods.
"""

from __future__ import annotations

import copy
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_sched.api import _decode as d
from cluster_sched.api.objects import TERMINAL_POD_PHASES
from cluster_sched.errors import InvalidObjectError

#: upstream utilrand's alphabet: no vowels, so generated names spell no words.
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
#: generateName: a random suffix of this many characters (apiserver's randomLength).
RANDOM_LENGTH = 5
#: generateName bases are cut to this length so the name fits 63 characters.
MAX_GENERATED_NAME_BASE = 63 - RANDOM_LENGTH
#: Deployment → ReplicaSet → Pod label carrying the template hash.
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
#: StatefulSet and DaemonSet pods: the ControllerRevision they were built from.
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"


def safe_encode_string(text: str) -> str:
    """upstream rand.SafeEncodeString: each character to one of ``ALPHANUMS``."""
    return "".join(ALPHANUMS[ord(ch) % len(ALPHANUMS)] for ch in text)


def fnv32a(data: bytes) -> int:
    """32-bit FNV-1a (Go's hash/fnv New32a)."""
    h = 0x811C9DC5
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def compute_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """upstream controller.ComputeHash: fnv32a of the template, then the collision count
    (8 little-endian bytes) when set, printed in decimal and SafeEncodeString'd.

    Upstream hashes Go's spew dump of the typed PodTemplateSpec; here the bytes are the
    template's canonical JSON (sorted keys), so the value has upstream's form but not
    its digits. A snapshot's existing ReplicaSets keep the hash they carry.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":"), default=str).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(8, "little")
    return safe_encode_string(str(fnv32a(data)))


def generated_name(base: str, rng: random.Random, taken: set[str]) -> str:
    """apiserver's generateName: ``base`` (cut to fit) plus five random characters,
    drawn again on a clash with a name already in the namespace (the controller retries
    AlreadyExists the same way). The name is added to ``taken``."""
    base = base[:MAX_GENERATED_NAME_BASE]
    while True:
        name = base + "".join(rng.choice(ALPHANUMS) for _ in range(RANDOM_LENGTH))
        if name not in taken:
            taken.add(name)
            return name


def controller_rng(seed: int, kind: str, namespace: str, name: str) -> random.Random:
    return random.Random(f"{seed}/{kind}/{namespace}/{name}")


def meta(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    value = doc.get("metadata")
    return value if isinstance(value, dict) else {}


def spec(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    return d.mapping(doc.get("spec"), "spec")


def namespace_of(doc: Mapping[str, Any]) -> str:
    return str(meta(doc).get("namespace") or "default")


def name_of(doc: Mapping[str, Any]) -> str:
    return str(meta(doc).get("name") or "")


def replicas(doc: Mapping[str, Any], default: int = 1) -> int:
    value = d.integer(spec(doc).get("replicas"), "spec.replicas", default, bits=32)
    assert value is not None
    if value < 0:
        raise InvalidObjectError(
            f"must be greater than or equal to 0, got {value}", field="spec.replicas"
        )
    return value


def template_of(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    return d.mapping(spec(doc).get("template"), "spec.template")


def owner_reference(doc: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """metav1.NewControllerRef of ``doc``."""
    ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name_of(doc)}
    uid = meta(doc).get("uid")
    if uid:
        ref["uid"] = uid
    ref.update(controller=True, blockOwnerDeletion=True)
    return ref


def controller_ref(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """upstream metav1.GetControllerOf: the owner reference with ``controller: true``."""
    for ref in meta(doc).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def is_terminal(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status")
    return isinstance(status, dict) and status.get("phase") in TERMINAL_POD_PHASES


def is_active(pod: Mapping[str, Any]) -> bool:
    """upstream controller.IsPodActive: not Succeeded/Failed and not being deleted."""
    return not is_terminal(pod) and meta(pod).get("deletionTimestamp") is None


@dataclass(slots=True)
class Ownership:
    """The snapshot's objects by controlling owner, and every name taken per namespace.

    Only ``ownerReferences`` count (a controller's pods are the ones it owns), as the
    controllers see them once they have adopted their pods."""

    #: (namespace, owner kind, owner name) → owned objects, in file order
    owned: dict[tuple[str, str, str], list[Mapping[str, Any]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    #: (kind, namespace) → names in use (pods, PVCs, ReplicaSets)
    taken: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    #: uid of each owner's current object, when the snapshot has one
    uids: dict[tuple[str, str, str], str] = field(default_factory=dict)

    @classmethod
    def index(cls, docs: Iterable[Mapping[str, Any]]) -> Ownership:
        out = cls()
        for doc in docs:
            kind, ns, name = str(doc.get("kind")), namespace_of(doc), name_of(doc)
            out.taken[(kind, ns)].add(name)
            uid = meta(doc).get("uid")
            if uid:
                out.uids[(ns, kind, name)] = str(uid)
            ref = controller_ref(doc)
            if ref is not None:
                out.owned[(ns, str(ref.get("kind")), str(ref.get("name")))].append(doc)
        return out

    def of(self, kind: str, owner: Mapping[str, Any], what: str) -> list[Mapping[str, Any]]:
        """Objects of kind ``what`` that ``owner`` (a ``kind``) controls. A reference
        naming another uid belongs to an earlier object of the same name: not counted."""
        ns, name = namespace_of(owner), name_of(owner)
        uid = meta(owner).get("uid")
        out = []
        for doc in self.owned.get((ns, kind, name), ()):
            if doc.get("kind") != what:
                continue
            ref = controller_ref(doc)
            ref_uid = ref.get("uid") if ref is not None else None
            if uid and ref_uid and ref_uid != uid:
                continue
            out.append(doc)
        return out


def pod_from_template(
    template: Mapping[str, Any],
    namespace: str,
    name: str,
    owner: Mapping[str, Any],
    *,
    extra_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """upstream GetPodFromTemplate: the template's labels, annotations and finalizers,
    the owner's namespace, a controller reference and a copy of the template's spec."""
    tmeta = d.mapping(template.get("metadata"), "spec.template.metadata")
    pod_meta: dict[str, Any] = {"name": name, "namespace": namespace}
    labels = {**(tmeta.get("labels") or {}), **(extra_labels or {})}
    if labels:
        pod_meta["labels"] = labels
    for key in ("annotations", "finalizers"):
        if tmeta.get(key):
            pod_meta[key] = copy.deepcopy(tmeta[key])
    pod_meta["ownerReferences"] = [dict(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": copy.deepcopy(dict(template.get("spec") or {})),
    }


def scaled_int_or_percent(value: object, total: int, round_up: bool, field: str) -> int:
    """upstream intstr.GetScaledValueFromIntOrPercent."""
    if type(value) is int:
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        percent = int(value[:-1])
        scaled = total * percent
        return -(-scaled // 100) if round_up else scaled // 100
    raise d.wrong_type(value, "an integer or a percentage (like 25%)", field)


@dataclass(slots=True)
class Expansion:
    """What the controllers create for a snapshot, in creation order."""

    #: new Pod manifests
    pods: list[dict[str, Any]] = field(default_factory=list)
    #: new objects other than pods: a Deployment's ReplicaSet, a StatefulSet's claims
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: ``Kind namespace/name`` → pods it created
    created: dict[str, int] = field(default_factory=dict)
    #: one line per controller that could not do its part (no pod template)
    warnings: list[str] = field(default_factory=list)

    def add_pods(self, label: str, pods: list[dict[str, Any]]) -> None:
        self.pods.extend(pods)
        if pods:
            self.created[label] = self.created.get(label, 0) + len(pods)
