"""Opening the run database: default location, WAL, busy timeout, migrations.

WAL lets readers (runs list, the service) work while a writer (train, the daemon) commits; the busy timeout
makes a second writer wait for the lock instead of failing at once. TEXTCLF_DB_TIMEOUT (seconds) sets it.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from db.sqlite import sqlite_utils

from db.schema import migrate
from db.errors import DatabaseError

DEFAULT_TIMEOUT_S = 10.0


def db_timeout() -> float:
    """TEXTCLF_DB_TIMEOUT in seconds (default DEFAULT_TIMEOUT_S); a value that is not a number >= 0 is refused."""
    raw = os.environ.get("TEXTCLF_DB_TIMEOUT", "")
    if not raw.strip():
        return DEFAULT_TIMEOUT_S
    try:
        timeout = float(raw)
    except ValueError:
        timeout = -1.0
    if not 0 <= timeout < float("inf"):
        raise DatabaseError(f"TEXTCLF_DB_TIMEOUT={raw!r} is not a number of seconds: set e.g. 10, or unset it")
    return timeout


def open_db(path: str | Path) -> sqlite_utils.Database:
    """Open (creating and migrating as needed) the run database at `path` (":memory:" for a throwaway one)."""
    path = Path(path)
    timeout = db_timeout()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        db = sqlite_utils.Database(conn)
        db.textclf_path = path  # for error messages
        if db.journal_mode != "wal":
            db.enable_wal()
        migrate(db)
    except sqlite3.DatabaseError as exc:  # OperationalError (locked) and 'file is not a database'
        raise db_error(path, exc) from None
    except OSError as exc:
        raise DatabaseError(f"run database '{path}' cannot be created ({exc.strerror}): pass a writable --db") from None
    return db


def db_error(path, exc: sqlite3.Error) -> DatabaseError:
    message = str(exc).lower()
    if "locked" in message or "busy" in message:
        return DatabaseError(
            f"run database '{path}' is locked by another writer: wait for it to finish and retry, "
            "or raise TEXTCLF_DB_TIMEOUT, or pass another --db"
        )
    if "not a database" in message or "malformed" in message:
        return DatabaseError(f"run database '{path}' is not a SQLite database or is damaged: pass another --db")
    return DatabaseError(f"run database '{path}' failed ({message}): check the file and its folder are writable")


def write_transaction(db: sqlite_utils.Database, fn):
    """Run fn inside one write transaction taken up front (BEGIN IMMEDIATE): a second writer waits for the
    busy timeout instead of failing half-way, and a locked DB surfaces as DatabaseError."""
    try:
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn()
        except BaseException:
            db.conn.execute("ROLLBACK")
            raise
        db.conn.execute("COMMIT")
        return result
    except sqlite3.OperationalError as exc:
        raise db_error(getattr(db, "textclf_path", "(in memory)"), exc) from None
