"""Published models (table `models`): one row per (name, version), written by the daemon, read by the service."""

from __future__ import annotations

import json
from typing import Any

from db.sqlite import sqlite_utils


def latest_versions(db: sqlite_utils.Database) -> dict[str, dict[str, Any]]:
    """name -> the row of its newest version."""
    rows = db.execute("select name, max(version) from models group by name").fetchall()
    return {name: _decoded(db["models"].get((name, version))) for name, version in rows}


def versions(db: sqlite_utils.Database, name: str) -> list[dict[str, Any]]:
    """Every version of one model, oldest first ([] when the name is unknown)."""
    return [_decoded(row) for row in db["models"].rows_where("name = ?", [name], order_by="version")]


def get_version(db: sqlite_utils.Database, name: str, version: int | None = None) -> dict[str, Any] | None:
    """The row of one version of a model (None: its newest), or None when there is no such version."""
    if version is None:
        return latest_versions(db).get(name)
    rows = list(db["models"].rows_where("name = ? and version = ?", [name, version]))
    return _decoded(rows[0]) if rows else None


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A models row with its labels as a list (stored as JSON, as the runs table stores them)."""
    return {**row, "labels": json.loads(row["labels"]) if row.get("labels") else None}


def version_of_job(db: sqlite_utils.Database, job_id: int) -> dict[str, Any] | None:
    """The version a daemon job published (None: it published none)."""
    rows = list(db["models"].rows_where("job_id = ?", [job_id]))
    return _decoded(rows[0]) if rows else None


def set_path(db: sqlite_utils.Database, name: str, version: int, path: str) -> None:
    db["models"].update((name, version), {"path": path})
