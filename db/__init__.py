"""Run history in SQLite, through sqlite-utils: connection, schema migrations, queries."""

from db.connection import open_db

__all__ = ["open_db"]
