"""The one epoch loop every trainer runs (the text MLP: textclf/training/loop.py; the CNN: textclf/training/
cnn.py): resume from a checkpoint, run the epochs, report each, checkpoint when due, stop when asked.

A trainer brings only what differs between models, `one_epoch(epoch, params, opt_state) -> (params, opt_state,
EpochStats)`: how its batches are drawn and its step runs. Resuming gives the same model as an uninterrupted
run because every trainer draws an epoch's order from (seed, epoch) and its learning rates from the epoch
number alone.
"""

from __future__ import annotations

from typing import Callable

import jax

from textclf.training.checkpoint import Checkpointer, TrainState
from textclf.training.data_parallel import to_host
from textclf.training.events import EpochStats, TrainingStopped


def resume(checkpointer: Checkpointer | None, params, opt_state) -> tuple:
    """-> (params, opt_state, history, epochs done): the checkpoint's, where there is one, placed on the default
    device in the structure of the given (freshly initialised) params and opt_state; else those and epoch 0."""
    state = checkpointer.load() if checkpointer else None
    if state is None:
        return params, opt_state, [], 0
    def rebuild(like, leaves):
        return jax.tree.unflatten(jax.tree.structure(like), jax.device_put(list(leaves)))

    return (rebuild(params, state.param_leaves), rebuild(opt_state, state.opt_leaves), list(state.history),
            state.epochs_done)


def run_epochs(params, opt_state, history: list[EpochStats], first_epoch: int, epochs: int,
               one_epoch: Callable[[int, object, object], tuple], on_epoch: Callable[[EpochStats], None] | None = None,
               checkpointer: Checkpointer | None = None, stop_requested: Callable[[], bool] | None = None) -> tuple:
    """Epochs first_epoch .. epochs-1 (0-based) -> (params, opt_state, history). After each: its stats appended
    to history and handed to on_epoch, then a checkpoint saved when due; when stop_requested() says so, one is
    saved (unless just saved) and TrainingStopped raised (the daemon's SIGTERM: the job continues later from it).
    Nothing is saved after the last epoch: the model file is written next."""
    for epoch in range(first_epoch, epochs):
        params, opt_state, stats = one_epoch(epoch, params, opt_state)
        history.append(stats)
        if on_epoch:
            on_epoch(stats)
        if epoch + 1 >= epochs:
            break

        def save() -> None:
            checkpointer.save(TrainState(epoch + 1, [to_host(a) for a in jax.tree.leaves(params)],
                                         [to_host(a) for a in jax.tree.leaves(opt_state)], list(history)))

        saved = checkpointer is not None and checkpointer.due()
        if saved:
            save()
        if stop_requested and stop_requested():
            if checkpointer is not None and not saved:
                save()
            raise TrainingStopped(f"stopped after epoch {epoch + 1} of {epochs}")
    return params, opt_state, history
