"""What a training loop reports (per-epoch statistics) and the signal that stops it between epochs.

Kept apart from textclf/training/network.py, which imports JAX, so that textclf/runs/run.py can name them without
importing JAX before its vectorizing workers are forked (pipelines/workers.py).
"""

from __future__ import annotations

from dataclasses import dataclass


class Terminated(BaseException):
    """SIGTERM arrived (textclf.frontends.cli turns the signal into this): the run is marked interrupted and the
    command exits 143. A BaseException, like KeyboardInterrupt, so no `except Exception` swallows it."""


class TrainingStopped(Exception):
    """Training was asked to stop between epochs; the checkpoint holds every finished epoch."""


@dataclass
class EpochStats:
    epoch: int
    loss: float
    train_accuracy: float
    eval_accuracy: float | None
    seconds: float
    docs_per_s: float
    view: str | None = None  # which model of several trained it ("character network", ...; None: the only one)
