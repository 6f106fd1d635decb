"""One training-step interface, whichever backend runs it.

A Step says everything the training loop (textclf/training/network.py), its data-parallel wrapper and so the daemon
need from a backend, so that none of them asks which backend it is:
- `layout`: how the training set lies on the device, "flat" (CSR; flat batches) or "pieces"
  (textclf/training/device_data.py);
- `start_state` / `ready_state`: the seeded (or given) parameters and optimizer state as the step wants them
  (the Pallas kernels take them padded to their block sizes);
- `epoch`: the un-jitted epoch over stacked minibatches,
  (params, opt_state, indices, values, rows, labels, mask, lrs, axis_name=None) -> (params, opt_state, losses,
  corrects);
- `unpad` / `finish`: the parameters with any padding dropped (inside a traced function / on the host).
`make_step` is the one place that looks at the backend's name. XlaStep is plain JAX (textclf/models/mlp.py);
PallasStep chains the custom kernels (textclf/training/steps/pallas.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp

from textclf.models.mlp import Params, init_params, logits, logits_pieces, masked_loss
from textclf.settings import Settings
from textclf.training.backends import INIT_COMPILER_OPTIONS
from textclf.training.device_data import narrowed
from textclf.training.steps.optimizers import make_optimizer

# Pallas input format "auto": the pieces layout (pallas_kernels/pieces_hidden.py) from this batch size up, the
# dense bf16 X below it. Measured on an H100 (docs/decisions.md, "Input layouts"): news4 rows at batch 4,096
# 14.4M docs/s with pieces vs 10.0M dense, at 1,024 7.0M vs 5.8M; agnews7600 rows at 4,096 30.3M vs 16.1M.
PIECES_MIN_BATCH = 1024


def input_format_for(requested: str, batch_size: int) -> str:
    """The Pallas input format: as requested, or for "auto" from the (per-device) batch size."""
    if requested != "auto":
        return requested
    return "pieces" if batch_size >= PIECES_MIN_BATCH else "dense"


def kernel_config_for(settings: Settings, batch_size: int | None = None):
    """Tuned Pallas block sizes for this device and (per-device) batch size; interpret mode on a CPU (tests)."""
    from pallas_kernels.config import tuned
    from textclf.training.backends import device_description, device_kind

    return tuned(batch_size or settings.batch_size, device_description()).replace(interpret=device_kind() != "gpu")


def xla_epoch(
    params,
    opt_state,
    indices,
    values,
    rows,
    labels,
    mask,
    lrs,
    *,
    momentum,
    weight_decay,
    optimizer="sgd",
    axis_name=None,
    steps=None,
):
    # A scanned epoch: its arrays, then the optimizer's static settings (one traced program).
    """One epoch in plain JAX: scan the optimizer step over (steps, ...) stacked minibatches. axis_name: data
    parallelism inside shard_map (textclf/training/parallel/data.py): the batch is this device's slice, the loss
    is divided by the global row count and gradients, loss and hits are summed over the axis. steps: a () int32
    array, how many of the batches to run (the rest is a shape bucket's padding, never run; their losses and hits
    0); default all."""
    batch_size = labels.shape[1]
    # (steps, cap) flat batches or (steps, cap, width) pieces (textclf/training/device_data.py)
    scores = logits_pieces if indices.ndim == 3 else logits
    update = make_optimizer(optimizer, momentum, weight_decay).update

    def step(carry, batch):
        params, opt_state = carry
        idx, val, row, y, m, lr = batch
        count = None if axis_name is None else jax.lax.psum(jnp.sum(m), axis_name)

        def loss_and_grads(nonzeros):  # (indices, values, rows)
            return jax.value_and_grad(
                lambda p: masked_loss(scores(p, *nonzeros, batch_size), y, m, count), has_aux=True
            )(params)

        # flat batches: a batch that fills a fraction of its cap runs on the front of it (device_data.narrowed);
        # pieces ((cap, width) indices) are not narrowed
        (loss, correct), grads = (
            loss_and_grads((idx, val, row)) if idx.ndim == 2 else narrowed(loss_and_grads, (idx, val, row))
        )
        if axis_name is not None:
            loss, correct, grads = jax.lax.psum((loss, correct, grads), axis_name)
        params, opt_state = update(params, opt_state, grads, lr)
        return (params, opt_state), (loss, correct)

    batches = (indices, values, rows, labels, mask, lrs)
    if steps is None:
        (params, opt_state), (losses, corrects) = jax.lax.scan(step, (params, opt_state), batches)
        return params, opt_state, losses, corrects

    def body(i, carry):
        params, opt_state, losses, corrects = carry
        (params, opt_state), (loss, correct) = step((params, opt_state), tuple(a[i] for a in batches))
        return params, opt_state, losses.at[i].set(loss), corrects.at[i].set(correct)

    zeros = jnp.zeros(indices.shape[0], jnp.float32)
    return jax.lax.fori_loop(0, steps, body, (params, opt_state, zeros, zeros))


def _ready_state(params: Params, optimizer: str, kernel_config):
    """(params, optimizer state), params padded for the Pallas kernels when kernel_config is given."""
    if kernel_config is not None:
        from textclf.training.steps.pallas import pad_params

        params = pad_params(params, kernel_config)
    return params, make_optimizer(optimizer).init(params)


@functools.partial(
    jax.jit,
    static_argnames=("n_features", "hidden", "n_classes", "gain", "optimizer", "kernel_config"),
    compiler_options=INIT_COMPILER_OPTIONS,
)
def _start_state(
    seed, n_features: int, hidden: int, n_classes: int, gain: float, optimizer: str, kernel_config, w1_limit=None
):
    """The seeded initial parameters and optimizer state as one compiled program: built op by op, each of its
    ~15 small operations was compiled on its own (~50 ms each on the GPU, a second of a cold start). w1_limit:
    init_params'."""
    params = init_params(jax.random.PRNGKey(seed), n_features, hidden, n_classes, gain, w1_limit)
    return _ready_state(params, optimizer, kernel_config)


