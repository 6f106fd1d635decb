"""db/columns.py describes every table and column of the schema, and docs/runs-database.md is written from it."""

from pathlib import Path

from db import open_db
from db.columns import TABLES, markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "runs-database.md"


def test_every_table_and_column_of_the_schema_is_described(tmp_path):
    db = open_db(tmp_path / "fresh.db")
    assert {t: [c.name for c in db[t].columns] for t in db.table_names()} == {
        t: list(table["columns"]) for t, table in TABLES.items()
    }
    assert all(text.strip() for table in TABLES.values() for text in [table["description"], *table["columns"].values()])


def test_the_schema_doc_is_written_from_the_descriptions():
    assert DOC.read_text() == markdown(), "run: python -m db.columns > docs/runs-database.md"
