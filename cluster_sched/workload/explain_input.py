"""Which pod ``explain`` explains: ``--pod FILE`` (one Pod manifest) or ``--pod NS/NAME``
(a pending pod of the ``--cluster`` snapshot, controller-created pods included)."""

from __future__ import annotations

import os
import re

from cluster_sched.api.manifest import load_file, parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.snapshot import Snapshot

__all__ = ["pending_pod", "pod_reference"]

#: NAMESPACE/NAME: a DNS label, a slash, a DNS subdomain.
_POD_REF = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$")


#: A value ending so names a manifest file, even when it does not exist.
_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def pod_reference(value: str) -> str | None:
    """``value`` as a ``namespace/name`` key when it is one and no file has that path
    (nor looks like one: ``dir/pod.yaml`` stays a file that is missing)."""
    if os.path.exists(value) or value.endswith(_FILE_SUFFIXES) or not _POD_REF.match(value):
        return None
    return value


def pending_pod(value: str, snapshot: Snapshot, cluster: str) -> Pod:
    """The pod to explain. A file must hold exactly one Pod; a ``namespace/name`` must
    name a pod of the snapshot that waits for a node (not bound, not terminal)."""
    key = pod_reference(value)
    if key is None:
        pods = [o for o in load_file(value) if isinstance(o, Pod)]
        if len(pods) != 1:
            raise InvalidObjectError(f"expected exactly one Pod, found {len(pods)}", source=value)
        return pods[0]
    if key in snapshot.terminal:
        raise InvalidObjectError(
            f"pod {key} is not pending: it has finished (Succeeded or Failed)", source=cluster
        )
    for doc in snapshot.pod_docs:
        meta = doc.get("metadata") or {}
        if f"{meta.get('namespace') or 'default'}/{meta.get('name')}" != key:
            continue
        pod = parse_pod(doc, cluster)
        if pod.node_name:
            raise InvalidObjectError(
                f"pod {key} is not pending: it is bound to node {pod.node_name}", source=cluster
            )
        return pod
    raise InvalidObjectError(f"no pod {key} in the snapshot", source=cluster)
