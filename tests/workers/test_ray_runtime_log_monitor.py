"""A private Ray started by ``ensure_ray`` runs its log monitor with ``LOG_MONITOR_ENV``
(new log files looked for every 5 s, not ten times a second), unless the environment
chose. Runs in a child process: the log monitor reads its settings when Ray starts it,
from the environment it inherits from the driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from workers.ray_runtime import LOG_MONITOR_ENV

PROBE = """
import json, psutil, ray
from workers.ray_runtime import ensure_ray
ensure_ray()
monitors = [
    p for p in psutil.Process().children(recursive=True)
    if any("log_monitor" in part for part in p.cmdline())
]
print(json.dumps([{k: p.environ().get(k) for k in %r} for p in monitors]))
ray.shutdown()
"""

REPO = Path(__file__).resolve().parents[2]


def _log_monitor_env(home: Path, **extra: str) -> list[dict[str, str | None]]:
    """Each log monitor's values of ``LOG_MONITOR_ENV``'s names, in a child process
    whose environment sets none of them but ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RAY_ADDRESS") and k not in LOG_MONITOR_ENV
    }
    paths = [str(REPO), env.get("PYTHONPATH", "")]
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join(p for p in paths if p), **extra)
    probe = subprocess.run(
        [sys.executable, "-c", PROBE % (sorted(LOG_MONITOR_ENV),)],
        capture_output=True, text=True, timeout=240, check=False, env=env,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-3000:]
    return list(json.loads(probe.stdout.strip().splitlines()[-1]))


def test_a_private_rays_log_monitor_looks_for_new_files_every_few_seconds(
    tmp_path: Path,
) -> None:
    assert LOG_MONITOR_ENV == {
        "RAY_LOG_MONITOR_MANY_FILES_THRESHOLD": "0",
        "LOG_NAME_UPDATE_INTERVAL_S": "5",
    }
    assert _log_monitor_env(tmp_path) == [dict(LOG_MONITOR_ENV)]


def test_the_environment_chooses_the_log_monitors_interval(tmp_path: Path) -> None:
    got = _log_monitor_env(tmp_path, LOG_NAME_UPDATE_INTERVAL_S="0.5")
    assert got == [{**LOG_MONITOR_ENV, "LOG_NAME_UPDATE_INTERVAL_S": "0.5"}]
