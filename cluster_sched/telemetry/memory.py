"""Peak memory of the processes of a run: the coordinator and its Redis server.

Scale evaluations are bounded by memory as much as by time (a million nodes and pods),
so every run reports what each process held at its peak. Linux's VmHWM (the resident
set's high-water mark) is read from /proc; Redis reports its own peak allocation, and its
process's VmHWM when it runs on this machine.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

__all__ = ["peak_rss_bytes", "redis_memory"]


def peak_rss_bytes(pid: int | None = None) -> int | None:
    """Peak resident set of ``pid`` (default: this process) in bytes; None if unknown."""
    path = Path(f"/proc/{pid if pid is not None else 'self'}/status")
    try:
        for line in path.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if pid is None or pid == os.getpid():
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    return None


def redis_memory(client: Any) -> dict[str, int | None]:
    """The Redis server's peak allocation (INFO memory) and, when the server is a
    process of this machine, its peak resident set."""
    try:
        memory = client.info("memory")
        server = client.info("server")
    except Exception:
        return {"redis_used_memory_peak_bytes": None, "redis_peak_rss_bytes": None}
    pid = server.get("process_id")
    local = server.get("executable") and isinstance(pid, int) and Path(f"/proc/{pid}").exists()
    return {
        "redis_used_memory_peak_bytes": int(memory.get("used_memory_peak", 0)) or None,
        "redis_peak_rss_bytes": peak_rss_bytes(pid) if local else None,
    }
