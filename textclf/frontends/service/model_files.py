"""Model files served as they lie on disk (`textclf serve MODEL_FILE_OR_FOLDER...`), beside the published models.

A file is one model, named by its file name (`news.npz`, `news.textclf.npz`: "news"); it is version 1 when the
service starts and one version more each time the file is replaced or rewritten (its inode, size or modification
time changes), so the service's reload picks it up as it picks up a publication. A folder is one model named by the
folder, its versions the model files in it named by their number (`news/1.npz`, `news/2.npz`), as TF Serving's
model base path holds numbered versions; a higher number added later is served from then on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from textclf.errors import SettingsError

MODEL_SUFFIXES = (".textclf.npz", ".npz")


def model_name(path: Path) -> str:
    """A model file's name without its suffix; a folder's name."""
    name = path.name
    for suffix in MODEL_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _numbered(folder: Path) -> dict[int, Path]:
    """A folder's model files named by a version number (1 or more) -> {number: path}."""
    found = {}
    for entry in folder.iterdir():
        stem = model_name(entry)
        if entry.is_file() and stem != entry.name and stem.isdigit() and int(stem) >= 1:
            found[int(stem)] = entry
    return found


@dataclass
class _Served:
    path: Path  # the file, or the folder of numbered files
    folder: bool
    stamp: tuple = ()  # a file's (inode, size, modification time) when its version was counted
    version: int = 1  # a file's current version
    since: float = 0.0  # when that version was counted


class ModelFiles:
    """The models given as files or folders: name -> its versions as rows shaped like published ones (name,
    version, path, created_at, source)."""

    def __init__(self, paths: list[str | Path]):
        self.served: dict[str, _Served] = {}
        for given in paths:
            path = Path(given)
            if not path.exists():
                raise SettingsError(
                    f"model file '{given}' does not exist: pass a model file from 'textclf train' "
                    "(--out) or a folder of numbered model files (1.npz, 2.npz)"
                )
            if path.is_dir() and not _numbered(path):
                raise SettingsError(
                    f"folder '{given}' holds no numbered model file (1.npz, 2.npz, ...): put each "
                    "version in it under its number, or pass the model file itself"
                )
            if not path.is_dir() and not path.is_file():
                raise SettingsError(f"'{given}' is not a regular file or a folder: pass a model file")
            name = model_name(path.resolve())
            if name in self.served:
                raise SettingsError(
                    f"two models are named '{name}' ('{self.served[name].path}' and '{given}'): rename one of the files"
                )
            self.served[name] = _Served(path, path.is_dir(), _stamp(path), 1, time.time())

    def versions(self, name: str) -> list[dict]:
        """The rows of a served model's versions, oldest first ([] for a name not served from a file)."""
        served = self.served.get(name)
        if served is None:
            return []
        if served.folder:
            return [
                _row(name, number, path, path.stat().st_mtime)
                for number, path in sorted(_numbered(served.path).items())
            ]
        return [_row(name, served.version, served.path, served.since)]

    def latest(self) -> dict[str, dict]:
        return {name: rows[-1] for name in self.served if (rows := self.versions(name))}

    def refresh(self) -> None:
        """Count a new version of each file that was replaced or rewritten since it was last looked at."""
        for served in self.served.values():
            if served.folder:
                continue
            stamp = _stamp(served.path)
            if stamp and stamp != served.stamp:
                served.stamp, served.version, served.since = stamp, served.version + 1, time.time()


def _stamp(path: Path) -> tuple:
    try:
        status = os.stat(path)
    except OSError:  # being replaced this instant: looked at again at the next refresh
        return ()
    return status.st_ino, status.st_size, status.st_mtime_ns


def _row(name: str, version: int, path: Path, created: float) -> dict:
    return {
        "name": name,
        "version": version,
        "path": str(path),
        "source": "file",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(created)),
    }
