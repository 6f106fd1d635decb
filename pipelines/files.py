"""Files written so that a reader sees the old version or the new one, never half of either."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np


def _umask() -> int:
    mask = os.umask(0o022)  # the only portable way to read it is to set it: set it straight back
    os.umask(mask)
    return mask


def write_arrays_atomically(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    """np.savez to a temporary file beside `path`, fsync, rename: readers see the old file or the new one."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600 whatever the umask: give it the mode a plain open() would (0666 - umask),
        # so a model written by the daemon's user can be read by the service's group where the umask says so.
        os.chmod(tmp_name, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)  # uncompressed: float weights barely compress, and saving is 5x faster
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return path
