"""The informer: the store's event stream turned into typed objects and handler calls.

It keeps the last known object of every kind it watches (the informer's local store), so
handlers get (old, new) pairs, and the coordinator reads pending pods without a Redis
round trip. A malformed object is reported (one line naming object and field, and a
Warning event) and skipped: it never stops the stream or loses another object.

The same holds for what no parser can read: a stored object that is not msgpack is
left out of a listing and reported like a malformed one; a stream entry the store did not
write (an ERROR event) is logged and skipped, and one that carries a resourceVersion (a
real write whose object is unreadable) makes the informer relist, as a reflector does
after a watch error, so it never keeps a stale view of that object.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_sched.api.evolve import evolve
from cluster_sched.api.manifest import parse_object
from cluster_sched.api.objects import (
    TERMINAL_POD_PHASES,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    WorkloadController,
)
from cluster_sched.api.storage import STORAGE_KINDS
from cluster_sched.dra.listers import DRA_KINDS
from cluster_sched.errors import InvalidObjectError
from cluster_sched.scheduler.node_templates import NodeTemplates
from cluster_sched.scheduler.own_bindings import OwnBinding, OwnMark, bound_manifest
from cluster_sched.scheduler.pod_templates import PodTemplates
from cluster_sched.store.codec import gc_paused
from cluster_sched.store.results import EventType, WatchEvent
from cluster_sched.store.sharing import ManifestSharing
from cluster_sched.store.store import Store
from cluster_sched.store.streams import Entry, decode_entry, entry_rv, read_entries

log = logging.getLogger(__name__)

WATCHED_KINDS = (
    "Node",
    "Pod",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    *DRA_KINDS,
    "Namespace",
    "PodDisruptionBudget",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "ReplicationController",
)


#: Listing order: nodes first so pods find their nodes, pods last.
LIST_ORDER = (
    "Node",
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "PersistentVolume",
    "PersistentVolumeClaim",
    *DRA_KINDS,
    "Namespace",
    "PodDisruptionBudget",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "ReplicationController",
    "Pod",
)


@dataclass(slots=True)
class InformerHandlers:
    """Callbacks by kind; each gets (old, new) with None for add (old) / delete (new)."""

    on_pod: Callable[[Pod | None, Pod | None], None]
    on_node: Callable[[Node | None, Node | None], None]
    on_other: Callable[[str, Any, Any], None] = lambda kind, old, new: None
    on_invalid: Callable[[str, str, InvalidObjectError], None] = lambda kind, key, err: None
    #: our own bindings confirmed from their marks, consecutive in the watch, as
    #: ``(old, new)`` pairs (old unbound, new bound; one pair per pod): what ``on_pod``
    #: would get for each, in order, handed on in one call. None: ``on_pod`` per pair.
    on_own_bound: Callable[[list[tuple[Pod, Pod]]], None] | None = None
    #: new nodes, consecutive in the listing or the watch: what ``on_node(None, node)``
    #: would get for each, in order, handed on in one call before any other handler
    #: call. None: ``on_node`` per node.
    on_nodes_added: Callable[[list[Node]], None] | None = None


@dataclass(slots=True)
class Informer:
    store: Store
    handlers: InformerHandlers
    last_id: str = "0-0"
    pods: dict[str, Pod] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    others: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: objects that failed to parse, by (kind, key): the error line
    invalid: dict[tuple[str, str], str] = field(default_factory=dict)
    #: resourceVersion of the last event applied (0: none yet)
    last_rv: int = 0
    #: how many times a gap in the stream (or an unreadable write) forced a relist
    relists: int = 0
    #: unreadable stream entries and stored objects met so far
    unreadable: int = 0
    #: pods' and nodes' manifests are kept with their equal parts shared (memory at scale)
    sharing: ManifestSharing = field(default_factory=ManifestSharing)
    #: the mark the coordinator's binder has bind.lua write into its bindings' watch
    #: entries: those are applied without decoding (own_bindings.py)
    own: OwnMark = field(default_factory=OwnMark)
    #: watch entries of our own bindings applied from their mark (not decoded)
    own_confirmed: int = 0
    #: watch entries of our own bindings decoded in full all the same (a pod the
    #: informer did not hold unbound, a manifest part bind.lua rewrites whole): ~0
    own_decoded: int = 0
    #: new pods of a template built from its first pod's parse (pod_templates.py)
    templates: PodTemplates = field(default_factory=PodTemplates)
    #: new nodes of a pool built from its first node's parse (node_templates.py)
    node_templates: NodeTemplates = field(default_factory=NodeTemplates)
    #: new nodes applied here, not yet handed on (``on_nodes_added``)
    nodes_added: list[Node] = field(default_factory=list)

    def list_and_watch(self) -> None:
        """Initial listing (nodes first, so pods find their nodes), then the stream id.

        Called again after a gap in the stream (events trimmed before we read them): the
        new listing is diffed against what the informer knew, so handlers still see every
        add, update and delete, as a relisting reflector delivers them.
        """
        snapshot, last_id = self.store.list_and_watch(WATCHED_KINDS, self._unreadable_object)
        with gc_paused():
            try:
                self._apply_listing(snapshot)
            finally:
                self._hand_on_nodes()
        self.last_id = last_id
        # Unknown until the next event: a write between the listing and a separate
        # read of the counter would make any value read here too new.
        self.last_rv = 0

    def _apply_listing(self, snapshot: Mapping[str, Iterable[tuple[str, dict[str, Any]]]]) -> None:
        """Each listed object is applied as it is decoded (a million manifests never
        exist at once); then what the informer knew that the listing lacks is deleted."""
        for kind in LIST_ORDER:
            listed: set[str] = set()
            for key, doc in snapshot.get(kind, ()):
                listed.add(key)
                known = self._known(kind, key)
                if known is None:
                    self._apply(kind, key, EventType.ADDED, doc)
                elif getattr(known, "raw", None) != doc:
                    self._apply(kind, key, EventType.MODIFIED, doc)
            for key in [k for k in self._keys_of(kind) if k not in listed]:
                self._apply(kind, key, EventType.DELETED, {})

    def poll(self, count: int = 2000, block_ms: int | None = None) -> int:
        """Apply up to ``count`` new events; returns how many were read."""
        entries = read_entries(
            self.store.client, self.store.keys, self.last_id, count=count, block_ms=block_ms
        )
        with gc_paused():  # parsing a batch allocates a lot; see gc_paused
            return self._apply_entries(entries)

    def _apply_entries(self, entries: list[Entry]) -> int:
        """Apply raw stream entries in order: the coordinator's own bindings from
        their mark (no decoding), every other one decoded. A gap in resourceVersions
        before the first entry means the stream was trimmed past us: relist instead."""
        if entries and self._gap(entry_rv(entries[0][1])):
            return len(entries)
        mark = self.own.raw
        bound: list[tuple[Pod, Pod]] = []  # our bindings not yet handed on, in order
        try:  # nodes added are handed on when another handler call comes, or at the end
            for i, (entry_id, fields) in enumerate(entries):
                if fields.get(b"by") == mark:
                    pair = self._confirm_own(entry_id, fields)
                    if pair is not None:
                        bound.append(pair)
                        continue
                if bound:  # handed on before the next event: the handlers' order kept
                    self._hand_on_bound(bound)
                    bound = []
                if self._apply_event(decode_entry(entry_id, fields)):
                    return i + 1
        finally:
            if bound:
                self._hand_on_bound(bound)
            self._hand_on_nodes()
        return len(entries)

    def _hand_on_nodes(self) -> None:
        """New nodes not yet handed on, to ``on_nodes_added`` in one call (called before
        any other handler call, so each sees every node before it)."""
        nodes = self.nodes_added
        if nodes:
            self.nodes_added = []
            self.handlers.on_nodes_added(nodes)  # type: ignore[misc]

    def _hand_on_bound(self, pairs: list[tuple[Pod, Pod]]) -> None:
        """A run of our own bindings to the handlers: in one call (``on_own_bound``),
        or as ``on_pod`` per pod when there is none."""
        self._hand_on_nodes()
        bulk = self.handlers.on_own_bound
        if bulk is not None:
            bulk(pairs)
            return
        on_pod = self.handlers.on_pod
        for old, new in pairs:
            on_pod(old, new)

    def _confirm_own(
        self, entry_id: bytes | str, fields: Mapping[bytes, bytes]
    ) -> tuple[Pod, Pod] | None:
        """Apply an entry carrying our mark as our binding (see own_bindings.py) to the
        informer's pods; the ``(old, new)`` pair for the handlers (``_hand_on_bound``),
        or None to decode it after all (counted in ``own_decoded``)."""
        binding = self.own.binding(fields)
        try:  # bind.lua writes it as an integer: no need for entry_rv's checks
            rv = int(fields[b"rv"])
        except (KeyError, ValueError):
            rv = 0
        if binding is None or fields.get(b"type") != b"MODIFIED" or fields.get(b"kind") != b"Pod":
            self.own_decoded += 1
            return None
        old = self.pods.get(binding.key)
        new = own_bound_pod(old, binding, rv, self.sharing) if rv > 0 else None
        if old is None or new is None:
            self.own_decoded += 1
            return None
        self.last_id = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
        self.last_rv = rv
        self.own_confirmed += 1
        self.pods[binding.key] = new
        return old, new

    def _gap(self, first_rv: int) -> bool:
        """A gap before ``first_rv`` (events trimmed before we read them): relist."""
        if not (self.last_rv and first_rv > self.last_rv + 1):
            return False
        log.warning(
            "watch events %d..%d were lost to trimming: relisting", self.last_rv + 1, first_rv - 1
        )
        self.relists += 1
        self.list_and_watch()
        return True

    def _apply_event(self, ev: WatchEvent) -> bool:
        """Apply one decoded event; True if it made the informer relist."""
        self.last_id = ev.id
        if ev.type is EventType.ERROR:
            if self._unreadable_event(ev):
                # A write we cannot read: what we know of its object may be stale.
                self.relists += 1
                self.list_and_watch()
                return True
            return False
        self.last_rv = ev.rv
        self._apply(ev.kind, ev.key, ev.type, ev.obj)
        return False

    def _unreadable_event(self, ev: WatchEvent) -> bool:
        """Report an ERROR event; True if it was a write of the store's (it has a
        resourceVersion), whose object the informer therefore missed."""
        self.unreadable += 1
        message = str(ev.obj.get("message", "unreadable"))
        if ev.rv > 0 and ev.kind in WATCHED_KINDS and ev.key:
            self._report(ev.kind, ev.key, InvalidObjectError(message, obj=f"{ev.kind} {ev.key}"))
        else:  # not the store's write: nothing to say about any object
            log.warning("skipping watch event %s: %s", ev.id, message)
        return ev.rv > 0

    def _unreadable_object(self, kind: str, key: str, why: str) -> None:
        """A stored object the listing could not decode: reported, treated as gone."""
        self.unreadable += 1
        self._report(kind, key, InvalidObjectError(why, obj=f"{kind} {key}"))

    def _report(self, kind: str, key: str, err: InvalidObjectError) -> None:
        """Log and hand on an object's error once per distinct message."""
        line = str(err)
        if self.invalid.get((kind, key)) != line:
            self.invalid[(kind, key)] = line
            log.warning("skipping invalid %s %s: %s", kind, key, line)
            self._hand_on_nodes()
            self.handlers.on_invalid(kind, key, err)

    def _known(self, kind: str, key: str) -> Any:
        if kind == "Pod":
            return self.pods.get(key)
        if kind == "Node":
            return self.nodes.get(key)
        return self.others.get((kind, key))

    def _keys_of(self, kind: str) -> list[str]:
        if kind == "Pod":
            return list(self.pods)
        if kind == "Node":
            return list(self.nodes)
        return [key for (k, key) in self.others if k == kind]

    def apply_events(self, events: list[WatchEvent]) -> None:
        try:
            for ev in events:
                self.last_id = ev.id
                if ev.type is EventType.ERROR:
                    self._unreadable_event(ev)
                    continue
                self._apply(ev.kind, ev.key, ev.type, ev.obj)
        finally:
            self._hand_on_nodes()

    def _apply(self, kind: str, key: str, etype: EventType | str, doc: Mapping[str, Any]) -> None:
        if kind not in WATCHED_KINDS:
            return
        new: Any = None
        template: bytes | None = None
        if etype == EventType.MODIFIED and kind == "Pod":
            new = bound_fast_path(self.pods.get(key), doc, self.sharing)
        elif etype == EventType.ADDED and kind == "Pod":
            template = self.templates.key(doc)
            if template is not None:
                new = self.templates.pod(template, doc)
        elif etype == EventType.ADDED and kind == "Node":
            template = self.node_templates.key(doc)
            if template is not None:
                new = self.node_templates.node(template, doc)
        if new is None and etype != EventType.DELETED:
            if kind == "Pod" or kind == "Node":
                doc = self.sharing.manifest(doc)
            try:
                new = parse_object(doc)
                if template is not None and isinstance(new, Pod):
                    self.templates.remember(template, new, doc)
                elif template is not None and isinstance(new, Node):
                    self.node_templates.remember(template, new, doc)
            except InvalidObjectError as err:
                self._report(kind, key, err)
                # A now-invalid object is treated as gone for scheduling purposes.
                etype = EventType.DELETED
        if kind == "Node":
            self._apply_node(key, new)
            return
        self._hand_on_nodes()
        if kind == "Pod":
            old = self.pods.get(key)
            if new is not None and new.phase in TERMINAL_POD_PHASES:
                # Upstream's pod informer lists with status.phase!=Succeeded/Failed: a pod
                # that finishes leaves the watch (a delete) and holds no room any more.
                new = None
            if new is None:
                self.pods.pop(key, None)
            else:
                self.pods[key] = new
            if old is not None or new is not None:
                self.handlers.on_pod(old, new)
        else:
            old_o = self.others.get((kind, key))
            if new is None:
                self.others.pop((kind, key), None)
            else:
                self.others[(kind, key)] = new
            if old_o is not None or new is not None:
                self.handlers.on_other(kind, old_o, new)

    def _apply_node(self, key: str, new: Node | None) -> None:
        """A node event: a new node waits in ``nodes_added`` (when ``on_nodes_added``
        takes them), anything else goes to ``on_node`` after the nodes waiting."""
        old = self.nodes.get(key)
        if new is None:
            self.nodes.pop(key, None)
        else:
            self.nodes[key] = new
            if old is None and self.handlers.on_nodes_added is not None:
                self.nodes_added.append(new)
                return
        if old is not None or new is not None:
            self._hand_on_nodes()
            self.handlers.on_node(old, new)


