"""HTTP scheduler extenders (upstream pkg/scheduler/extender.go, HTTPExtender).

An extender is a web service the scheduler POSTs JSON to (``extender_wire``) at
``urlPrefix/verb``: Filter after the plugins' Filter, Prioritize added to the plugins'
scores, ProcessPreemption to shrink preemption candidates, Bind instead of the
DefaultBinder. Each configured extender gets one ``urllib3.PoolManager`` (connections
are kept alive and reused) and a hard deadline per call: ``httpTimeout`` (5s by
default) bounds connecting, waiting for the answer and reading it, so a slow or dead
extender costs the scheduling loop at most its timeout. Every failure (unreachable, a
timeout, a non-200 code, an answer that is not the upstream type, an ``Error`` in the
answer) is an :class:`ExtenderError`; the callers decide, with ``is_ignorable``, whether
it fails the pod's attempt.
"""

from __future__ import annotations

import json
import logging
import ssl
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import urllib3

from cluster_sched.api.objects import Node, Pod
from cluster_sched.config.extenders import Extender, ExtenderTLSConfig
from cluster_sched.errors import SchedulerError
from cluster_sched.framework import extender_wire as wire
from cluster_sched.framework.status import SUCCESS, Code, Status

__all__ = [
    "EXTENDER_NAME",
    "MAX_EXTENDER_PRIORITY",
    "REPORT_KEY",
    "ExtenderError",
    "ExtenderReport",
    "HTTPExtender",
    "extenders_binding",
    "new_http_extenders",
    "report_of",
]

log = logging.getLogger(__name__)

#: upstream framework.ExtenderName: the pseudo-plugin an extender's rejection is filed
#: under in the pod's unschedulable plugins (any cluster event may requeue it).
EXTENDER_NAME = "Extender"
#: extenderv1.MaxExtenderPriority: extender scores are 0..10, scaled to MaxNodeScore.
MAX_EXTENDER_PRIORITY = 10
#: The most bytes an extender's answer may have (a NodeList of many nodes fits).
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
_CHUNK = 64 * 1024


class ExtenderError(SchedulerError):
    """An extender call failed; the message is upstream's where it has one."""


def _ssl_context(tls: ExtenderTLSConfig | None, enable_https: bool) -> ssl.SSLContext | None:
    """upstream makeTransport: the TLS config as given; enableHTTPS without a CA means
    the server certificate is not verified."""
    if tls is None and not enable_https:
        return None
    tls = tls or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (enable_https and not has_ca)
    ctx = ssl.create_default_context(
        cafile=tls.ca_file or None, cadata=tls.ca_data.decode() if tls.ca_data else None
    )
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        # Configured on purpose (upstream does the same silently): one log line, not a
        # warning per request.
        log.warning("scheduler extender: the server's TLS certificate is not verified")
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    if tls.cert_file or tls.cert_data:
        _load_client_cert(ctx, tls)
    return ctx


def _load_client_cert(ctx: ssl.SSLContext, tls: ExtenderTLSConfig) -> None:
    """The client certificate from files, or from inline PEM data (ssl only reads files:
    written to a private temporary directory that is removed at once)."""
    if not tls.cert_data and not tls.key_data:
        ctx.load_cert_chain(tls.cert_file, tls.key_file or None)
        return
    cert = tls.cert_data or Path(tls.cert_file).read_bytes()
    key = tls.key_data or Path(tls.key_file).read_bytes()
    with tempfile.TemporaryDirectory(prefix="cs-extender-") as tmp:
        cert_path, key_path = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
        for path, data in ((cert_path, cert), (key_path, key)):
            path.touch(mode=0o600)
            path.write_bytes(data)
        ctx.load_cert_chain(cert_path, key_path)


