"""What a trainer is handed besides its settings: the rows it trains and is scored on, and who watches it."""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np


def mean_one(weights) -> np.ndarray:
    """Documents' weights in the loss as float32 scaled to a mean of 1, so that a batch's weighted mean loss and a
    run's recorded accuracies read on the scale of unweighted ones."""
    weights = np.asarray(weights, np.float64)
    return (weights / weights.mean()).astype(np.float32)


class TrainingRows(NamedTuple):
    """The documents a network (or K side by side) trains on, and those it is scored on after each epoch."""

    x: object  # (n, F) CSR; for networks side by side also device_data.ResidentRows (already on the device)
    y: np.ndarray  # (n,) class numbers, or (n, C) 0/1 rows of label sets
    n_classes: int
    eval_x: object = None  # scored after each epoch for the run's record (None: not scored)
    eval_y: np.ndarray | None = None
    training_rows: np.ndarray | None = None  # the rows of x that train (None: all; networks side by side only)
    # (n,) each row of x's weight in the loss (a batch's weighted mean), mean 1 over the training rows; None: 1 each
    weights: np.ndarray | None = None

    @property
    def n_training(self) -> int:
        return self.x.shape[0] if self.training_rows is None else len(self.training_rows)

    @property
    def scored(self) -> bool:
        """Whether there are documents to score after each epoch."""
        return self.eval_x is not None and self.eval_x.shape[0] > 0

    def only_training(self) -> TrainingRows:
        """The same with x and y narrowed to their training rows (a copy), for trainers that take every row."""
        if self.training_rows is None:
            return self
        rows = self.training_rows
        weights = None if self.weights is None else self.weights[rows]
        return self._replace(x=self.x[rows], y=self.y[rows], training_rows=None, weights=weights)


class Watch(NamedTuple):
    """Who watches a training and may end it, each optional: on_epoch(EpochStats) after every epoch;
    stop_requested() True after an epoch stops it (textclf.training.events.TrainingStopped; the daemon's SIGTERM);
    checkpointer (textclf.training.checkpoint.Checkpointer) resumes and saves; early_stopping
    (textclf.training.epochs.EarlyStopping) ends it on held-out documents and keeps its best epoch."""

    on_epoch: Callable | None = None
    stop_requested: Callable[[], bool] | None = None
    checkpointer: object = None
    early_stopping: object = None