#: What a binding may change in a pod's status (bind.lua): the PodScheduled condition set
#: and status.nominatedNodeName cleared. Neither the condition list nor anything else a
#: Pod is parsed from changes otherwise.
_BIND_STATUS = frozenset({"conditions", "nominatedNodeName"})
_BIND_SPEC = frozenset({"nodeName"})
_BIND_META = frozenset({"resourceVersion"})
_BIND_PARTS = frozenset({"metadata", "spec", "status"})


def _equal_except(new: Mapping[str, Any], old: Mapping[str, Any], skip: frozenset[str]) -> bool:
    """``new`` and ``old`` hold the same keys with equal values, keys in ``skip`` aside."""
    kept = 0
    for k, v in new.items():
        if k not in skip:
            kept += 1
            if k not in old or old[k] != v:
                return False
    return kept == sum(1 for k in old if k not in skip)


def bound_fast_path(
    old: Pod | None, doc: Mapping[str, Any], sharing: ManifestSharing
) -> Pod | None:
    """The binding of a pod we already parsed (``old``, unbound), or None to parse ``doc``.

    A binding (bind.lua) sets spec.nodeName and metadata.resourceVersion, sets the
    PodScheduled condition and clears status.nominatedNodeName. When ``doc`` differs
    from the parsed pod's manifest in nothing else, the parsed pod is reused with those
    fields changed, and the new manifest is the old one's shared parts plus the changed
    ones: no decoding, no sharing pass over the whole tree. Anything else (another field
    changed, a value of the wrong type) returns None, and the caller parses ``doc``."""
    if old is None or old.raw is None or old.node_name:
        return None
    raw = old.raw
    spec, old_spec = doc.get("spec"), raw.get("spec")
    meta, old_meta = doc.get("metadata"), raw.get("metadata")
    status, old_status = doc.get("status"), raw.get("status") or {}
    if not (
        isinstance(spec, dict)
        and isinstance(meta, dict)
        and isinstance(status, dict)
        and isinstance(old_spec, dict)
        and isinstance(old_meta, dict)
        and isinstance(old_status, dict)
    ):
        return None
    node = spec.get("nodeName")
    nominated = status.get("nominatedNodeName") or ""
    rv = meta.get("resourceVersion")
    if not node or type(node) is not str or type(nominated) is not str or type(rv) is not str:
        return None
    if not (
        _equal_except(doc, raw, _BIND_PARTS)
        and _equal_except(spec, old_spec, _BIND_SPEC)
        and _equal_except(meta, old_meta, _BIND_META)
        and _equal_except(status, old_status, _BIND_STATUS)
    ):
        return None
    manifest = {
        **raw,
        "metadata": {**old_meta, "resourceVersion": rv},
        "spec": {**old_spec, "nodeName": sys.intern(node)},
        "status": sharing.level_one("status", status),
    }
    return _evolve_bound(old, manifest, nominated, rv)


