"""The training job queue. Claims run inside BEGIN IMMEDIATE, so two daemons sharing one DB never take the
same job: SQLite lets one writer in at a time, and the second sees the first's claim.

A running job whose heartbeat is older than `stale_after` seconds belongs to a daemon that died (kill -9,
power loss): the next claim takes it over and training resumes from the job's checkpoint, or fails the job
once it has used `max_attempts` claims.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from db.sqlite import sqlite_utils

from db.connection import write_transaction
from db.runs import now
from db.errors import DatabaseError, InvalidName, StateError

# A name becomes a folder (<data dir>/models/<name>/v<N>.textclf.npz): letters, digits, '.', '_' and '-', not
# starting with a dot, at most 64 characters. No separators, no "..", no NUL: it cannot leave its folder.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_name(name: object) -> str:
    """`name` if it is a safe model name, else InvalidName naming it and the rule."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidName(
            f"model name {name!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def submit(
    db: sqlite_utils.Database,
    corpus: str,
    settings: dict,
    name: str,
    test_corpus: str | None = None,
    max_attempts: int = 3,
    data_root: str | None = None,
) -> int:
    """Queue a job; data_root: the folder its corpora must be read from (every link resolved), if any."""
    record = {
        "status": "queued",
        "name": check_name(name),
        "corpus": corpus,
        "test_corpus": test_corpus,
        "settings": json.dumps(settings),
        "max_attempts": max_attempts,
        "created_at": now(),
        "data_root": data_root,
    }
    return write_transaction(db, lambda: db["jobs"].insert(record).last_pk)


def get(db: sqlite_utils.Database, job_id: int) -> dict[str, Any]:
    try:
        if not 0 <= job_id < 2**63:  # SQLite's integers: a larger id would overflow the query, not miss
            raise sqlite_utils.db.NotFoundError
        job = db["jobs"].get(job_id)
    except sqlite_utils.db.NotFoundError:
        raise JobNotFound(f"job {job_id} does not exist: see 'textclf jobs list' for job ids") from None
    job["settings"] = json.loads(job["settings"])
    return job


def list_jobs(db: sqlite_utils.Database, limit: int = 20, status: str | None = None) -> list[dict]:
    where, args = ("status = ?", [status]) if status else (None, [])
    rows = list(db["jobs"].rows_where(where, args, order_by="id desc", limit=limit))
    for row in rows:
        row["settings"] = json.loads(row["settings"])
    return rows


def cancel(db: sqlite_utils.Database, job_id: int) -> str:
    """Cancel a queued job at once, ask a running one to stop after its current epoch. Returns the new state."""

    def change():
        job = get(db, job_id)
        if job["status"] == "queued":
            db["jobs"].update(job_id, {"status": "cancelled", "ended_at": now(), "error": "cancelled before it ran"})
            return "cancelled"
        if job["status"] == "running":
            db["jobs"].update(job_id, {"cancel_requested": 1})
            return "cancelling"
        raise JobStateError(f"job {job_id} is {job['status']} and cannot be cancelled")

    return write_transaction(db, change)


def claim(db: sqlite_utils.Database, worker: str, stale_after: float) -> dict | None:
    """Take the oldest queued job, or a running job whose holder stopped heartbeating; None if none."""

    def take():
        cutoff = time.time() - stale_after
        while True:
            rows = db.execute(
                "select id, attempts, max_attempts, status from jobs where status = 'queued' "
                "or (status = 'running' and heartbeat < ?) order by id limit 1",
                [cutoff],
            ).fetchall()
            if not rows:
                return None
            job_id, attempts, max_attempts, status = rows[0]
            # A job whose run finished is only to be ended (published or held), which costs no training: it is
            # handed out however often its daemons died, never failed with its model written.
            trained = db.execute("select 1 from runs where job_id = ? and status = 'finished'", [job_id]).fetchone()
            if status == "running" and attempts >= max_attempts and not trained:
                db["jobs"].update(
                    job_id,
                    {
                        "status": "failed",
                        "ended_at": now(),
                        "error": f"its daemon stopped heartbeating {attempts} times "
                        f"(max_attempts {max_attempts}); last holder gone",
                    },
                )
                continue
            db["jobs"].update(
                job_id,
                {
                    "status": "running",
                    "worker": worker,
                    "heartbeat": time.time(),
                    "attempts": attempts + 1,
                    "started_at": now(),
                },
            )
            return get(db, job_id)

    return write_transaction(db, take)


def heartbeat(db: sqlite_utils.Database, job_id: int, worker: str) -> bool:
    """Refresh the job's heartbeat if this worker still holds it; False if it lost the job."""
    cursor = db.execute(
        "update jobs set heartbeat = ? where id = ? and worker = ? and status = 'running'",
        [time.time(), job_id, worker],
    )
    return cursor.rowcount == 1


def cancel_requested(db: sqlite_utils.Database, job_id: int) -> bool:
    return bool(db.execute("select cancel_requested from jobs where id = ?", [job_id]).fetchone()[0])


def finish(db: sqlite_utils.Database, job_id: int, status: str, **fields: Any) -> None:
    # held: trained, but its model was not published (the daemon's publish gate; the error says why)
    assert status in ("succeeded", "failed", "cancelled", "held")
    write_transaction(db, lambda: db["jobs"].update(job_id, {"status": status, "ended_at": now(), **fields}))


def requeue(db: sqlite_utils.Database, job_id: int) -> None:
    """Give a job back (daemon shutting down): its attempt does not count."""
    write_transaction(
        db,
        lambda: db.execute(
            "update jobs set status = 'queued', worker = null, heartbeat = null, attempts = max(attempts - 1, 0) "
            "where id = ?",
            [job_id],
        ),
    )


def publish_model(db: sqlite_utils.Database, name: str, **fields: Any) -> int:
    """Add the next version of model `name`; returns the version number."""

    def insert():
        latest = db.execute("select coalesce(max(version), 0) from models where name = ?", [name]).fetchone()[0]
        db["models"].insert({"name": name, "version": latest + 1, "created_at": now(), **fields})
        return latest + 1

    return write_transaction(db, insert)


class JobNotFound(DatabaseError):
    pass


class JobStateError(StateError):
    pass
