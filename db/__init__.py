"""Run history in SQLite, through sqlite-utils: connection, schema migrations, queries."""

from db.connection import default_db_path, open_db

__all__ = ["default_db_path", "open_db"]
