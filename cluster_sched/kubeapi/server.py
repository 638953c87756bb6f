"""The HTTP server: routing, bearer-token auth, Status errors and streamed watches.

A ``ThreadingHTTPServer`` (one thread per connection, HTTP/1.1 keep-alive); a watch reply
is chunked, one newline-terminated JSON event per chunk, flushed as it is written. A
bearer token is required unless the server listens on loopback and was started with
``no_auth``. Any exception in a handler becomes a Status reply: a request can fail, the
server and the store stay as they were.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import secrets
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from cluster_sched.errors import StoreError
from cluster_sched.kubeapi import discovery, openapi
from cluster_sched.kubeapi.errors import ApiError, fenced, not_found, status_object
from cluster_sched.kubeapi.kubeconfig import write_kubeconfig
from cluster_sched.kubeapi.reads import Reads, Scope
from cluster_sched.kubeapi.request import Request, Response, Stream, dumps, parse_bool
from cluster_sched.kubeapi.resources import lookup
from cluster_sched.kubeapi.storage import ObjectView
from cluster_sched.kubeapi.tls import ServingCert, make_serving_cert
from cluster_sched.kubeapi.watch import DEFAULT_WINDOW, WatchCache
from cluster_sched.kubeapi.writes import Writes
from cluster_sched.store.codec import gc_paused
from cluster_sched.store.fence import is_fenced_error
from cluster_sched.store.store import Store

__all__ = ["DEFAULT_API_HOST", "MAX_BODY", "ApiServer", "ApiServerOptions", "is_loopback"]

#: Where the API listens unless told otherwise: this machine only.
DEFAULT_API_HOST = "127.0.0.1"
#: Largest request body accepted (the API server's limit is 3 MiB).
MAX_BODY = 3 * 1024 * 1024

_log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class ApiServerOptions:
    host: str = DEFAULT_API_HOST
    port: int = 0
    #: None: generate one; "" only with no_auth on loopback
    token: str | None = None
    no_auth: bool = False
    #: most recent store events a watch can resume from (older versions: 410 Expired)
    watch_window: int = DEFAULT_WINDOW


class ApiServer:
    """The Kubernetes API over ``store``; ``start()`` serves on a background thread."""

    def __init__(self, store: Store, options: ApiServerOptions | None = None) -> None:
        self.options = options or ApiServerOptions()
        if self.options.no_auth and not is_loopback(self.options.host):
            raise ValueError(
                f"--no-auth is only allowed on a loopback address, not {self.options.host}"
            )
        self.token = (
            "" if self.options.no_auth else (self.options.token or secrets.token_urlsafe(32))
        )
        #: TLS whenever a token is required: Go clients send tokens only over HTTPS
        self.cert: ServingCert | None = (
            None if self.options.no_auth else make_serving_cert(self.options.host)
        )
        self.view = ObjectView(store)
        self.cache = WatchCache(store, self.options.watch_window)
        self.reads = Reads(self.view, self.cache)
        self.writes = Writes(self.view)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() first"
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        if host in ("0.0.0.0", "::"):  # listening everywhere: clients on this host use loopback
            host = "127.0.0.1" if host == "0.0.0.0" else "::1"
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if self.cert is not None else "http"
        return f"{scheme}://{shown}:{port}"

    def write_kubeconfig(self, path: str) -> str:
        """Write a kubeconfig for this server (token and CA included); its path."""
        ca = self.cert.cert_pem if self.cert is not None else None
        return str(write_kubeconfig(path, self.url, self.token or None, ca))

    def start(self) -> ApiServer:
        self.cache.start()
        handler = _handler_class(self)
        family = socket.AF_INET6 if ":" in self.options.host else socket.AF_INET

        class _Server(ThreadingHTTPServer):
            address_family = family
            daemon_threads = True
            allow_reuse_address = True

        self._httpd = _Server((self.options.host, self.options.port), handler)
        if self.cert is not None:
            # the handshake happens on the handler's thread, at its first read
            self._httpd.socket = self.cert.context().wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.1,), name="kubeapi", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        self.cache.close()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- dispatch -------------------------------------------------------------------

    def authorized(self, headers: dict[str, str]) -> bool:
        if not self.token:
            return True
        got = headers.get("authorization", "")
        return got.startswith("Bearer ") and hmac.compare_digest(got[7:].strip(), self.token)

    def handle(self, request: Request, alive: Any) -> Response | Stream:
        path = request.path.rstrip("/") or "/"
        parts = [unquote(p) for p in path.split("/") if p]
        if path in ("/healthz", "/livez", "/readyz"):
            return Response(200, "ok", "text/plain")
        if path == "/version":
            return Response(200, discovery.version_info())
        if path == "/api":
            return Response(200, discovery.api_versions(request.headers.get("host", "")))
        if path == "/apis":
            return Response(200, discovery.api_groups())
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi(parts[2:])
        if parts and parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts and parts[0] == "apis" and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        elif parts and parts[0] == "apis" and len(parts) == 2:
            for g in discovery.api_groups()["groups"]:
                if g["name"] == parts[1]:
                    return Response(200, {"kind": "APIGroup", "apiVersion": "v1", **g})
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            doc = discovery.api_resources(group, version)
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return Response(200, doc)
        scope = self._scope(group, version, rest)
        return self._verb(scope, request, alive)

    def _openapi(self, rest: list[str]) -> Response:
        if not rest:
            return Response(200, openapi.index_document())
        if rest[0] == "api" and len(rest) == 2:
            doc = openapi.gv_document("", rest[1])
        elif rest[0] == "apis" and len(rest) == 3:
            doc = openapi.gv_document(rest[1], rest[2])
        else:
            doc = None
        if doc is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return Response(200, doc)

    def _scope(self, group: str, version: str, rest: list[str]) -> Scope:
        namespace = ""
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        resource = lookup(group, version, rest[0])
        if resource is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace and not resource.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in resource.subresources:
            raise not_found(resource.group, f"{resource.plural}/{sub}", name)
        if resource.namespaced and name and not namespace:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return Scope(resource, namespace, name, sub)

    def _verb(self, scope: Scope, request: Request, alive: Any) -> Response | Stream:
        m = request.method
        if m == "GET":
            if parse_bool(request.query.get("watch")):
                return self.reads.watch(scope, request, alive)
            if scope.name:
                return self.reads.get(scope, request)
            return self.reads.list(scope, request)
        if m == "POST":
            if scope.subresource == "binding":
                return self.writes.bind(scope, request)
            if scope.name:
                raise ApiError(405, "MethodNotAllowed", "POST is not supported on an object")
            return self.writes.create(scope, request)
        if m == "PUT":
            return self.writes.update(scope, request)
        if m == "PATCH":
            return self.writes.patch(scope, request)
        if m == "DELETE":
            if scope.name:
                return self.writes.delete(scope, request)
            return self.writes.delete_collection(scope, request)
        raise ApiError(405, "MethodNotAllowed", f"method {m} is not supported")


def _failure(method: str, path: str, exc: Exception) -> Response:
    """The Status for a handler's exception: a fenced write (503, it says why), the
    store unreachable (503), or a bug (500, logged)."""
    if is_fenced_error(exc):
        return Response(503, fenced(str(exc)).status())
    if isinstance(exc, StoreError):
        return Response(503, status_object(503, "ServiceUnavailable", str(exc)))
    _log.exception("kubeapi: %s %s", method, path)
    return Response(
        500,
        status_object(
            500,
            "InternalError",
            f"an error on the server ({type(exc).__name__}: {exc}) has prevented the request from succeeding",
        ),
    )


def _handler_class(server: ApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out apart: no 40 ms stall
        server_version = "cluster-sched-kubeapi"

        def log_message(self, format: str, *args: Any) -> None:
            _log.debug("%s " + format, self.address_string(), *args)

        def _serve(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                length = int(headers.get("content-length") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY:
                self._reply(
                    Response(
                        413,
                        status_object(
                            413,
                            "RequestEntityTooLarge",
                            "request body too large or malformed Content-Length",
                        ),
                    )
                )
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else b""
            split = urlsplit(self.path)
            query = dict(parse_qsl(split.query, keep_blank_values=True))
            request = Request(self.command, split.path, query, headers, body)
            if not server.authorized(headers):
                self._reply(Response(401, status_object(401, "Unauthorized", "Unauthorized")))
                return
            try:
                result = server.handle(request, self._alive)
            except ApiError as err:
                result = Response(err.code, err.status())
            except Exception as exc:  # a handler bug must not take the server down
                result = _failure(self.command, self.path, exc)
            if isinstance(result, Stream):
                self._stream(result)
            else:
                self._reply(result)

        def _alive(self) -> bool:
            if server._closing.is_set():
                return False
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and isinstance(self.connection, ssl.SSLSocket):
                    return False  # a watching client sends nothing: this is its close
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return False
            except OSError:
                return False
            return True

        def _reply(self, response: Response) -> None:
            body = response.body
            if isinstance(body, bytes):
                data = body
            elif isinstance(body, str):
                data = body.encode()
            else:
                with gc_paused():  # a big list allocates no cycles worth collecting
                    data = dumps(body)
            self.send_response(response.code)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-cache, private")
            for warning in response.warnings:
                escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
                self.send_header("Warning", f'299 - "{escaped}"')  # a quoted-string
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, stream: Stream) -> None:
            self.send_response(200)
            self.send_header("Content-Type", stream.content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self.wfile.flush()
            try:
                for chunk in stream.chunks:
                    if not chunk:
                        if not self._alive():
                            break
                        continue
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except ApiError as err:  # raised while setting up (e.g. bad selector)
                data = json.dumps({"type": "ERROR", "object": err.status()}).encode() + b"\n"
                with contextlib.suppress(OSError):
                    self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            except OSError:
                pass
            except Exception:  # the store failed mid-watch: end this watch, not the server
                _log.exception("kubeapi: watch %s", self.path)
            self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler
