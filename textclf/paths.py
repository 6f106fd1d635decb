"""Where textclf keeps its files: TEXTCLF_HOME, else $XDG_DATA_HOME/textclf, else ~/.local/share/textclf; the
compilation cache, which any data dir may use: JAX_COMPILATION_CACHE_DIR where set, else
$XDG_CACHE_HOME/textclf/jax, else ~/.cache/textclf/jax."""

from __future__ import annotations

import os
from pathlib import Path

from textclf.errors import SettingsError


def _folder(path: Path, variable: str) -> Path:
    """A folder a variable names: refused by that name where it is something else (a file, a device)."""
    if path.exists() and not path.is_dir():
        raise SettingsError(
            f"{variable} is '{path}', which is not a folder: point it at a folder (it is made if missing)"
        )
    return path


def data_dir() -> Path:
    if os.environ.get("TEXTCLF_HOME"):
        return _folder(Path(os.environ["TEXTCLF_HOME"]), "TEXTCLF_HOME")
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return _folder(Path(base) / "textclf", "the data dir ($XDG_DATA_HOME/textclf or ~/.local/share/textclf)")


def models_dir() -> Path:
    return data_dir() / "models"


def compile_cache_dir() -> Path:
    """JAX's persistent compilation cache: JAX_COMPILATION_CACHE_DIR (JAX's own variable) where set, so a cache the
    user chose is the one used, else the user's cache folder ($XDG_CACHE_HOME/textclf/jax, else
    ~/.cache/textclf/jax). Not in the data dir: compiled programs depend on shapes, not on a data dir's runs, so a
    new data dir (a project, a fresh TEXTCLF_HOME) reuses what any earlier run compiled (docs/decisions.md, "One
    compilation cache for every data dir")."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return _folder(Path(os.environ["JAX_COMPILATION_CACHE_DIR"]), "JAX_COMPILATION_CACHE_DIR")
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return _folder(
        Path(base) / "textclf" / "jax", "the compilation cache ($XDG_CACHE_HOME/textclf/jax or ~/.cache/textclf/jax)"
    )


def vector_cache_dir() -> Path:
    return data_dir() / "vector-cache"


def run_db_path(path: str | Path | None = None) -> Path:
    """The run database: `path` when given, else TEXTCLF_DB, else <data dir>/runs.db."""
    if path:
        return Path(path)
    return Path(os.environ["TEXTCLF_DB"]) if os.environ.get("TEXTCLF_DB") else data_dir() / "runs.db"
