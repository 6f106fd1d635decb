"""Published models (table `models`): one row per (name, version), written by the daemon, read by the service."""

from __future__ import annotations

from typing import Any

import sqlite_utils


def latest_versions(db: sqlite_utils.Database) -> dict[str, dict[str, Any]]:
    """name -> the row of its newest version."""
    rows = db.execute("select name, max(version) from models group by name").fetchall()
    return {name: db["models"].get((name, version)) for name, version in rows}


def versions(db: sqlite_utils.Database, name: str) -> list[dict[str, Any]]:
    """Every version of one model, oldest first ([] when the name is unknown)."""
    return list(db["models"].rows_where("name = ?", [name], order_by="version"))


def set_path(db: sqlite_utils.Database, name: str, version: int, path: str) -> None:
    db["models"].update((name, version), {"path": path})
