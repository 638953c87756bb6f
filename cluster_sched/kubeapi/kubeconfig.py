"""A kubeconfig for the API, so kubectl and client libraries need only ``--kubeconfig``."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml  # type: ignore[import-untyped, unused-ignore]

__all__ = ["CONTEXT", "write_kubeconfig"]

#: The cluster, user and context name in the written kubeconfig.
CONTEXT = "cluster-sched"


def write_kubeconfig(
    path: str | os.PathLike[str], server: str, token: str | None, ca_pem: bytes | None = None
) -> Path:
    """Write (0600: it holds the token) a kubeconfig pointing at ``server``, trusting
    ``ca_pem`` (the server's self-signed certificate) for HTTPS."""
    user: dict[str, str] = {"token": token} if token else {}
    cluster: dict[str, str] = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)
    return out
