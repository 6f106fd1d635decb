"""Queries on the run history. Every write is one short transaction (db.connection.write_transaction)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import sqlite_utils

from db.connection import write_transaction
from db.errors import DatabaseError

JSON_COLUMNS = ("settings", "versions", "skipped", "labels", "search", "early_stopping")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def start_run(db: sqlite_utils.Database, **fields: Any) -> int:
    record = {"status": "running", "started_at": now(), **_encode(fields)}
    return write_transaction(db, lambda: db["runs"].insert(record).last_pk)


def update_run(db: sqlite_utils.Database, run_id: int, **fields: Any) -> None:
    write_transaction(db, lambda: db["runs"].update(run_id, _encode(fields)))


def end_run(db: sqlite_utils.Database, run_id: int, status: str, **fields: Any) -> None:
    """Mark a run finished, failed or interrupted, with its end time."""
    assert status in ("finished", "failed", "interrupted")
    update_run(db, run_id, status=status, ended_at=now(), **fields)


def running_runs(db: sqlite_utils.Database) -> list[dict]:
    """Runs recorded as running, oldest first."""
    return [_decode(r) for r in db["runs"].rows_where("status = 'running'", order_by="id")]


def runs_of_job(db: sqlite_utils.Database, job_id: int) -> list[dict]:
    """Every run of one daemon job, oldest first."""
    return [_decode(r) for r in db["runs"].rows_where("job_id = ?", [job_id], order_by="id")]


def add_epoch(db: sqlite_utils.Database, run_id: int, **fields: Any) -> None:
    write_transaction(db, lambda: db["epochs"].insert({"run_id": run_id, **fields}, replace=True))


def add_phases(db: sqlite_utils.Database, run_id: int, phases: dict[str, float]) -> None:
    rows = [{"run_id": run_id, "phase": name, "seconds": seconds} for name, seconds in phases.items()]
    write_transaction(db, lambda: db["phases"].insert_all(rows, replace=True))


def _encode(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: json.dumps(v) if k in JSON_COLUMNS and not isinstance(v, str) else v for k, v in fields.items()}


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    for key in JSON_COLUMNS:
        if isinstance(row.get(key), str):
            row[key] = json.loads(row[key])
    return row


def list_runs(db: sqlite_utils.Database, limit: int | None = None, status: str | None = None) -> list[dict]:
    where, args = ("status = ?", [status]) if status else (None, [])
    return [_decode(r) for r in db["runs"].rows_where(where, args, order_by="id desc", limit=limit)]


def get_run(db: sqlite_utils.Database, run_id: int) -> dict:
    try:
        run = _decode(db["runs"].get(run_id))
    except sqlite_utils.db.NotFoundError:
        raise DatabaseError(f"run {run_id} does not exist: see 'textclf runs list' for run ids") from None
    run["epochs"] = list(db["epochs"].rows_where("run_id = ?", [run_id], order_by="epoch"))
    run["phases"] = {r["phase"]: r["seconds"] for r in db["phases"].rows_where("run_id = ?", [run_id])}
    run["search_trials"] = search_trials(db, run_id)
    return run


def add_search_trials(db: sqlite_utils.Database, run_id: int, trials: list[dict[str, Any]]) -> None:
    """trials: {candidate, fold, settings (dict), epoch_accuracies (list), seconds} each."""
    rows = [{"run_id": run_id, **t, "settings": json.dumps(t["settings"]),
             "epoch_accuracies": json.dumps(t["epoch_accuracies"])} for t in trials]
    write_transaction(db, lambda: db["search_trials"].insert_all(rows))


def search_trials(db: sqlite_utils.Database, run_id: int) -> list[dict[str, Any]]:
    rows = db["search_trials"].rows_where("run_id = ?", [run_id], order_by="candidate, fold")
    return [{**r, "settings": json.loads(r["settings"]), "epoch_accuracies": json.loads(r["epoch_accuracies"])}
            for r in rows]


def latest_model_path(db: sqlite_utils.Database) -> str | None:
    rows = list(db["runs"].rows_where("status = 'finished' and model_path is not null", order_by="id desc", limit=1))
    return rows[0]["model_path"] if rows else None


def add_bench_result(db: sqlite_utils.Database, bench_id: str, result: dict[str, Any]) -> None:
    """One (task, tool) row of a `textclf bench` invocation."""
    row = {"bench_id": bench_id, "created_at": now(), **{k: v for k, v in result.items() if k != "notes"},
           "settings": json.dumps({"notes": result.get("notes", "")})}
    write_transaction(db, lambda: db["bench_results"].insert(row))


def bench_results(db: sqlite_utils.Database, bench_id: str) -> list[dict[str, Any]]:
    return list(db["bench_results"].rows_where("bench_id = ?", [bench_id], order_by="id"))
