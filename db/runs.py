"""Queries on the run history. Every write is one short transaction (db.connection.write_transaction)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from db.sqlite import sqlite_utils

from db.connection import write_transaction
from db.errors import DatabaseError

JSON_COLUMNS = ("thresholds", "settings", "versions", "skipped", "labels", "search", "early_stopping", "plan")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class PathClaimed(DatabaseError):
    pass


def start_run(db: sqlite_utils.Database, **fields: Any) -> int:
    """A new running run. A `model_path` among the fields is claimed: no other running run may be writing the same
    file (checked and recorded in one transaction, so two runs cannot both take it)."""
    record = {"status": "running", "started_at": now(), **_encode(fields)}

    def insert() -> int:
        if fields.get("model_path"):
            holder = db.execute(
                "select id from runs where status = 'running' and model_path = ?", [fields["model_path"]]
            ).fetchone()
            if holder:
                raise PathClaimed(
                    f"--out '{fields['model_path']}' is being written by run {holder[0]}, still "
                    "running: name another file, or wait for it to end"
                )
        return db["runs"].insert(record).last_pk

    return write_transaction(db, insert)


def update_run(db: sqlite_utils.Database, run_id: int, **fields: Any) -> None:
    write_transaction(db, lambda: db["runs"].update(run_id, _encode(fields)))


def end_run(db: sqlite_utils.Database, run_id: int, status: str, **fields: Any) -> None:
    """Mark a run finished, failed, interrupted or planned (`textclf train --plan-only`: searched and planned,
    not trained), with its end time."""
    assert status in ("finished", "failed", "interrupted", "planned")
    update_run(db, run_id, status=status, ended_at=now(), **fields)


def running_runs(db: sqlite_utils.Database) -> list[dict]:
    """Runs recorded as running, oldest first."""
    return [_decode(r) for r in db["runs"].rows_where("status = 'running'", order_by="id")]


def runs_of_job(db: sqlite_utils.Database, job_id: int) -> list[dict]:
    """Every run of one daemon job, oldest first."""
    return [_decode(r) for r in db["runs"].rows_where("job_id = ?", [job_id], order_by="id")]


def add_epoch(db: sqlite_utils.Database, run_id: int, **fields: Any) -> None:
    add_epochs(db, run_id, [fields])


def add_epochs(db: sqlite_utils.Database, run_id: int, epochs: list[dict[str, Any]]) -> None:
    """Epoch rows of a run, written in one transaction."""
    rows = [{"run_id": run_id, **fields} for fields in epochs]
    write_transaction(db, lambda: db["epochs"].insert_all(rows, replace=True))


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
        if not 0 <= run_id < 2**63:  # SQLite's integers: a larger id would overflow the query, not miss
            raise sqlite_utils.db.NotFoundError
        run = _decode(db["runs"].get(run_id))
    except sqlite_utils.db.NotFoundError:
        raise DatabaseError(f"run {run_id} does not exist: see 'textclf runs list' for run ids") from None
    run["epochs"] = list(db["epochs"].rows_where("run_id = ?", [run_id], order_by="epoch"))
    run["phases"] = {r["phase"]: r["seconds"] for r in db["phases"].rows_where("run_id = ?", [run_id])}
    run["search_trials"] = search_trials(db, run_id)
    return run


def add_search_trials(db: sqlite_utils.Database, run_id: int, trials: list[dict[str, Any]]) -> None:
    """trials: {candidate, fold, settings (dict), epoch_accuracies (list), seconds} each."""
    rows = [
        {
            "run_id": run_id,
            **t,
            "settings": json.dumps(t["settings"]),
            "epoch_accuracies": json.dumps(t["epoch_accuracies"]),
        }
        for t in trials
    ]
    write_transaction(db, lambda: db["search_trials"].insert_all(rows))


def search_trials(db: sqlite_utils.Database, run_id: int) -> list[dict[str, Any]]:
    rows = db["search_trials"].rows_where("run_id = ?", [run_id], order_by="candidate, fold")
    return [
        {**r, "settings": json.loads(r["settings"]), "epoch_accuracies": json.loads(r["epoch_accuracies"])}
        for r in rows
    ]


def save_search(
    db: sqlite_utils.Database, key: str, run_id: int, settings: dict[str, Any], summary: dict[str, Any]
) -> None:
    """Record a finished search's choice under its key (replacing an older one of the same key)."""
    row = {
        "key": key,
        "run_id": run_id,
        "created_at": now(),
        "settings": json.dumps(settings),
        "summary": json.dumps(summary),
    }
    write_transaction(db, lambda: db["searches"].insert(row, replace=True))


def record_rate_choice(
    db: sqlite_utils.Database, key: str, settings: dict[str, Any], rate_choice: dict[str, Any]
) -> None:
    """The final training's choice among a recorded search's rate candidates: its settings become the recorded
    choice, and the candidates give way to the choice (a run reusing it has nothing left to choose)."""

    def update() -> None:
        rows = list(db["searches"].rows_where("key = ?", [key]))
        if rows:
            summary = {k: v for k, v in json.loads(rows[0]["summary"]).items() if k != "rate_candidates"}
            db["searches"].update(
                key, {"settings": json.dumps(settings), "summary": json.dumps({**summary, "rate_choice": rate_choice})}
            )

    write_transaction(db, update)


def find_search(db: sqlite_utils.Database, key: str) -> dict[str, Any] | None:
    """The search recorded under `key`: {key, run_id, created_at, settings, summary}, or None."""
    rows = list(db["searches"].rows_where("key = ?", [key]))
    if not rows:
        return None
    return {**rows[0], "settings": json.loads(rows[0]["settings"]), "summary": json.loads(rows[0]["summary"])}


def latest_model_path(db: sqlite_utils.Database) -> str | None:
    rows = list(db["runs"].rows_where("status = 'finished' and model_path is not null", order_by="id desc", limit=1))
    return rows[0]["model_path"] if rows else None


def add_bench_result(db: sqlite_utils.Database, bench_id: str, result: dict[str, Any]) -> None:
    """One (task, tool) row of a `textclf bench` invocation."""
    row = {
        "bench_id": bench_id,
        "created_at": now(),
        **{k: v for k, v in result.items() if k != "notes"},
        "settings": json.dumps({"notes": result.get("notes", "")}),
    }
    write_transaction(db, lambda: db["bench_results"].insert(row))


def bench_results(db: sqlite_utils.Database, bench_id: str) -> list[dict[str, Any]]:
    return list(db["bench_results"].rows_where("bench_id = ?", [bench_id], order_by="id"))
