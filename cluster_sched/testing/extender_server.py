"""A real HTTP scheduler extender for tests, on 127.0.0.1 (upstream's test FakeExtender
and the integration test's Extender, served over HTTP).

A :class:`FakeExtender` answers the upstream wire format (``/filter``, ``/prioritize``,
``/bind``, ``/preempt``, any prefix): predicates decide per node (True: fits; False:
``FailedNodes``; ``UNRESOLVABLE``: ``FailedAndUnresolvableNodes``) with upstream's
FakeExtender messages, prioritizers give ``(host, score)`` lists summed with their
weights, and failures can be injected (an ``Error`` in the answer, an HTTP code, a delay
longer than the scheduler's timeout). Every request body is kept, so a test can check
what the scheduler sent (node names only for a node-cache-capable extender, the pod).

Usage::

    with ExtenderServer(FakeExtender(predicates=[only("n1")])) as server:
        config = {"extenders": [{"urlPrefix": server.url, "filterVerb": "filter"}]}
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "UNRESOLVABLE",
    "ExtenderServer",
    "FakeExtender",
    "only",
    "prefer",
]

#: A predicate's answer for a node that fails and that preemption cannot help.
UNRESOLVABLE = "unresolvable"

#: (pod manifest, node name) -> True | False | UNRESOLVABLE
Predicate = Callable[[dict[str, Any], str], Any]
#: (pod manifest, node names) -> [(host, score)]
Prioritizer = Callable[[dict[str, Any], list[str]], list[tuple[str, int]]]


def only(*names: str) -> Predicate:
    """A predicate that fits exactly the named nodes (upstream machine_1_2_3Predicate...)."""
    allowed = frozenset(names)
    return lambda pod, node: node in allowed


def prefer(name: str, high: int = 10, low: int = 1) -> Prioritizer:
    """``high`` for one node, ``low`` for the others (upstream machine2Prioritizer...)."""
    return lambda pod, nodes: [(n, high if n == name else low) for n in nodes]


def _field(doc: dict[str, Any], name: str) -> Any:
    for key, value in doc.items():
        if key.casefold() == name.casefold():
            return value
    return None


@dataclass
class FakeExtender:
    """What the extender answers; see the module docstring."""

    name: str = "FakeExtender"
    predicates: Sequence[Predicate] = ()
    prioritizers: Sequence[tuple[Prioritizer, int]] = ()
    #: answer filter with ``NodeNames`` (the scheduler sent names only)
    node_cache_capable: bool = False
    #: a filter / prioritize / bind / preempt answer carrying this Error
    filter_error: str = ""
    bind_error: str = ""
    #: node names a filter answer claims on top of the kept ones (a misbehaving extender)
    claim_extra: tuple[str, ...] = ()
    #: the HTTP code of every answer (200: normal)
    status: int = 200
    #: seconds to wait before answering
    delay: float = 0.0
    #: called with (namespace, name, uid, node) for /bind (e.g. writes the binding)
    binder: Callable[[str, str, str, str], None] | None = None
    #: node -> victim UIDs to keep for /preempt (None: keep what was sent)
    preempt_keep: Callable[[str, list[str]], list[str] | None] | None = None
    #: (path, request JSON) of every call, in order
    calls: list[tuple[str, Any]] = field(default_factory=list)
    #: the client's port of every call: the same port means a reused connection
    ports: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def answer(self, path: str, body: Any, port: int = 0) -> tuple[int, Any]:
        with self._lock:
            self.calls.append((path, body))
            self.ports.append(port)
        if self.delay:
            time.sleep(self.delay)
        if self.status != 200:
            return self.status, {"message": "injected failure"}
        verb = path.rstrip("/").rsplit("/", 1)[-1]
        handler = {
            "filter": self._filter,
            "prioritize": self._prioritize,
            "bind": self._bind,
            "preempt": self._preempt,
        }.get(verb)
        if handler is None:
            return 404, {"message": f"unknown verb {verb}"}
        return 200, handler(body)

    def verbs(self) -> list[str]:
        """The verbs called so far, in order."""
        with self._lock:
            return [p.rstrip("/").rsplit("/", 1)[-1] for p, _ in self.calls]

    # ------------------------------------------------------------------ verbs

    @staticmethod
    def _node_names(args: dict[str, Any]) -> list[str]:
        names = _field(args, "NodeNames")
        if names is not None:
            return list(names)
        nodes = _field(args, "Nodes") or {}
        return [item["metadata"]["name"] for item in nodes.get("items") or ()]

    def _filter(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.filter_error:
            return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "Error": self.filter_error}
        pod = _field(args, "Pod") or {}
        sent = _field(args, "Nodes") or {}
        items = {i["metadata"]["name"]: i for i in sent.get("items") or ()}
        kept: list[str] = []
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        for node in self._node_names(args):
            verdicts = [p(pod, node) for p in self.predicates]
            if UNRESOLVABLE in verdicts:
                unresolvable[node] = f'FakeExtender: node "{node}" failed and unresolvable'
            elif all(v is True for v in verdicts):
                kept.append(node)
            else:
                failed[node] = f'FakeExtender: node "{node}" failed'
        out: dict[str, Any] = {"FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable}
        kept += self.claim_extra
        items.update({n: {"metadata": {"name": n}} for n in self.claim_extra})
        if self.node_cache_capable:
            out.update(Nodes=None, NodeNames=kept)
        else:
            nodes = [items.get(n, {"metadata": {"name": n}}) for n in kept]
            out.update(Nodes={"items": nodes}, NodeNames=None)
        return out

    def _prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        pod = _field(args, "Pod") or {}
        nodes = self._node_names(args)
        total: dict[str, int] = {}
        for fn, weight in self.prioritizers:
            for host, score in fn(pod, nodes):
                total[host] = total.get(host, 0) + score * weight
        return [{"Host": h, "Score": s} for h, s in total.items()]

    def _bind(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.bind_error:
            return {"Error": self.bind_error}
        if self.binder is not None:
            try:
                self.binder(args["PodNamespace"], args["PodName"], args["PodUID"], args["Node"])
            except Exception as err:
                return {"Error": str(err)}
        return {"Error": ""}

    def _preempt(self, args: dict[str, Any]) -> dict[str, Any]:
        meta = _field(args, "NodeNameToMetaVictims")
        if meta is None:  # full pods were sent: answer by their UIDs
            full = _field(args, "NodeNameToVictims") or {}
            meta = {
                n: {
                    "Pods": [{"UID": p["metadata"].get("uid", "")} for p in v["Pods"]],
                    "NumPDBViolations": v["NumPDBViolations"],
                }
                for n, v in full.items()
            }
        out = {}
        for node, victims in meta.items():
            uids = [p["UID"] for p in victims["Pods"]]
            keep = self.preempt_keep(node, uids) if self.preempt_keep is not None else uids
            if keep is None:
                continue
            out[node] = {"Pods": [{"UID": u} for u in keep], "NumPDBViolations": 0}
        return {"NodeNameToMetaVictims": out}


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a scheduler timeout) resets its connection: expected."""


class ExtenderServer:
    """A threaded HTTP server on 127.0.0.1 (free port) serving one FakeExtender; HTTPS
    when given a server-side ``tls`` context."""

    def __init__(self, extender: FakeExtender, tls: ssl.SSLContext | None = None) -> None:
        self.extender = extender
        self._tls = tls
        fake = extender

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the scheduler reuses connections

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                code, doc = fake.answer(self.path, body, self.client_address[1])
                data = json.dumps(doc).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the scheduler gave up (timeout) and closed the connection

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        if tls is not None:  # HTTPS: the listening socket hands out TLS connections
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> ExtenderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
