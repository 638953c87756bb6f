"""A private Ray started by ``ensure_ray`` authenticates with a token unless told not to.

Runs in a child process with no RAY_AUTH_* variables and a private HOME, so what it
shows is the default a user gets: token mode, a token of that process only (nothing
written to ``~/.ray``), and tasks that still run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, os, ray
from workers.ray_runtime import ensure_ray
ensure_ray()
from ray._raylet import AuthenticationMode, get_authentication_mode
answer = ray.get(ray.remote(lambda: os.environ.get("RAY_AUTH_MODE")).remote())
print(json.dumps({
    "driver": get_authentication_mode() == AuthenticationMode.TOKEN,
    "worker": answer,
    "token": len(os.environ.get("RAY_AUTH_TOKEN", "")),
}))
ray.shutdown()
"""

REPO = Path(__file__).resolve().parents[2]


def _child_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    paths = [str(REPO), env.get("PYTHONPATH", "")]
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join(p for p in paths if p), **extra)
    return env


def test_a_private_ray_uses_token_auth_by_default(tmp_path: Path) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True, text=True, timeout=240, check=False, env=_child_env(tmp_path),
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-3000:]
    answer = json.loads(probe.stdout.strip().splitlines()[-1])
    assert answer == {"driver": True, "worker": "token", "token": 64}
    assert not (tmp_path / ".ray" / "auth_token").exists()