def _evolve_bound(old: Pod, manifest: dict[str, Any], nominated: str, rv: str) -> Pod:
    """``old`` with the binding's fields changed and ``manifest`` as its raw."""
    return evolve(
        old,
        node_name=manifest["spec"]["nodeName"],
        nominated_node_name=nominated,
        raw=manifest,
        meta=evolve(old.meta, resource_version=rv),
    )


def own_bound_pod(
    old: Pod | None, binding: OwnBinding, rv: int, sharing: ManifestSharing
) -> Pod | None:
    """The pod ``old`` (unbound, the informer's) as ``binding`` at ``rv`` left it, from
    the binding's marked watch entry alone (own_bindings.py); None to decode the entry."""
    if old is None or old.raw is None or old.node_name or old.key != binding.key:
        return None
    fresh = binding.conditions
    manifest = bound_manifest(old.raw, sys.intern(binding.node), rv, binding.condition, fresh)
    if manifest is None:
        return None
    status = manifest["status"]
    if status["conditions"] is not fresh:
        # the old status' parts are shared already (the informer's manifests are): only
        # a conditions list made for this pod needs the sharing pass
        manifest["status"] = sharing.level_one("status", status)
    return _evolve_bound(old, manifest, "", manifest["metadata"]["resourceVersion"])


def is_other_kind(obj: object) -> bool:
    return isinstance(obj, Namespace | PodDisruptionBudget | WorkloadController) or (
        type(obj).__name__ in STORAGE_KINDS or type(obj).__name__ in DRA_KINDS
    )
