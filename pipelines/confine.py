"""Reads confined to one folder: a corpus file, and every file of a folder corpus, is read only where its path,
every link resolved, lies under the root (the service's --data-root for the jobs it takes); a file whose link
leads out of it is left out and counted, a corpus named outside it is refused. Without a root, nothing is
confined (a user's own `textclf train` reads what the user may read). The root holds for the whole process
while set (a run reads in more than one thread), so one process trains one confined job at a time, as the daemon
does."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

_root: list[Path | None] = [None]


@contextmanager
def confined_to(root: str | Path | None):
    previous = _root[0]
    _root[0] = Path(root).resolve() if root else None
    try:
        yield
    finally:
        _root[0] = previous


def root() -> Path | None:
    return _root[0]


def outside(path: str | Path) -> bool:
    """Whether reading `path` would leave the root (every link followed); False where no root is set."""
    current = _root[0]
    return current is not None and not Path(path).resolve().is_relative_to(current)