_ready_state_jitted = jax.jit(_ready_state, static_argnames=("optimizer", "kernel_config"))


@dataclass(frozen=True)
class Step:
    """The interface (see the module docstring). Frozen and hashable: compiled epochs are cached by it."""

    layout: str  # "flat" or "pieces"

    @property
    def padding(self):
        """What the parameters are padded for (a KernelConfig), or None."""
        return None

    @property
    def bucketed(self) -> bool:
        """Whether its programs take shapes rounded up to their buckets (pipelines.batches.shape_bucket): W1's rows,
        the epoch's steps (the epoch told how many to run), the resident arrays. The Pallas kernels pad to their
        own blocks instead."""
        return self.padding is None

    def start_state(
        self,
        seed,
        n_features: int,
        hidden: int,
        n_classes: int,
        gain: float,
        optimizer: str,
        columns: int | None = None,
    ):
        """columns: the input's own columns where n_features is more (W1's rows past them are padding, drawn but
        never read: the bound is the real columns' Glorot bound)."""
        from textclf.models.mlp import glorot_limit

        limit = None if columns is None else glorot_limit(columns, hidden, gain)
        return _start_state(seed, n_features, hidden, n_classes, gain, optimizer, self.padding, limit)

    def ready_state(self, params: Params, optimizer: str):
        return _ready_state_jitted(params, optimizer, self.padding)

    def epoch(self, optimizer: str, momentum: float, weight_decay: float, n_classes: int) -> Callable:
        raise NotImplementedError

    def unpad(self, params: Params, n_classes: int, n_features: int | None = None) -> Params:
        """Drop the padding (padded classes would otherwise win argmax with score 0); traceable."""
        w1 = params.w1 if n_features is None else params.w1[:n_features]
        return Params(w1, params.b1, params.w2[:, :n_classes], params.b2[:n_classes])

    finish = unpad  # on the host's numpy parameters: the same slicing


@dataclass(frozen=True)
class XlaStep(Step):
    def epoch(self, optimizer: str, momentum: float, weight_decay: float, n_classes: int) -> Callable:
        return functools.partial(xla_epoch, momentum=momentum, weight_decay=weight_decay, optimizer=optimizer)


@dataclass(frozen=True)
class PallasStep(Step):
    kernel_config: object = None  # pallas_kernels.config.KernelConfig: block sizes, input format, dtypes

    @property
    def padding(self):
        return self.kernel_config

    def epoch(self, optimizer: str, momentum: float, weight_decay: float, n_classes: int) -> Callable:
        from textclf.training.steps.pallas import pallas_epoch

        return functools.partial(
            pallas_epoch,
            n_classes=n_classes,
            config=self.kernel_config,
            momentum=momentum,
            weight_decay=weight_decay,
            optimizer=optimizer,
        )


def make_step(backend: str, settings: Settings, local_batch: int, kernel_config=None) -> Step:
    """The Step of a resolved backend ("xla" or "pallas") for these settings and per-device batch size.
    kernel_config overrides the tuned Pallas configuration.
    Layouts: the Pallas "pieces" input format reads pieces, its other formats flat batches; the XLA step reads
    pieces on a GPU and flat batches elsewhere (from pieces it was 8x faster on news4 rows at batch 4,096 on an
    H100, the per-nonzero segment sum piling each document's adds onto one row, but slower on a CPU;
    docs/decisions.md, "Input layouts")."""
    if backend == "pallas":
        config = kernel_config or kernel_config_for(settings, local_batch).replace(
            input_format=input_format_for(settings.pallas_input, local_batch)
        )
        return PallasStep("pieces" if config.input_format == "pieces" else "flat", config)
    from textclf.training.backends import device_kind

    return XlaStep("pieces" if device_kind() == "gpu" else "flat")
