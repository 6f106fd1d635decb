"""db/sqlite.py: sqlite-utils imported without pandas, and pandas left importable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_opening_the_run_database_does_not_import_pandas_and_leaves_it_importable(tmp_path):
    pytest.importorskip("pandas", reason="pandas is not installed here: nothing to leave out")
    code = (
        "import sys\nfrom db.connection import open_db\n"
        f"db = open_db({str(tmp_path / 'runs.db')!r})\n"
        "print('pandas' in sys.modules, 'runs' in db.table_names())\n"
        "import pandas\nprint(type(pandas.DataFrame()).__name__)"
    )
    assert _run(code).splitlines() == ["False True", "DataFrame"]


def test_where_pandas_is_imported_first_sqlite_utils_takes_it():
    pytest.importorskip("pandas", reason="pandas is not installed here")
    code = "import pandas\nfrom db.sqlite import sqlite_utils\nprint(sqlite_utils.db.pd is pandas)"
    assert _run(code) == "True"
