"""Where textclf keeps its files: TEXTCLF_HOME, else $XDG_DATA_HOME/textclf, else ~/.local/share/textclf (the
compilation cache: JAX_COMPILATION_CACHE_DIR where set)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    if os.environ.get("TEXTCLF_HOME"):
        return Path(os.environ["TEXTCLF_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "textclf"


def models_dir() -> Path:
    return data_dir() / "models"


def compile_cache_dir() -> Path:
    """JAX's persistent compilation cache: JAX_COMPILATION_CACHE_DIR (JAX's own variable) where set, so a cache the
    user chose is the one used, else <data dir>/jax-cache."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    return data_dir() / "jax-cache"


def vector_cache_dir() -> Path:
    return data_dir() / "vector-cache"


def run_db_path(path: str | Path | None = None) -> Path:
    """The run database: `path` when given, else TEXTCLF_DB, else <data dir>/runs.db."""
    if path:
        return Path(path)
    return Path(os.environ["TEXTCLF_DB"]) if os.environ.get("TEXTCLF_DB") else data_dir() / "runs.db"
