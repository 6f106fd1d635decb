"""Training checkpoints: everything needed to continue a run after its last finished epoch.

A checkpoint holds the parameters and the optimizer state as their flattened leaves (as the backend keeps
them, padded on the Pallas path; rebuilt on load from a freshly initialised network of the same shape, so any
network fits: the text MLP and the CNN) and the epoch history, written atomically. Resuming from it on the
same device gives the same model as an uninterrupted run: the epoch order is drawn from (seed, epoch) and the
learning-rate schedule depends only on the epoch number.
"""

from __future__ import annotations

import json
import stat
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from pipelines.files import write_arrays_atomically

FORMAT = "textclf-checkpoint"


@dataclass
class TrainState:
    epochs_done: int
    param_leaves: list  # jax.tree.leaves of the parameters, numpy arrays
    opt_leaves: list  # jax.tree.leaves of the optimizer state, numpy arrays
    history: list  # list of EpochStats


class Checkpointer:
    """every_seconds: the training loop saves after an epoch only when this long has passed since the last
    save (or the start), and always when it is asked to stop. Each save writes the parameters and the optimizer
    state (64 MB for the default network with Adam) and fsyncs them: saving after every epoch made a warm
    daemon's news4 job take 1.7 s instead of ~0.7 s."""

    def __init__(self, path: str | Path, every_seconds: float = 0.0):
        self.path = Path(path)
        self.every_seconds = every_seconds
        self._last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every_seconds

    def save(self, state: TrainState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header = {"format": FORMAT, "epochs_done": state.epochs_done, "history": [asdict(h) for h in state.history]}
        arrays = {"header": np.array(json.dumps(header))}
        arrays.update({f"param.{i}": np.asarray(a) for i, a in enumerate(state.param_leaves)})
        arrays.update({f"opt.{i}": np.asarray(a) for i, a in enumerate(state.opt_leaves)})
        write_arrays_atomically(self.path, arrays)
        self._last = time.monotonic()

    def load(self) -> TrainState | None:
        """The saved state, or None when there is no checkpoint yet."""
        from textclf.training.events import EpochStats

        if not self.path.exists():
            return None
        try:
            if not stat.S_ISREG(self.path.stat().st_mode):
                raise ValueError("not a regular file")
            with zipfile.ZipFile(self.path) as archive:  # declared sizes checked before anything is inflated
                if sum(i.file_size for i in archive.infolist()) > 20 * self.path.stat().st_size + (1 << 20):
                    raise ValueError("members that would inflate far beyond the file")
            with np.load(self.path, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
            header = json.loads(str(arrays["header"]))
            if type(header["epochs_done"]) is not int or header["epochs_done"] < 0:
                raise ValueError("epochs_done")
            if any(a.dtype.kind == "f" and not np.isfinite(a).all() for a in arrays.values()):
                raise ValueError("values that are not finite")
            leaves = lambda prefix: [
                arrays[f"{prefix}.{i}"]  # noqa: E731
                for i in range(sum(k.startswith(prefix + ".") for k in arrays))
            ]
            return TrainState(
                header["epochs_done"], leaves("param"), leaves("opt"), [EpochStats(**h) for h in header["history"]]
            )
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            # Damaged (a crash mid-copy, a full disk, a foreign file): as good as none. Removed, so training
            # starts over instead of failing on it at every attempt.
            self.path.unlink(missing_ok=True)
            return None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
