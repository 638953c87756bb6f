"""The API in its own process: ``python -m cluster_sched.kubeapi.process``.

``serve --api`` and ``run --api`` start the API beside the coordinator, not inside it: it
needs nothing but the store's Redis URL (it is a view of the store), and in its own
process its JSON encoding and watch fan-out never take the coordinator's GIL. The child
prints one JSON line (``{"api": URL, "kubeconfig": PATH}``) once it listens, and exits
when its stdin closes (the parent ended, however it ended) or on SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from cluster_sched.errors import UsageError
from cluster_sched.redis_server import ENV_REDIS_URL

__all__ = ["api_process", "main"]

#: How long the parent waits for the child to listen (it imports the package first).
START_TIMEOUT = 120.0


def main(argv: list[str] | None = None) -> int:
    from cluster_sched.kubeapi.server import ApiServer, ApiServerOptions
    from cluster_sched.redis_server import connect, resolve_url
    from cluster_sched.store.store import Store

    p = argparse.ArgumentParser(prog="python -m cluster_sched.kubeapi.process")
    p.add_argument("--redis", default=None, help="default: $CLUSTER_SCHED_REDIS_URL")
    p.add_argument("--prefix", default="{cs}")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--no-auth", action="store_true")
    p.add_argument("--kubeconfig", default=None)
    args = p.parse_args(argv)
    store = Store(connect(resolve_url(args.redis)), prefix=args.prefix)
    options = ApiServerOptions(host=args.host, port=args.port, no_auth=args.no_auth)
    try:
        server = ApiServer(store, options).start()
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when Ctrl-C ends us
    shown = {"api": server.url}
    if args.kubeconfig:
        shown["kubeconfig"] = server.write_kubeconfig(args.kubeconfig)
    print(json.dumps(shown), flush=True)

    def until_stdin_closes() -> None:
        sys.stdin.read()
        done.set()

    watcher = threading.Thread(target=until_stdin_closes, daemon=True)
    watcher.start()
    done.wait()
    server.close()
    return 0


@contextlib.contextmanager
def api_process(
    redis_url: str, prefix: str, host: str, port: int, *, no_auth: bool, kubeconfig: str | None
) -> Iterator[dict[str, Any]]:
    """Run the API in a child process for the block; yields its announcement."""
    argv = [sys.executable, "-m", "cluster_sched.kubeapi.process",
            "--prefix", prefix, "--host", host, "--port", str(port)]  # fmt: skip
    if no_auth:
        argv.append("--no-auth")
    if kubeconfig:
        argv += ["--kubeconfig", kubeconfig]
    # stderr to a file: a pipe nobody drains could block the child
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env={**os.environ, ENV_REDIS_URL: redis_url},  # not in argv: ps shows argv
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line:
                proc.wait()
                errors.seek(0)
                err = errors.read().strip().splitlines()
                why = err[-1] if err else f"exit code {proc.returncode}"
                raise UsageError(f"--api {host}:{port}: the API did not start: {why}")
            yield json.loads(line)
        finally:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    sys.exit(main())
