"""Which process owns a running run, and whether it is still there.

A run is marked `running` when it starts and `finished` / `failed` / `interrupted` when it ends; a process killed
with SIGKILL (or a power cut) ends nothing. So every run records its owner (host, pid, and the process's start
time, because a pid is reused) and `reap_orphaned_runs` marks the running runs of this host whose owner is gone
as interrupted: `textclf runs list/show` and the daemon call it. Runs owned by other hosts are left alone (their
processes cannot be checked from here); their `heartbeat_at` says when they last showed life.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from db import runs as run_queries


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux /proc), '' where there is no /proc, None when
    there is no such process."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            # Field 22; the command name (field 2) may hold spaces, so count from its closing parenthesis.
            return stat.read_text().rsplit(")", 1)[1].split()[19]
        except (OSError, IndexError):
            return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, owned by someone else
    return ""


def this_owner() -> dict:
    """The owner fields of a run started by this process."""
    return {"owner_host": socket.gethostname(), "owner_pid": os.getpid(), "owner_started": _start_time(os.getpid())}


def owner_gone(run: dict) -> bool:
    """True when the run's owner ran on this host and its process is no longer there."""
    if run.get("owner_host") != socket.gethostname() or not run.get("owner_pid"):
        return False
    started = _start_time(run["owner_pid"])
    return started is None or (bool(run.get("owner_started")) and bool(started) and started != run["owner_started"])


def reap_orphaned_runs(db) -> list[int]:
    """Mark this host's running runs whose process is gone as interrupted; -> their ids."""
    reaped = []
    for run in run_queries.running_runs(db):
        if owner_gone(run):
            run_queries.end_run(db, run["id"], "interrupted",
                                error=f"its process (pid {run['owner_pid']} on {run['owner_host']}) ended without "
                                      f"recording an end (killed or crashed); found at {run_queries.now()}")
            reaped.append(run["id"])
    return reaped
