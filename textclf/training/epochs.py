"""The one epoch loop every trainer runs (the text MLP: textclf/training/network.py; the CNN: textclf/training/
cnn.py): resume from a checkpoint, run the epochs, report each, checkpoint when due, stop when asked.

A trainer brings only what differs between models, `one_epoch(epoch, params, opt_state) -> (params, opt_state,
EpochStats)`: how its batches are drawn and its step runs. Resuming gives the same model as an uninterrupted
run because every trainer draws an epoch's order from (seed, epoch) and its learning rates from the epoch
number alone.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np
import scipy.sparse as sp

from textclf.models.weights import Params, host_scores
from textclf.training.checkpoint import Checkpointer, TrainState
from textclf.training.parallel.data import to_host
from textclf.training.events import EpochStats, TrainingStopped


def resume(checkpointer: Checkpointer | None, params, opt_state) -> tuple:
    """-> (params, opt_state, history, epochs done): the checkpoint's, where there is one, placed on the default
    device in the structure of the given (freshly initialised) params and opt_state; else those and epoch 0."""
    state = checkpointer.load() if checkpointer else None
    fresh = jax.tree.leaves((params, opt_state))
    if state is None or [np.shape(a) for a in (*state.param_leaves, *state.opt_leaves)] != [a.shape for a in fresh]:
        return params, opt_state, [], 0  # none, or one of other shapes (written by another version): start over

    def rebuild(like, leaves):
        return jax.tree.unflatten(jax.tree.structure(like), jax.device_put(list(leaves)))

    return (
        rebuild(params, state.param_leaves),
        rebuild(opt_state, state.opt_leaves),
        list(state.history),
        state.epochs_done,
    )


class EarlyStopping:
    """Stops training once the accuracy on held-out training documents has not improved for `patience` epochs,
    and keeps the best epoch's parameters. Called after each epoch with the epoch (0-based) and a function
    giving the network's parameters on the host (numpy w1 (F, H), b1 (H,), w2 (H, C), b2 (C,)); True: stop.
    The held-out documents are scored on the host, so every trainer and backend is stopped by the same rule."""

    def __init__(
        self, x: sp.csr_matrix, y: np.ndarray, patience: int = 1, metric: str = "micro-f1", earliest_stop: int = 0
    ):
        self.x, self.y, self.patience, self.metric = x, np.asarray(y), patience, metric
        self.earliest_stop = earliest_stop  # no stop before this many epochs (the best epoch is still kept)
        self.accuracies: list[float] = []
        self.best_epoch = 0  # 1-based; 0: none scored yet
        self.best_params = None

    def scores(self, params: Params) -> np.ndarray:
        """The held-out documents' (n, C) output scores under these (numpy) parameters."""
        return host_scores(params, self.x)

    def score(self, params: Params) -> float:
        """The held-out documents' accuracy under these (numpy) parameters, scored as a trained model scores; for
        label sets ((n, C) y), their metric (micro-F1 unless told) at the best of the thresholds tried (as the model
        will be judged:
        the threshold is chosen after the training; at a fixed 0.5 the first epochs, which predict few labels,
        looked like a plateau)."""
        scores = self.scores(params)
        if self.y.ndim == 2:
            from textclf.models.thresholds import best_score

            return best_score(scores, self.y, self.metric)
        return float((scores.argmax(axis=1) == self.y).mean())

    def __call__(self, epoch: int, host_params: Callable[[], tuple]) -> bool:
        params = host_params()
        accuracy = self.score(params)
        self.accuracies.append(accuracy)
        if self.best_epoch == 0 or accuracy > self.accuracies[self.best_epoch - 1]:
            self.best_epoch, self.best_params = epoch + 1, params
        return epoch + 1 >= self.earliest_stop and epoch + 1 - self.best_epoch >= self.patience

    def on_columns(self, columns: slice) -> EarlyStopping:
        """The same rule over these columns of the held-out documents (one view's network of several)."""
        return EarlyStopping(self.x[:, columns], self.y, self.patience, self.metric, self.earliest_stop)

    def kept_from(self, other: EarlyStopping) -> None:
        """Take another judge's curve and best epoch as this one's record (not its parameters)."""
        self.accuracies, self.best_epoch = list(other.accuracies), other.best_epoch

    def summary(self) -> dict:
        return {
            "held_out": int(self.x.shape[0]),
            "patience": self.patience,
            "accuracies": self.accuracies,
            "best_epoch": self.best_epoch,
        }


# Ten arguments: the state resumed, the epoch range, the trainer's one_epoch and the four optional watchers, each
# a caller's.
def run_epochs(
    params,
    opt_state,
    history: list[EpochStats],
    first_epoch: int,
    epochs: int,
    one_epoch: Callable[[int, object, object], tuple],
    on_epoch: Callable[[EpochStats], None] | None = None,
    checkpointer: Checkpointer | None = None,
    stop_requested: Callable[[], bool] | None = None,
    early_stop: Callable[[int, object], bool] | None = None,
) -> tuple:
    """Epochs first_epoch .. epochs-1 (0-based) -> (params, opt_state, history). After each: its stats appended
    to history and handed to on_epoch, then early_stop(epoch, params) (True: no more epochs), then a checkpoint
    saved when due; when stop_requested() says so, one is saved (unless just saved) and TrainingStopped raised
    (the daemon's SIGTERM: the job continues later from it). Nothing is saved after the last epoch: the model
    file is written next."""
    for epoch in range(first_epoch, epochs):
        params, opt_state, stats = one_epoch(epoch, params, opt_state)
        history.append(stats)
        if on_epoch:
            on_epoch(stats)
        # The last epoch is judged too: an early stop keeps its best epoch, which may be the last.
        stop = early_stop is not None and early_stop(epoch, params)
        if stop or epoch + 1 >= epochs:
            break

        def save() -> None:
            checkpointer.save(
                TrainState(
                    epoch + 1,
                    [to_host(a) for a in jax.tree.leaves(params)],
                    [to_host(a) for a in jax.tree.leaves(opt_state)],
                    list(history),
                )
            )

        saved = checkpointer is not None and checkpointer.due()
        if saved:
            save()
        if stop_requested and stop_requested():
            if checkpointer is not None and not saved:
                save()
            raise TrainingStopped(f"stopped after epoch {epoch + 1} of {epochs}")
    return params, opt_state, history
