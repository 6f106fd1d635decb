"""Training the image classifier (textclf/models/cnn.py): whole epochs on the device, Adam, checkpoints.

Each epoch is one jitted scan over its batches; the training images stay on the device and each epoch's order
is drawn from (seed, epoch), so a run resumed from a checkpoint continues exactly where it stopped.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from textclf.models.cnn import (
    PALLAS_CONV,
    CNNParams,
    ConvKernels,
    augment_batch,
    cnn_hidden,
    head_loss,
    init_cnn,
    predict_cnn,
)
from textclf.settings import Settings
from textclf.training.device_data import epoch_order
from textclf.training.events import EpochStats
from textclf.training.epochs import resume, run_epochs
from textclf.training.steps.optimizers import adam, scheduled_rates


def learning_rates(settings: Settings, epoch: int, steps: int) -> np.ndarray:
    """The per-step learning rates of one epoch (0-based): (steps,) float32."""
    return scheduled_rates(
        settings.lr_schedule, settings.learning_rate, epoch * steps + np.arange(steps), settings.epochs * steps
    )


def _epoch_fn(
    backend: str,
    interpret: bool,
    dropout: float,
    augment: tuple[str, ...],
    weight_decay: float,
    stepwise: bool | None = None,
    kernels: ConvKernels = PALLAS_CONV,
):
    """One epoch: (params, opt_state, images, labels, order (steps, B), lrs (steps,), key) -> (params, opt_state,
    summed loss, hits). stepwise (default: on a CPU): a Python loop over one jitted step instead of one jitted
    scan over the steps. XLA on a CPU runs a convolution inside a loop 13-17x slower than the same convolution
    called on its own (measured on 2 cores, batch 64: 1,000 vs 58-79 ms a step); on a GPU the scan saves a
    dispatch per step. Same arithmetic and random keys either way."""

    def step(carry, inputs, images, labels):
        params, opt_state = carry
        rows, lr, step_key = inputs
        valid = rows >= 0
        batch = images[jnp.where(valid, rows, 0)]
        y = labels[jnp.where(valid, rows, 0)]
        mask = valid.astype(jnp.float32)
        augment_key, dropout_key = jax.random.split(step_key)
        if augment:
            batch = augment_batch(augment_key, batch, augment)

        def loss_fn(p):
            hidden = cnn_hidden(p, batch, backend, interpret, kernels)
            if dropout:
                keep = jax.random.bernoulli(dropout_key, 1.0 - dropout, hidden.shape)
                hidden = jnp.where(keep, hidden / (1.0 - dropout), 0.0)
            return head_loss(p, hidden, y, mask / jnp.maximum(mask.sum(), 1.0), backend, interpret)

        (loss, hits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        params, opt_state = adam(weight_decay).update(params, opt_state, grads, lr)
        return (params, opt_state), (loss * mask.sum(), hits)

    if not (jax.default_backend() == "cpu" if stepwise is None else stepwise):

        def epoch(params, opt_state, images, labels, order, lrs, key):
            keys = jax.random.split(key, order.shape[0])
            (params, opt_state), (losses, hits) = jax.lax.scan(
                lambda carry, inputs: step(carry, inputs, images, labels), (params, opt_state), (order, lrs, keys)
            )
            return params, opt_state, losses.sum(), hits.sum()

        scanned = jax.jit(epoch, donate_argnums=(0, 1))
        return lambda *args, on_step=None: scanned(*args)  # one dispatch: no progress inside the epoch

    one_step = jax.jit(step, donate_argnums=(0,))

    def epoch_stepwise(params, opt_state, images, labels, order, lrs, key, on_step=None):
        """on_step(done, total): after each step (waited for), for progress within a long epoch."""
        keys = jax.random.split(key, order.shape[0])
        carry, losses, hits = (params, opt_state), [], []
        for number in range(order.shape[0]):
            carry, (loss, hit) = one_step(carry, (order[number], lrs[number], keys[number]), images, labels)
            losses.append(loss)
            hits.append(hit)
            if on_step:
                loss.block_until_ready()  # progress of steps done, not of steps queued
                on_step(number + 1, order.shape[0])
        return *carry, jnp.sum(jnp.stack(losses)), jnp.sum(jnp.stack(hits))

    return epoch_stepwise


# Twelve arguments: the images, the settings, and the run's watchers (epochs, checkpoints, stop), as the MLP's
# trainer takes them.
def fit_cnn(
    images: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    settings: Settings = Settings(model="cnn"),
    backend: str = "xla",
    eval_images: np.ndarray | None = None,
    eval_labels: np.ndarray | None = None,
    interpret: bool = False,
    on_epoch=None,
    checkpointer=None,
    stop_requested=None,
    on_step=None,
):
    """Train on uint8 images (N, H, W, C) and class numbers; evaluate after every epoch if given.
    settings: a model="cnn" Settings (conv_channels, conv_kernel, hidden, epochs, batch_size, learning_rate,
    lr_schedule, dropout, augment, weight_decay, seed).
    -> (numpy CNNParams, list of EpochStats; docs_per_s counts images).
    The training set stays on the device; the epochs run in textclf.training.epochs.run_epochs (checkpoints when
    due, TrainingStopped when stop_requested() says so; a resumed run continues exactly where it stopped).
    on_step(done, total): steps of the current epoch done, where an epoch runs step by step (a CPU: _epoch_fn)."""
    params = init_cnn(
        jax.random.PRNGKey(settings.seed),
        images.shape[1:],
        n_classes,
        settings.channels,
        settings.conv_kernel,
        settings.hidden,
    )
    params, opt_state, history, first_epoch = resume(checkpointer, params, adam().init(params))
    n = images.shape[0]
    steps = -(-n // settings.batch_size)
    run_epoch = _epoch_fn(backend, interpret, settings.dropout, settings.augmentations, settings.weight_decay)
    run_key = jax.random.PRNGKey(settings.seed + 1)
    device_images, device_labels = jax.device_put(images), jax.device_put(np.asarray(labels, np.int32))

    def one_epoch(epoch: int, params, opt_state):
        start = time.perf_counter()
        order = epoch_order(settings.seed, epoch + 1, n, steps, settings.batch_size)
        params, opt_state, loss_sum, hits = run_epoch(
            params,
            opt_state,
            device_images,
            device_labels,
            order,
            jnp.asarray(learning_rates(settings, epoch, steps)),
            jax.random.fold_in(run_key, epoch),
            on_step=on_step,
        )
        loss_sum, hits = float(loss_sum), float(hits)
        seconds = time.perf_counter() - start
        eval_accuracy = None
        if eval_images is not None:
            eval_accuracy = float((predict_cnn(params, eval_images, backend, interpret) == eval_labels).mean())
        return params, opt_state, EpochStats(epoch + 1, loss_sum / n, hits / n, eval_accuracy, seconds, n / seconds)

    params, opt_state, history = run_epochs(
        params, opt_state, history, first_epoch, settings.epochs, one_epoch, on_epoch, checkpointer, stop_requested
    )
    return CNNParams(*jax.tree.map(np.asarray, tuple(params))), history
