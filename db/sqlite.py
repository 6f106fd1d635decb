"""sqlite-utils, imported without pandas: sqlite-utils imports pandas where it is installed, only to store its
Timestamp type, which the run database never takes; the import costs every command that opens the database about
0.3 s. Where pandas is already imported, sqlite-utils takes it as usual."""

from __future__ import annotations

import sys

if "sqlite_utils" in sys.modules or "pandas" in sys.modules:
    import sqlite_utils
else:
    sys.modules["pandas"] = None  # an import of pandas now raises ImportError, which sqlite-utils allows for
    try:
        import sqlite_utils
    finally:
        del sys.modules["pandas"]  # pandas importable again for whatever imports it next

__all__ = ["sqlite_utils"]