class HTTPExtender:
    """One configured extender. Thread-safe: calls may run concurrently (Prioritize of
    several extenders, bindings on binder threads)."""

    def __init__(self, config: Extender) -> None:
        self.config = config
        self.timeout = config.timeout_seconds
        self._managed = frozenset(r.name for r in config.managed_resources)
        ctx = _ssl_context(config.tls_config, config.enable_https)
        kwargs: dict[str, Any] = {"num_pools": 4, "maxsize": 8, "block": False}
        if ctx is not None:
            kwargs["ssl_context"] = ctx
            if config.tls_config is not None and config.tls_config.server_name:
                kwargs["server_hostname"] = config.tls_config.server_name
                kwargs["assert_hostname"] = config.tls_config.server_name
        self._pool = urllib3.PoolManager(**kwargs)

    # ------------------------------------------------------------------ what it does

    @property
    def name(self) -> str:
        """upstream Name(): the URL prefix identifies the extender."""
        return self.config.url_prefix

    @property
    def weight(self) -> int:
        return self.config.weight

    @property
    def is_ignorable(self) -> bool:
        return self.config.ignorable

    @property
    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """True without managed resources; else when a container or init container
        requests or limits one of them."""
        if not self._managed:
            return True
        for c in (*pod.containers, *pod.init_containers):
            if not self._managed.isdisjoint(c.requests) or not self._managed.isdisjoint(c.limits):
                return True
        return False

    # ------------------------------------------------------------------ verbs

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> wire.FilterResult:
        """The nodes the extender keeps (a subset of ``nodes``) and the failed ones."""
        if not self.config.filter_verb:
            return wire.FilterResult([n.name for n in nodes])
        cache = self.config.node_cache_capable
        doc = self._send(self.config.filter_verb, wire.extender_args(pod, nodes, cache))
        result = self._decode(lambda: wire.decode_filter_result(doc, cache))
        if result.error:
            raise ExtenderError(result.error)
        known = {n.name for n in nodes}
        for name in result.names or ():
            if name not in known:
                raise ExtenderError(
                    f'extender "{self.name}" claims a filtered node "{name}" which is not '
                    "found in the input node list"
                )
        return result

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[tuple[str, int]], int]:
        """(host, score 0..10) pairs and the extender's weight."""
        if not self.config.prioritize_verb:
            return [(n.name, 0) for n in nodes], 0
        args = wire.extender_args(pod, nodes, self.config.node_cache_capable)
        doc = self._send(self.config.prioritize_verb, args)
        return self._decode(lambda: wire.decode_host_priorities(doc)), self.config.weight

    def bind(self, pod: Pod, node: str) -> None:
        if not self.config.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        doc = self._send(self.config.bind_verb, wire.binding_args(pod, node))
        error = self._decode(lambda: wire.decode_binding_result(doc))
        if error:
            raise ExtenderError(error)

    def process_preemption(
        self,
        pod: Pod,
        victims: Mapping[str, tuple[Sequence[Pod], int]],
        pods_on_node: Callable[[str], Iterable[Pod] | None],
    ) -> dict[str, tuple[list[Pod], int]]:
        """The victims the extender keeps per node, mapped back from UIDs to the pods on
        the nodes (``pods_on_node``; None: the node is unknown)."""
        if not self.config.preempt_verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.name} but run into ProcessPreemption"
            )
        args = wire.preemption_args(pod, victims, self.config.node_cache_capable)
        doc = self._send(self.config.preempt_verb, args)
        meta = self._decode(lambda: wire.decode_preemption_result(doc))
        out: dict[str, tuple[list[Pod], int]] = {}
        for node, mv in meta.items():
            present = pods_on_node(node)
            if present is None:
                raise ExtenderError(f'node "{node}" not found')
            by_uid = {p.uid: p for p in present}
            pods = []
            for uid in mv.uids:
                if uid not in by_uid:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: "
                        f"{node}, but the pod is not found on that node"
                    )
                pods.append(by_uid[uid])
            out[node] = (pods, mv.num_pdb_violations)
        return out

    def close(self) -> None:
        self._pool.clear()

    # ------------------------------------------------------------------ transport

    def _decode(self, decode: Callable[[], Any]) -> Any:
        try:
            return decode()
        except wire.WireError as err:
            raise ExtenderError(f"extender {self.name}: malformed answer: {err}") from err

    def _send(self, verb: str, args: Mapping[str, Any]) -> Any:
        """POST ``args`` to ``urlPrefix/verb``; the decoded JSON answer. The whole call
        (connect, headers, body) ends within ``self.timeout`` seconds."""
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        body = json.dumps(args, default=wire.json_default).encode()
        deadline = time.monotonic() + self.timeout
        try:
            resp = self._pool.request(
                "POST",
                url,
                body=body,
                headers={"Content-Type": "application/json"},
                timeout=urllib3.Timeout(total=self.timeout),
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except urllib3.exceptions.HTTPError as err:
            raise ExtenderError(f'Post "{url}": {_reason(err)}') from err
        try:
            if resp.status != 200:
                raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
            data = self._read(resp, deadline, url)
        except BaseException:
            resp.close()  # a half-read connection is never reused
            raise
        finally:
            resp.release_conn()
        try:
            return json.loads(data)
        except ValueError as err:
            raise ExtenderError(
                f"extender {self.name}: answer to {verb} is not JSON: {err}"
            ) from err

    def _read(self, resp: Any, deadline: float, url: str) -> bytes:
        """The body, each socket read bounded by the time left before ``deadline``."""
        parts: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ExtenderError(f'Post "{url}": timeout after {self.timeout:g}s')
            sock = getattr(getattr(resp, "connection", None), "sock", None)
            if sock is not None:
                sock.settimeout(left)
            try:
                chunk = resp.read(_CHUNK)
            except urllib3.exceptions.HTTPError as err:
                raise ExtenderError(f'Post "{url}": {_reason(err)}') from err
            except OSError as err:  # the socket timed out under our deadline
                raise ExtenderError(f'Post "{url}": {err or "timeout"}') from err
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise ExtenderError(f'Post "{url}": answer larger than {MAX_RESPONSE_BYTES} bytes')
            parts.append(chunk)


def _reason(err: Exception) -> str:
    reason = getattr(err, "reason", None)
    return str(reason or err)


def new_http_extenders(configs: Sequence[Extender]) -> tuple[HTTPExtender, ...]:
    """One HTTPExtender per configured extender, in the configuration's order (which
    already puts ignorable extenders last, as upstream's buildExtenders does)."""
    return tuple(HTTPExtender(c) for c in configs)


def extenders_binding(extenders: Sequence[HTTPExtender], pod: Pod, node: str) -> Status | None:
    """upstream extendersBinding: the first interested binder binds the pod (an
    ignorable one that fails hands over to the next, then to the Bind plugins). None:
    no extender bound it. Never raises."""
    for ext in extenders:
        if not ext.is_binder or not ext.is_interested(pod):
            continue
        try:
            ext.bind(pod, node)
        except Exception as err:
            if ext.is_ignorable:
                log.info("skipping extender %s in bind: %s", ext.name, err)
                continue
            return Status(Code.ERROR, (str(err),))
        return SUCCESS
    return None


#: CycleState key of an :class:`ExtenderReport`: present only when someone (explain)
#: asked for the extenders' answers, so scheduling itself records nothing.
REPORT_KEY = "cluster-sched/extenderReport"


class ExtenderReport:
    """What each extender answered during one attempt, for ``explain``: one JSON-ready
    entry per configured extender, in order, holding ``filter``, ``prioritize``,
    ``preempt`` sections for the steps it took part in."""

    def __init__(self, extenders: Sequence[HTTPExtender], pod: Pod) -> None:
        self._index = {id(ext): i for i, ext in enumerate(extenders)}
        self.entries: list[dict[str, Any]] = [
            {"urlPrefix": ext.name, "interested": ext.is_interested(pod)} for ext in extenders
        ]

    def section(self, ext: HTTPExtender, step: str) -> dict[str, Any]:
        """The (new) ``step`` section of ``ext``'s entry."""
        entry = self.entries[self._index[id(ext)]]
        out: dict[str, Any] = {}
        entry[step] = out
        return out


def report_of(state: Any) -> ExtenderReport | None:
    """The report a CycleState carries, if one was asked for."""
    report = state.get(REPORT_KEY) if state is not None else None
    return report if isinstance(report, ExtenderReport) else None
