"""Which process owns a running run, and whether it is still there.

A run is marked `running` when it starts and `finished` / `failed` / `interrupted` when it ends; a process killed
with SIGKILL (or a power cut) ends nothing. So every run records its owner (host, pid, and the process's start
time, because a pid is reused) and a heartbeat (RunHeartbeat: every HEARTBEAT_SECONDS, from a thread, in every
phase), and `reap_orphaned_runs` marks as interrupted the running runs of this host whose owner is gone, and
those of other hosts (whose processes cannot be checked from here) with no heartbeat for STALE_SECONDS:
`textclf runs list/show` and the daemon call it.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path

from db import open_db
from db import runs as run_queries
from db.errors import DatabaseError

HEARTBEAT_SECONDS = 5.0
# A run of another host is taken for dead after this long without a heartbeat: 120 missed beats, so that a
# machine under heavy load, or a database locked for minutes by another writer, is not declared dead.
STALE_SECONDS = 600.0


class RunHeartbeat(threading.Thread):
    """Writes the run's heartbeat_at every HEARTBEAT_SECONDS from its own connection until stop(); a locked
    database skips a beat. A thread, so that reading, vectorizing and the search (minutes on a large corpus,
    no epoch in them) beat too."""

    def __init__(self, db_path: Path, run_id: int):
        super().__init__(daemon=True, name=f"run-{run_id}-heartbeat")
        self.db_path, self.run_id, self.seconds = db_path, run_id, HEARTBEAT_SECONDS
        self.stopped = threading.Event()

    def run(self) -> None:
        db = open_db(self.db_path)
        while not self.stopped.wait(self.seconds):
            try:
                run_queries.update_run(db, self.run_id, heartbeat_at=run_queries.now())
            except DatabaseError:
                pass  # locked: the next beat

    def stop(self) -> None:
        self.stopped.set()
        if self.ident is not None:  # a run that failed before its warm-up never started it
            self.join()


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


def silent_for(run: dict) -> float | None:
    """Seconds since the run's last heartbeat (None: it has none recorded)."""
    try:
        beat = datetime.fromisoformat(run.get("heartbeat_at") or "")
    except ValueError:
        return None
    return (datetime.now(timezone.utc) - beat).total_seconds()


def reap_orphaned_runs(db) -> list[int]:
    """Mark as interrupted this host's running runs whose process is gone, and other hosts' running runs with no
    heartbeat for STALE_SECONDS; -> their ids."""
    reaped = []
    for run in run_queries.running_runs(db):
        silent = silent_for(run)
        if owner_gone(run):
            error = (
                f"its process (pid {run['owner_pid']} on {run['owner_host']}) ended without recording an end "
                f"(killed or crashed); found at {run_queries.now()}"
            )
        elif (
            run.get("owner_host")
            and run["owner_host"] != socket.gethostname()
            and silent is not None
            and silent > STALE_SECONDS
        ):
            error = (
                f"no heartbeat from its process (pid {run['owner_pid']} on {run['owner_host']}) since "
                f"{run['heartbeat_at']} ({silent / 60:.0f} minutes; it beats every {HEARTBEAT_SECONDS:.0f} s): "
                f"taken for killed or cut off; found at {run_queries.now()}"
            )
        else:
            continue
        try:
            run_queries.end_run(db, run["id"], "interrupted", error=error)
        except (DatabaseError, sqlite3.DatabaseError):  # a full disk or a read-only database: reaped next time
            continue
        reaped.append(run["id"])
    return reaped
