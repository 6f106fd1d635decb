import sqlite3

import pytest

from db import open_db
from db import runs
from db.schema import MIGRATIONS
from textclf.errors import DatabaseError


def test_schema_is_migrated_once_and_uses_wal(db_path):
    db = open_db(db_path)
    assert db.journal_mode == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert {"runs", "epochs", "phases"} <= set(db.table_names())
    open_db(db_path)  # second open: nothing to migrate, no error


def test_run_lifecycle(db_path):
    db = open_db(db_path)
    run_id = runs.start_run(db, corpus="c", settings={"epochs": 1}, versions={"jax": "x"})
    runs.add_epoch(db, run_id, epoch=1, loss=0.5, train_accuracy=0.9, eval_accuracy=0.8, seconds=1.0, docs_per_s=10.0)
    runs.add_phases(db, run_id, {"read": 0.1, "train": 1.0})
    runs.end_run(db, run_id, "finished", model_path="/m.npz", eval_accuracy=0.8)
    run = runs.get_run(db, run_id)
    assert run["status"] == "finished" and run["settings"] == {"epochs": 1}
    assert run["epochs"][0]["loss"] == 0.5 and run["phases"] == {"read": 0.1, "train": 1.0}
    assert runs.latest_model_path(db) == "/m.npz"
    assert [r["id"] for r in runs.list_runs(db)] == [run_id]


def test_missing_run(db_path):
    with pytest.raises(DatabaseError, match="run 99 does not exist"):
        runs.get_run(open_db(db_path), 99)


def test_locked_database_gives_a_clear_error(db_path):
    open_db(db_path)
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer holds the lock
    try:
        with pytest.raises(DatabaseError, match="locked by another writer"):
            runs.start_run(open_db(db_path), corpus="c")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert runs.list_runs(open_db(db_path)) == []  # nothing half-written


def test_newer_schema_is_refused(db_path):
    open_db(db_path)
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseError, match="newer than this textclf knows"):
        open_db(db_path)


def test_not_a_database(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DatabaseError, match="not a SQLite database"):
        open_db(path)
