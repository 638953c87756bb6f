"""What ``explain`` reads: the ``--cluster`` file and the pod to explain.

Both files go through the checks ``run`` applies to a workload (``workload.spec``):
Kubernetes' schema (an unknown field is an error naming file, object and field, or a
warning with ``--lenient``), kinds, empty files. A ``--cluster`` Workload file is
expanded as ``run`` expands it: its objects, its node groups' nodes, its pod groups'
pods (pending, as when the run starts), so ``explain`` answers for the cluster ``run``
would schedule on.

The pod is ``--pod FILE`` (a file holding exactly one Pod) or ``--pod NS/NAME`` (a
pending pod of the ``--cluster`` snapshot, controller-created pods included).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cluster_sched.api.manifest import parse_pod
from cluster_sched.api.objects import Pod
from cluster_sched.errors import InvalidObjectError
from cluster_sched.workload.snapshot import Snapshot
from cluster_sched.workload.spec import Workload, load_workload

__all__ = ["load_cluster", "load_pod_file", "pending_pod", "pod_reference"]

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


def _snapshot_of(w: Workload) -> Snapshot:
    """A loaded workload as the snapshot ``explain`` starts from: every pod group's pods
    pending, as they are when ``run`` starts."""
    return Snapshot(
        objects=list(w.objects),
        node_docs=list(w.node_docs),
        pod_docs=[doc for group in w.pod_groups for doc in group.manifests()],
        created=dict(w.created),
        terminal=list(w.terminal),
        warnings=list(w.warnings),
        invalid=list(w.invalid),
    )


def load_cluster(path: str | Path, *, seed: int = 0, lenient: bool = False) -> Snapshot:
    """The ``--cluster`` file, plain manifests or a Workload, checked as ``run`` checks it."""
    return _snapshot_of(load_workload(path, seed=seed, lenient=lenient, what="manifest"))


def load_pod_file(path: str | Path, *, lenient: bool = False) -> tuple[Pod, list[str]]:
    """The one Pod of ``path`` and the warnings its checks gave (``--lenient``).

    The file goes through the checks of any workload file; a malformed pod is an error
    (not skipped, as a workload's is: it is the one pod asked about), and so is a file
    holding anything but exactly one Pod.
    """
    source = str(path)
    w = load_workload(path, lenient=lenient, what="manifest")
    if w.invalid:
        raise InvalidObjectError(w.invalid[0])
    others = [*w.objects, *w.node_docs[:1]]
    if others:
        meta = others[0].get("metadata") or {}
        raise InvalidObjectError(
            f"expected exactly one Pod, found a {others[0].get('kind')} "
            f"({meta.get('name') or '(unnamed)'}) too",
            source=source,
        )
    if w.total_pods != 1:
        raise InvalidObjectError(f"expected exactly one Pod, found {w.total_pods}", source=source)
    doc = next(doc for group in w.pod_groups for doc in group.manifests())
    return parse_pod(doc, source), list(w.warnings)


def pending_pod(value: str, snapshot: Snapshot, cluster: str) -> Pod:
    """The pod to explain, given as ``namespace/name``: it must name a pod of the
    snapshot that waits for a node (not bound, not terminal). A file is read with
    :func:`load_pod_file`."""
    key = pod_reference(value)
    if key is None:
        return load_pod_file(value)[0]
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
