"""Run history in SQLite, through sqlite-utils: connection, schema migrations, queries.

`open_db` is imported on first use: sqlite-utils (db/sqlite.py) takes ~0.1 s to import, which a command
that only reads db.errors (every command's error handling) must not pay."""

__all__ = ["open_db"]


def __getattr__(name: str):
    if name == "open_db":
        from db.connection import open_db

        return open_db
    raise AttributeError(f"module 'db' has no attribute {name!r}")
