"""Training the image classifier (textclf/models/cnn.py): whole epochs on the device, Adam, checkpoints.

Each epoch is one jitted scan over its batches; the training images stay on the device and each epoch's order
is drawn from (seed, epoch), so a run resumed from a checkpoint continues exactly where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from textclf.models.cnn import CNNParams, augment_batch, cnn_hidden, head_loss, init_cnn, predict_cnn
from textclf.settings import Settings
from textclf.training.checkpoint import after_epoch
from textclf.training.device_data import epoch_order
from textclf.training.events import EpochStats
from textclf.training.optimizers import adam, scheduled_rates

_PRODUCT = Settings(model="cnn")  # the one source of the image defaults (textclf/settings.py)


@dataclass(frozen=True)
class CNNSettings:
    """The CNN's share of Settings (textclf/image_train.cnn_settings builds it from a run's Settings)."""

    channels: tuple[int, ...] = _PRODUCT.channels
    kernel: int = _PRODUCT.conv_kernel
    hidden: int = _PRODUCT.hidden
    epochs: int = _PRODUCT.epochs
    batch_size: int = _PRODUCT.batch_size
    learning_rate: float = _PRODUCT.learning_rate
    lr_schedule: str = _PRODUCT.lr_schedule  # "constant", "linear" or "cosine": decayed per step to 0 over the run
    dropout: float = _PRODUCT.dropout  # probability of zeroing each hidden unit while training (inverted dropout)
    augment: tuple[str, ...] = _PRODUCT.augmentations  # per image and step: "shift" (<= 2 px each way), "flip"
    weight_decay: float = _PRODUCT.weight_decay
    seed: int = _PRODUCT.seed


def learning_rates(settings: CNNSettings, epoch: int, steps: int) -> np.ndarray:
    """The per-step learning rates of one epoch (0-based): (steps,) float32."""
    return scheduled_rates(settings.lr_schedule, settings.learning_rate, epoch * steps + np.arange(steps),
                           settings.epochs * steps)


def _epoch_fn(backend: str, interpret: bool, dropout: float, augment: tuple[str, ...], weight_decay: float,
              stepwise: bool | None = None):
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
            hidden = cnn_hidden(p, batch, backend, interpret)
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
                lambda carry, inputs: step(carry, inputs, images, labels), (params, opt_state), (order, lrs, keys))
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


def fit_cnn(images: np.ndarray, labels: np.ndarray, n_classes: int, settings: CNNSettings = CNNSettings(),
            backend: str = "xla", eval_images: np.ndarray | None = None, eval_labels: np.ndarray | None = None,
            interpret: bool = False, on_epoch=None, checkpointer=None, stop_requested=None, on_step=None):
    """Train on uint8 images (N, H, W, C) and class numbers; evaluate after every epoch if given.
    -> (numpy CNNParams, list of textclf.training.loop.EpochStats; docs_per_s counts images).
    The training set stays on the device; each epoch's order is drawn from (seed, epoch), so a run
    resumed from a checkpoint (textclf/training/checkpoint.py, after_epoch: saved when due or when stop_requested()
    says so, which then raises TrainingStopped) continues exactly where it stopped. on_step(done, total): steps
    of the current epoch done, where an epoch runs step by step (a CPU: see _epoch_fn)."""
    key = jax.random.PRNGKey(settings.seed)
    params = init_cnn(key, images.shape[1:], n_classes, settings)
    opt_state = adam().init(params)
    history, first_epoch = [], 0
    resumed = checkpointer.load() if checkpointer else None
    if resumed:
        params = jax.tree.unflatten(jax.tree.structure(params), [jnp.asarray(a) for a in resumed.param_leaves])
        opt_state = jax.tree.unflatten(jax.tree.structure(opt_state), [jnp.asarray(a) for a in resumed.opt_leaves])
        history, first_epoch = list(resumed.history), resumed.epochs_done
    n = images.shape[0]
    steps = -(-n // settings.batch_size)
    run_epoch = _epoch_fn(backend, interpret, settings.dropout, tuple(settings.augment), settings.weight_decay)
    run_key = jax.random.PRNGKey(settings.seed + 1)
    device_images, device_labels = jnp.asarray(images), jnp.asarray(labels, jnp.int32)
    for epoch in range(first_epoch, settings.epochs):
        start = time.perf_counter()
        order = epoch_order(settings.seed, epoch + 1, n, steps, settings.batch_size)
        params, opt_state, loss_sum, hits = run_epoch(params, opt_state, device_images, device_labels, order,
                                                      jnp.asarray(learning_rates(settings, epoch, steps)),
                                                      jax.random.fold_in(run_key, epoch), on_step=on_step)
        loss_sum, hits = float(loss_sum), float(hits)
        seconds = time.perf_counter() - start
        eval_accuracy = None
        if eval_images is not None:
            eval_accuracy = float((predict_cnn(params, eval_images, backend, interpret) == eval_labels).mean())
        history.append(EpochStats(epoch + 1, loss_sum / n, hits / n, eval_accuracy, seconds, n / seconds))
        if on_epoch:
            on_epoch(history[-1])
        after_epoch(checkpointer, stop_requested, epoch + 1, settings.epochs, params, opt_state, history)
    return CNNParams(*jax.tree.map(np.asarray, tuple(params))), history
