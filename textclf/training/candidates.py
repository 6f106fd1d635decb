"""K networks trained side by side on the same minibatches: the step of the model search (textclf/training/search.py),
of an ensemble and of the rate candidates. (Over 600 lines: all three drive the one stacked step defined here, its
batches and its scoring; the file is split along those three users where they no longer share it.)

The K candidates share one input (the same documents, the same vectorizer columns) and differ in learning rate
and weight decay.
Their first layers sit side by side as one (F, K*H) matrix, so one gather of a batch's nonzero rows serves all
K models; the output layers are a (K, H, C) stack. Each model's loss is its own mean cross-entropy, and the loss
differentiated is their sum, so every model gets exactly the gradient it would get alone; Adam runs with a
per-model learning rate and weight decay. After every epoch each model is scored on the validation rows, so the search reads
the best epoch count off the curve (early stopping for free).

Two XLA formulations of the step (sparse: gather the batch's W1 rows; dense: the batch as (B, F) rows times W1)
and, on a GPU at batches up to 256, the dense one with W1's gradient and Adam update fused in one Pallas kernel
(pallas_kernels/stacked_input_adam.py); each is chosen where it measured fastest (BENCHMARKS.md, "The model
search's K-network step").
"""

from __future__ import annotations

import functools
import time
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import make_batches, next_power_of_two
from textclf.models.weights import Params
from textclf.training.device_data import (ResidentRows, batches_in_row_order, canonical, erase_batch,
                                          gathered_segments, narrowed, on_device, segment_steps, write_batch)
from textclf.training.backends import INIT_COMPILER_OPTIONS, SEARCH_COMPILER_OPTIONS
from textclf.training.optimizers import AdamState, adam, adam_corrections


class StackedParams(NamedTuple):
    w1: jax.Array  # (F, K*H): model k's first layer is columns k*H .. (k+1)*H
    b1: jax.Array  # (K*H,)
    w2: jax.Array  # (K, H, C)
    b2: jax.Array  # (K, C)


@functools.partial(jax.jit, static_argnames=("n_features", "hidden", "n_classes", "models", "gain"),
                   compiler_options={**SEARCH_COMPILER_OPTIONS, **INIT_COMPILER_OPTIONS})
def init_stacked(key: jax.Array, n_features: int, hidden: int, n_classes: int, models: int,
                 gain: float = 1.0) -> StackedParams:
    """K independent Glorot-uniform initialisations (textclf.models.mlp.init_params, K times)."""
    k1, k2 = jax.random.split(key)
    limit1 = gain * np.sqrt(6.0 / (n_features + hidden))
    limit2 = gain * np.sqrt(6.0 / (hidden + n_classes))
    return StackedParams(
        jax.random.uniform(k1, (n_features, models * hidden), jnp.float32, -limit1, limit1),
        jnp.zeros((models * hidden,), jnp.float32),
        jax.random.uniform(k2, (models, hidden, n_classes), jnp.float32, -limit2, limit2),
        jnp.zeros((models, n_classes), jnp.float32),
    )


def stacked_logits(params: StackedParams, indices, values, rows, batch_size: int) -> jax.Array:
    """Flat sparse batch (pipelines/batches.py: (cap,) each) -> (B, K, C) scores of the K models: the batch's W1 rows
    gathered and summed per document (the work scales with the nonzeros: what a CPU wants). The dense formulation
    (a GPU's: its tensor cores do the (B, F) x (F, K*H) product faster than the (cap, K*H) gather and its
    scatter-add gradient, measured: BENCHMARKS.md, "The model search's K-network step") is _dense_scores of the
    batch stored in the epoch's zero (B, F) buffer (_epoch, device_data.write_batch)."""
    gathered = params.w1[indices] * values[:, None]  # (cap, K*H): one gather for all K models
    pre = jax.ops.segment_sum(gathered, rows, num_segments=batch_size) + params.b1  # (B, K*H)
    return _head(pre, params.w2, params.b2)


def _dense_scores(params: StackedParams, x: jax.Array) -> jax.Array:
    """A batch already dense, x (B, F) -> (B, K, C) scores of the K models."""
    return _head(x @ params.w1 + params.b1, params.w2, params.b2)


def _head(pre: jax.Array, w2: jax.Array, b2: jax.Array) -> jax.Array:
    """(B, K*H) pre-activations -> (B, K, C) scores: each model's sigmoid hidden units through its own output layer."""
    models, hidden, _ = w2.shape
    activations = jax.nn.sigmoid(pre).reshape(pre.shape[0], models, hidden)
    return jnp.einsum("bkh,khc->bkc", activations, w2) + b2


def _summed_loss(scores: jax.Array, labels, mask) -> jax.Array:
    """(B, K, C) scores -> the sum over the K models of each one's mean cross-entropy on the unmasked rows."""
    log_probs = jax.nn.log_softmax(scores, axis=-1)  # (B, K, C)
    nll = -jnp.take_along_axis(log_probs, labels[:, None, None], axis=2)[..., 0]  # (B, K)
    return jnp.sum(nll * mask[:, None]) / jnp.maximum(jnp.sum(mask), 1.0)


def stacked_loss(params: StackedParams, indices, values, rows, labels, mask) -> jax.Array:
    """Sum over the K models of each one's mean cross-entropy on the unmasked rows (the sparse formulation)."""
    return _summed_loss(stacked_logits(params, indices, values, rows, labels.shape[0]), labels, mask)


def _per_model(values: jax.Array, hidden: int) -> StackedParams:
    """(K,) per-model values (learning rates, weight decays) shaped to broadcast against each parameter of
    StackedParams."""
    columns = jnp.repeat(values, hidden)  # (K*H,)
    return StackedParams(columns[None, :], columns, values[:, None, None], values[:, None])


def dense_default() -> bool:
    """The faster formulation of the step on this process's default device (stacked_logits says why)."""
    return jax.default_backend() == "gpu"


# The fused Pallas W1 update measured against XLA's dense step on an H200 (BENCHMARKS.md, "The model search's
# K-network step", K = 8, F = 8,192, each pair in one call): 0.75x XLA's time at B = 64 (one 64-row chunk, the
# kernel's defaults), 0.87x at B = 256 with the batch handed over as columns in 64 x 64 tiles (FUSED_CHUNKED_BLOCKS;
# 0.77x on an H100), 1.21x at 1,024 (there the kernel takes 203 us where cuBLAS's product and XLA's Adam fusions
# take 141). Used up to this batch size.
FUSED_MAX_BATCH = 256


def pallas_default(batch_size: int) -> bool:
    """Whether the search's K-network step updates W1 with the fused Pallas kernel (pallas_kernels/
    stacked_input_adam.py): on a GPU, at the batch sizes where it measured faster than XLA. Elsewhere the
    kernel would only run interpreted."""
    return jax.default_backend() == "gpu" and batch_size <= FUSED_MAX_BATCH


# The fused W1 update's tiling, chosen by `python -m benchmarks.kmodel_step --blocks ... --all` on an H200 and an
# H100 (BENCHMARKS.md): a batch of one 64-row chunk (the search's rounds) takes
# pallas_kernels.stacked_input_adam.StackedInputAdamBlocks's defaults; a batch of several chunks (the batch-256
# refinement) these fields, the batch read as columns (x^T (F, B), dpre^T (N, B)), so that both operands of the
# gradient's product run along the summed rows as TF32 tensor-core products take them (1.55x -> 1.18x XLA's step
# at B = 1,024 in one call, 1.12x -> 0.87x at 256). FUSED_BLOCKS replaces fields of either (the benchmark sets it to try other
# tilings). The kernel's module is imported only where it runs (a GPU).
FUSED_CHUNKED_BLOCKS = dict(block_f=64, block_n=64, num_warps=4, num_stages=3, sub_tiles=1, columns=True)
FUSED_BLOCKS: dict = {}


def _fused_blocks(batch_size: int):
    from pallas_kernels.stacked_input_adam import StackedInputAdamBlocks

    chunked = batch_size > StackedInputAdamBlocks.block_m
    return StackedInputAdamBlocks(**{**(FUSED_CHUNKED_BLOCKS if chunked else {}), **FUSED_BLOCKS})


def _step_kind(batch_size: int, n_features: int, hidden_units: int) -> tuple[bool, bool]:
    """(dense, fused) of _epoch for this batch size and (n_features, hidden_units) first layer on this process's
    device: what fit_candidates runs, and so what precompile_epoch must compile."""
    dense = dense_default()
    return dense, dense and pallas_default(batch_size) and fused_fits(batch_size, n_features, hidden_units)


def fused_fits(batch_size: int, n_features: int, hidden_units: int) -> bool:
    """Whether the fused W1 update's tiling for this batch size tiles an (n_features, hidden_units) first layer (a
    search's widths are powers of two and K*H a multiple of 128 at the default H; other shapes take the XLA step)."""
    blocks = _fused_blocks(batch_size)
    return n_features % (blocks.block_f * blocks.sub_tiles) == 0 and hidden_units % blocks.block_n == 0


def _dense_loss(params: StackedParams, x: jax.Array, labels, mask) -> jax.Array:
    """stacked_loss of a batch already dense: x (B, F)."""
    return _summed_loss(_dense_scores(params, x), labels, mask)


def _fused_step(params: StackedParams, state: AdamState, lr: StackedParams, wd: StackedParams, x, labels, mask,
                live, interpret: bool):
    """One step with the dense formulation's arithmetic on x (B, F), W1's gradient and Adam update fused in one
    Pallas kernel (never written to memory); the small layers (b1, W2, b2) take textclf.training.optimizers.adam.
    live: False for a padding batch, which then changes nothing (the kernel leaves W1 and its moments in place,
    see its module).
    -> (params, state, loss)."""
    from pallas_kernels.stacked_input_adam import stacked_input_adam

    pre = x @ params.w1 + params.b1  # (B, K*H)
    loss, (dpre, dw2, db2) = jax.value_and_grad(
        lambda p, w2, b2: _summed_loss(_head(p, w2, b2), labels, mask), argnums=(0, 1, 2))(pre, params.w2, params.b2)
    small_state = AdamState(state.m[1:], state.v[1:], state.step)
    small, small_state = jax.tree.map(
        lambda new, old: jnp.where(live, new, old),
        adam(wd[1:]).update((params.b1, params.w2, params.b2), small_state, (dpre.sum(axis=0), dw2, db2), lr[1:]),
        ((params.b1, params.w2, params.b2), small_state))
    c1, c2 = adam_corrections(state.step + 1)
    scalars = jnp.stack([c1, c2, live.astype(c1.dtype), jnp.zeros_like(c1)]).astype(params.w1.dtype)
    w1, m1, v1 = stacked_input_adam(x, dpre, params.w1, state.m.w1, state.v.w1, lr.w1[0], wd.w1[0], scalars,
                                    block_sizes=_fused_blocks(x.shape[0]), interpret=interpret)
    return (StackedParams(w1, *small), AdamState(StackedParams(m1, *small_state.m), StackedParams(v1, *small_state.v),
                                                 small_state.step), loss)


@functools.partial(jax.jit, donate_argnums=(0, 1), static_argnames=("dense", "fused"),
                   compiler_options=SEARCH_COMPILER_OPTIONS)
def _epoch(params: StackedParams, state: AdamState, rates, decays, indices, values, rows, labels, mask,
           order=None, steps=None, dense: bool = False, fused: bool = False):
    # A jitted epoch: its arrays and static flags are its arguments (one traced program).
    """One pass over pre-cut batches ((steps, cap) / (steps, B) arrays), in `order` ((steps,) batch numbers;
    default as stored) -> new params, Adam state and (steps,) losses. rates, decays: (K,) per model.
    steps: a () int32 array, how many of `order`'s batches to run (the rest of the arrays is padding that a
    search rounds up to a power of two, round_data: a traced count, so that corpora of other sizes run the same
    compiled program, which the persistent compilation cache then serves); losses after it are 0. default: all.
    fused: the dense step with W1's gradient and update in one Pallas kernel (_fused_step; interpreted off a
    GPU). A batch with no rows (padding) is skipped. A batch names each (row, column) once (make_batches of a
    canonical CSR matrix, _padded_batches): the dense step stores its nonzeros, it does not add them up."""
    hidden = params.w2.shape[1]
    lr = _per_model(rates, hidden)
    wd = _per_model(decays, hidden)
    batches = (indices, values, rows, labels, mask)
    interpret = jax.default_backend() != "gpu"

    def update(params, state, grads, real):
        updated = adam(wd).update(params, state, grads, lr)
        return jax.tree.map(lambda new, old: jnp.where(real, new, old), updated, (params, state))

    def step(params, state, buffer, batch):
        real = jnp.sum(batch[-1]) > 0  # a padding batch (no rows) changes nothing
        if not dense:
            loss, grads = narrowed(lambda b: jax.value_and_grad(stacked_loss)(params, *b), batch)
            return *update(params, state, grads, real), buffer, loss
        batch_indices, batch_values, batch_rows, labels, mask = batch
        x = write_batch(buffer, batch_indices, batch_values, batch_rows)  # (B, F): the epoch's zeros + this batch
        if fused:
            params, state, loss = _fused_step(params, state, lr, wd, x, labels, mask, real, interpret)
        else:
            loss, grads = jax.value_and_grad(_dense_loss)(params, x, labels, mask)
            params, state = update(params, state, grads, real)
        # The barrier orders the erase after everything that reads x; without it XLA may erase first and so copy
        # the whole (B, F) buffer to keep x (textclf/training/pallas.py's epoch does the same).
        x, params = jax.lax.optimization_barrier((x, params))
        return params, state, erase_batch(x, batch_indices, batch_values, batch_rows), loss

    # One loop for both: each step reads its batch by number (no reordered copy of the epoch's arrays).
    order = jnp.arange(indices.shape[0], dtype=jnp.int32) if order is None else order
    steps = indices.shape[0] if steps is None else steps

    def body(i, carry):
        params, state, buffer, losses = carry
        params, state, buffer, loss = step(params, state, buffer, tuple(a[order[i]] for a in batches))
        return params, state, buffer, losses.at[i].set(loss)

    losses = jnp.zeros((indices.shape[0],), params.w1.dtype)  # (steps,) sum over the K models of each batch mean
    params, state, _, losses = jax.lax.fori_loop(0, steps, body, (params, state, _zero_rows(params, labels, dense),
                                                                  losses))
    return params, state, losses


def _zero_rows(params: StackedParams, labels: jax.Array, dense: bool) -> jax.Array:
    """The all-zero (B, F) X that a dense epoch or scoring scan carries (labels: (steps, B)); each step stores its
    batch's nonzeros in it and erases them after (write_batch / erase_batch). A fresh zero fill and scatter-add each
    step were 23 of a 164 us step at F = 8,192, B = 64, K = 8 on an H200 (BENCHMARKS.md, "The model search's
    K-network step"). (0,) for the sparse formulation, which has no X."""
    return jnp.zeros((labels.shape[1], params.w1.shape[0]) if dense else (0,), params.w1.dtype)


def _batch_scores(params: StackedParams, batch: tuple, dense: bool, buffer: jax.Array
                  ) -> tuple[jax.Array, jax.Array]:
    """One flat batch (indices, values, rows (cap,); labels (B,), ...) -> ((B, K, C) scores, the buffer all zero
    again)."""
    if not dense:
        return narrowed(lambda b: stacked_logits(params, b[0], b[1], b[2], b[3].shape[0]), batch), buffer
    x = write_batch(buffer, *batch[:3])  # (B, F)
    scores = _dense_scores(params, x)
    x, scores = jax.lax.optimization_barrier((x, scores))  # erased after the product reads it (see _epoch)
    return scores, erase_batch(x, *batch[:3])


@functools.partial(jax.jit, static_argnames=("dense",), compiler_options=SEARCH_COMPILER_OPTIONS)
def _hits(params: StackedParams, indices, values, rows, labels, mask, dense: bool = False
          ) -> tuple[jax.Array, jax.Array]:
    """(steps, ...) batches -> ((K,) documents each model predicts right, () documents the ensemble (the K
    models' scores averaged) predicts right)."""
    def one(carry, batch):
        each_total, together_total, buffer = carry
        y, m = batch[3:]
        scores, buffer = _batch_scores(params, batch, dense, buffer)  # (B, K, C)
        each = jnp.sum((jnp.argmax(scores, axis=-1) == y[:, None]) * m[:, None], axis=0)
        together = jnp.sum((jnp.argmax(jnp.mean(scores, axis=1), axis=-1) == y) * m)
        return (each_total + each, together_total + together, buffer), None

    models = params.w2.shape[0]
    start = (jnp.zeros((models,), jnp.float32), jnp.zeros((), jnp.float32), _zero_rows(params, labels, dense))
    (each_total, together_total, _), _ = jax.lax.scan(one, start, (indices, values, rows, labels, mask))
    return each_total, together_total


def merged(params: StackedParams) -> Params:
    """The K models as one network whose scores are the mean of theirs: hidden units side by side (F, K*H),
    output weights stacked and divided by K (K*H, C), output bias the mean (C,), as NumPy Params, so a model
    file, prediction and the service take an ensemble unchanged."""
    models, hidden, classes = params.w2.shape
    w2 = np.asarray(params.w2).reshape(models * hidden, classes) / models
    return Params(np.asarray(params.w1), np.asarray(params.b1), w2, np.asarray(params.b2).mean(axis=0))


def joined_views(views: list[Params]) -> Params:
    """One network per input view (each a Params over its own columns, e.g. the words' and the character
    n-grams', pipelines.vectorize.Vectorizer.view_widths) -> one network over all the columns whose scores are
    the mean of theirs: W1 block-diagonal (view v's columns feed only view v's hidden units; the zero blocks
    keep them apart), b1 side by side, output weights stacked and divided by the number of views, output bias
    the mean. A model file, prediction and the service take it unchanged."""
    rows, columns = sum(v.w1.shape[0] for v in views), sum(v.w1.shape[1] for v in views)
    w1 = np.zeros((rows, columns), np.float32)
    row = column = 0
    for view in views:
        w1[row:row + view.w1.shape[0], column:column + view.w1.shape[1]] = np.asarray(view.w1)
        row, column = row + view.w1.shape[0], column + view.w1.shape[1]
    return Params(w1, np.concatenate([np.asarray(v.b1) for v in views]),
                  np.concatenate([np.asarray(v.w2) for v in views]) / len(views),
                  np.mean([np.asarray(v.b2) for v in views], axis=0))


def _start(seed: int, n_features: int, hidden: int, n_classes: int, models: int):
    """K freshly initialised networks and their zeroed Adam state."""
    params = init_stacked(jax.random.PRNGKey(seed), n_features, hidden, n_classes, models)
    return params, adam().init(params)


def _device_batches(matrix: sp.csr_matrix, labels: np.ndarray, batch_size: int, order: np.ndarray,
                    shape: tuple[int, int]) -> list[jax.Array]:
    return [jnp.asarray(a) for a in _padded_batches(matrix, labels, batch_size, order, *shape)]


def _padded_batches(matrix: sp.csr_matrix, labels: np.ndarray, batch_size: int, order: np.ndarray,
                    steps: int, cap: int) -> tuple[np.ndarray, ...]:
    """make_batches, padded to `steps` batches of `cap` nonzeros (padding rows have mask 0), so every fold and
    every vectorizer variant of one search reuses one compiled epoch."""
    batches = make_batches(canonical(matrix), labels, batch_size, order)  # every cell once: write_batch's stores
    out = []
    for position, array in enumerate(batches.arrays()):  # indices, values, rows (cap wide); labels, mask (B)
        width = cap if position < 3 else batch_size
        padded = np.zeros((steps, width), array.dtype)
        padded[: array.shape[0], : array.shape[1]] = array
        out.append(padded)
    return tuple(out)


def batch_shape(matrices: list[sp.csr_matrix], batch_size: int, orders: list[np.ndarray] | None = None
                ) -> tuple[int, int]:
    """(steps, cap) that fits the batches of every matrix cut in its order (orders[i]: a permutation of matrix
    i's rows; default: as stored): steps of the longest, cap of the densest batch, rounded up to a power of
    two. A matrix with a subset of another's columns (a search variant of the widest counts) has at most its
    nonzeros in every batch, so the widest view's shape fits every variant's.
    The cut is known, so the cap is its densest batch's, not the densest batch possible (the B longest
    documents): on news4 that was several times wider, and the CPU's gather step scales with the cap."""
    steps = max(-(-m.shape[0] // batch_size) for m in matrices)
    densest = 1
    for i, matrix in enumerate(matrices):
        lengths = np.diff(matrix.indptr)[orders[i] if orders is not None else slice(None)]
        padded = np.zeros(-(-len(lengths) // batch_size) * batch_size, np.int64)
        padded[: len(lengths)] = lengths
        densest = max(densest, int(padded.reshape(-1, batch_size).sum(axis=1).max(initial=0)))
    return steps, next_power_of_two(densest)


def cut_order(seed: int, n_rows: int) -> tuple[np.ndarray, np.random.Generator]:
    """The one shuffle that fit_candidates cuts its training batches from, and the generator after it (which
    then orders the batches of each epoch): callers that size the batches in advance draw the same cut."""
    rng = np.random.default_rng(seed)
    return rng.permutation(n_rows), rng


class StackedEpochs:
    """K networks side by side (different initialisations, the same batches; network k with rates[k] and
    decays[k]) as the step of the one epoch loop (textclf/training/fit.py, run_epochs): start() -> (params, Adam
    state); epoch(epoch, params, state) -> (params, state, _hits of the epoch's batches with the new params, (steps,)
    losses summed over the K networks). rows: the rows of train_x that train (default all); the others go to the
    device with them but no batch holds them, so that a held-out split needs no copy of the matrix (16 GB at ten
    million documents). The batches are those of train_x[rows]. train_x may be on the device already
    (device_data.ResidentRows): the same batches, and the caller's host copy can go first."""

    def __init__(self, train_x: sp.csr_matrix | ResidentRows, train_y: np.ndarray, n_classes: int,
                 rates: list[float], decays: list[float], epochs: int, batch_size: int, hidden: int, seed: int,
                 rows: np.ndarray | None = None):
        self.shape = (seed, train_x.shape[1], hidden, n_classes, len(rates))
        self.rates, self.decays = jnp.asarray(rates, jnp.float32), jnp.asarray(decays, jnp.float32)
        rng = np.random.default_rng(seed)
        self.n = train_x.shape[0] if rows is None else len(rows)
        # every epoch's shuffle, drawn first for the shape: as document numbers of train_x
        self.orders = [rng.permutation(self.n) if rows is None else rows[rng.permutation(self.n)]
                       for _ in range(epochs)]
        self.cap = batch_shape([train_x] * epochs, batch_size, self.orders)[1]
        self.batch_size = batch_size
        self.steps = -(-self.n // batch_size)  # (batch_shape's steps would count the rows not trained on too)
        # The training set goes to the device once and each epoch's batches are gathered there from its order
        # (textclf/training/device_data.py: the batches make_batches would cut, nonzero for nonzero), not cut on
        # the host, where each epoch's padded arrays held 11 GB of a million-document run's 18 GB peak.
        self.resident = on_device(train_x, train_y)
        self.dense = dense_default()
        self.segment = segment_steps(self.steps, 12 * self.cap)  # (the last segment may be shorter)

    def start(self):
        return _start(*self.shape)

    def _gathered(self, order: np.ndarray):
        return gathered_segments(self.resident, order, self.cap, self.segment)

    def epoch(self, epoch: int, params: StackedParams, state):
        order = np.pad(self.orders[epoch], (0, self.steps * self.batch_size - self.n), constant_values=-1)
        order = order.reshape(self.steps, self.batch_size).astype(np.int32)
        losses = []
        for batches in self._gathered(order):
            params, state, part = _epoch(params, state, self.rates, self.decays, *batches, dense=self.dense)
            losses.append(part)
        if len(losses) == 1:  # one segment: its batches, still on the device, are scored as they are
            return params, state, _hits(params, *batches, dense=self.dense), losses[0]
        # Several: each gathered again, so that no more than one segment's batches are on the device at once.
        hits = [_hits(params, *batches, dense=self.dense) for batches in self._gathered(order)]
        return params, state, (sum(h[0] for h in hits), sum(h[1] for h in hits)), jnp.concatenate(losses)


class _EpochClock:
    """Seconds an epoch took; the first one's counted as compilation (it compiles the step), as fit_network does."""

    def __init__(self):
        self.mark, self.compile_seconds, self.train_seconds = time.perf_counter(), 0.0, 0.0

    def lap(self, epoch: int) -> float:
        seconds, self.mark = time.perf_counter() - self.mark, time.perf_counter()
        if epoch == 0:
            self.compile_seconds, seconds = seconds, 0.0
        self.train_seconds += seconds
        return seconds


def _epoch_stats(epoch: int, losses, members: int, n: int, batch_size: int, train_correct: float,
                 eval_accuracy: float | None, seconds: float):
    """EpochStats of one epoch of K stacked networks (losses: (steps,) summed over them, each a batch mean)."""
    from textclf.training.events import EpochStats

    rows = np.minimum(batch_size, n - np.arange(len(losses)) * batch_size).clip(0)
    return EpochStats(epoch + 1, float((np.asarray(losses) * rows).sum() / n / members), train_correct / n,
                      eval_accuracy, seconds, n / seconds if seconds > 0 else float("inf"))


def fit_ensemble(train_x: sp.csr_matrix | ResidentRows, train_y: np.ndarray, n_classes: int, members: int,
                 learning_rate: float, weight_decay: float, epochs: int, batch_size: int, hidden: int, seed: int,
                 eval_x: sp.csr_matrix | None = None,
                 eval_y: np.ndarray | None = None, on_epoch: Callable | None = None, early_stopping=None,
                 training_rows: np.ndarray | None = None):
    """Train `members` networks side by side (different initialisations, the same batches and rate) on the
    training rows (training_rows of train_x, default all; train_x a CSR matrix or already on the device:
    StackedEpochs); -> (merged parameters, list of EpochStats, compile seconds, train seconds). After each epoch
    the ensemble is scored on (eval_x, eval_y) if given. No checkpoints: an interrupted ensemble starts over.
    early_stopping (textclf.training.fit.EarlyStopping): judges the merged network after each epoch; its best
    epoch's parameters are returned."""
    from textclf.training.fit import run_epochs

    dense = dense_default()
    eval_hits = device_scoring(eval_x, eval_y, batch_size, dense) if eval_x is not None and eval_x.shape[0] else None
    step = StackedEpochs(train_x, train_y, n_classes, [learning_rate] * members, [weight_decay] * members,
                           epochs, batch_size, hidden, seed, training_rows)
    n_training = train_x.shape[0] if training_rows is None else len(training_rows)
    clock = _EpochClock()

    def one_epoch(epoch: int, params, state):
        params, state, train_hits, losses = step.epoch(epoch, params, state)
        eval_accuracy = None if eval_hits is None else float(eval_hits(params)[1]) / eval_x.shape[0]
        seconds = clock.lap(epoch)
        return params, state, _epoch_stats(epoch, losses, members, n_training, batch_size, float(train_hits[1]),
                                           eval_accuracy, seconds)

    judge = None if early_stopping is None else (lambda epoch, params: early_stopping(epoch, lambda: merged(params)))
    params, _, history = run_epochs(*step.start(), [], 0, epochs, one_epoch, on_epoch, early_stop=judge)
    if early_stopping is not None and early_stopping.best_params is not None:
        return early_stopping.best_params, history, clock.compile_seconds, clock.train_seconds
    return merged(params), history, clock.compile_seconds, clock.train_seconds


def device_scoring(x: sp.csr_matrix, y: np.ndarray, batch_size: int, dense: bool
                   ) -> Callable[[StackedParams], tuple[jax.Array, jax.Array]]:
    """A scorer of (x, y) for stacked networks: params -> _hits over every row (each network's and the ensemble's
    documents right), on batches gathered on the device (device_data.batches_in_row_order)."""
    batches = batches_in_row_order(x, y, batch_size)

    def hits(params: StackedParams) -> tuple[jax.Array, jax.Array]:
        parts = [_hits(params, *batch, dense=dense) for batch in batches()]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    return hits


def stacked_is_faster() -> bool:
    """Whether an ensemble trains faster stacked (fit_ensemble) than one member after another (fit_members) on
    this process's default device. Stacked on a GPU (one K-wide step costs little more than one network's);
    one by one on a CPU, where a step is Adam's memory-bound pass over W1: 5 networks stacked took 10x one
    network's time on 2 cores (mr: 29.7 vs 2.9 s), one after another 5x."""
    return jax.default_backend() != "cpu"


def fit_members(train_x: sp.csr_matrix, train_y: np.ndarray, n_classes: int, settings, backend: str,
                eval_x: sp.csr_matrix | None = None, eval_y: np.ndarray | None = None,
                on_epoch: Callable | None = None):
    """settings.ensemble networks trained one after another (seeds seed, seed + 1, ...) by the one-network
    loop, merged into one network as fit_ensemble's are -> (merged parameters, EpochStats of every member's
    epochs, numbered on from one member to the next, compile seconds, train seconds)."""
    from dataclasses import replace

    from textclf.training.loop import fit_network

    members, history, compile_seconds, train_seconds, done = [], [], 0.0, 0.0, 0

    def numbered(stats):
        stats = replace(stats, epoch=done + stats.epoch)
        history.append(stats)
        if on_epoch:
            on_epoch(stats)

    for member in range(settings.ensemble):
        result = fit_network(train_x, train_y, n_classes, settings.replace(seed=settings.seed + member, ensemble=1),
                             backend, eval_x, eval_y, numbered)
        members.append(result.params)
        compile_seconds += result.compile_seconds
        train_seconds += result.train_seconds
        done = len(history)
    stacked = StackedParams(np.concatenate([np.asarray(m.w1) for m in members], axis=1),
                            np.concatenate([np.asarray(m.b1) for m in members]),
                            np.stack([np.asarray(m.w2) for m in members]), np.stack([np.asarray(m.b2) for m in members]))
    return merged(stacked), history, compile_seconds, train_seconds


# Rows per scoring batch where the K networks of fit_rates are scored on the device (no gradient: wide batches).
SCORE_BATCH = 1024


class RateChoice(NamedTuple):
    """fit_rates' answer."""

    params: Params  # the chosen network after its best held-out epoch (NumPy)
    chosen: int  # which of the candidates
    best_epoch: int  # 1-based
    held_out: list[list[float]]  # per candidate: its held-out accuracy after each epoch it trained
    history: list  # EpochStats of every epoch (one after another on a CPU)
    compile_seconds: float
    train_seconds: float


def fit_rates(train_x: sp.csr_matrix | ResidentRows, train_y: np.ndarray, n_classes: int, settings, backend: str,
              candidates: list[tuple[float, float, int]], held_x: sp.csr_matrix, held_y: np.ndarray,
              eval_x: sp.csr_matrix | None = None, eval_y: np.ndarray | None = None,
              on_epoch: Callable | None = None, patience: int = 1,
              stop_requested: Callable[[], bool] | None = None,
              training_rows: np.ndarray | None = None) -> RateChoice:
    """One network per candidate (learning rate, weight decay, epochs at most), the held-out documents
    (held_x, held_y: training documents none of them trains on) picking one network and its epoch: the best
    held-out accuracy, a tie going to the earlier candidate and the earlier epoch. Why: a corpus larger than the
    search's sample gets its rate from the sample, where an epoch has a fraction of the steps and the leading rates
    tie within noise; the choice did not carry to all the documents (BENCHMARKS.md, "100,000 documents on this
    2-core CPU"). Side by side on a GPU (one stacked program, the held-out documents scored on the device; training
    stops once `patience` epochs in a row improved none of them), one after another elsewhere (each stopped by its
    own textclf.training.fit.EarlyStopping). No checkpoints: where stop_requested() says so after an epoch,
    textclf.training.events.TrainingStopped is raised and the training starts over when resumed.
    After each epoch the leading network is scored on (eval_x, eval_y) if given, for the run's record.
    training_rows: the rows of train_x that train (default all; side by side without a copy, StackedEpochs).
    A train_x already on the device (ResidentRows) trains side by side only."""
    if stacked_is_faster() or isinstance(train_x, ResidentRows):
        return _rates_side_by_side(train_x, train_y, n_classes, settings, candidates, held_x, held_y, eval_x,
                                   eval_y, on_epoch, patience, stop_requested, training_rows)
    if training_rows is not None:
        train_x, train_y = train_x[training_rows], train_y[training_rows]
    return _rates_one_by_one(train_x, train_y, n_classes, settings, backend, candidates, held_x, held_y, eval_x,
                             eval_y, on_epoch, patience, stop_requested)


def _member(params: StackedParams, k: int) -> Params:
    """Network k of a stack, as NumPy Params."""
    hidden = params.w2.shape[1]
    units = slice(k * hidden, (k + 1) * hidden)
    return Params(np.asarray(params.w1[:, units]), np.asarray(params.b1[units]), np.asarray(params.w2[k]),
                  np.asarray(params.b2[k]))


def _rates_side_by_side(train_x, train_y, n_classes, settings, candidates, held_x, held_y, eval_x, eval_y, on_epoch,
                        patience, stop_requested, training_rows) -> RateChoice:
    from textclf.training.fit import run_epochs

    dense = dense_default()
    held_hits = device_scoring(held_x, held_y, SCORE_BATCH, dense)
    eval_hits = device_scoring(eval_x, eval_y, SCORE_BATCH, dense) if eval_x is not None and eval_x.shape[0] else None
    count = len(candidates)
    caps = np.array([epochs for _, _, epochs in candidates])  # a network is judged up to its own epoch count
    step = StackedEpochs(train_x, train_y, n_classes, [rate for rate, _, _ in candidates],
                           [decay for _, decay, _ in candidates], int(caps.max()), settings.batch_size,
                           settings.hidden, settings.seed, training_rows)
    n_training = train_x.shape[0] if training_rows is None else len(training_rows)
    judge = _HeldOutRates(held_hits, held_x.shape[0], caps, patience)
    clock = _EpochClock()

    def one_epoch(epoch: int, params, state):
        params, state, train_hits, losses = step.epoch(epoch, params, state)
        leading = judge.score(epoch, params)
        train_correct = float(np.asarray(train_hits[0])[leading])
        eval_accuracy = None
        if eval_hits is not None:
            eval_accuracy = float(np.asarray(eval_hits(params)[0])[leading]) / eval_x.shape[0]
        return params, state, _epoch_stats(epoch, losses, count, n_training, settings.batch_size, train_correct,
                                           eval_accuracy, clock.lap(epoch))

    _, _, history = run_epochs(*step.start(), [], 0, int(caps.max()), one_epoch, on_epoch,
                               stop_requested=stop_requested, early_stop=judge.stale)
    chosen = int(np.argmax(judge.best))
    return RateChoice(judge.best_params[chosen], chosen, int(judge.best_epoch[chosen]), judge.held_out, history,
                      clock.compile_seconds, clock.train_seconds)


class _HeldOutRates:
    """The held-out documents' judgement of K rate candidates side by side: each one's best epoch and parameters
    up to its own epoch cap; the round stops once `patience` epochs in a row improved none of them."""

    def __init__(self, held_hits, n_held: int, caps: np.ndarray, patience: int):
        self.held_hits, self.n_held, self.caps, self.patience = held_hits, n_held, caps, patience
        self.best = np.full(len(caps), -1.0)
        self.best_epoch, self.best_params = np.zeros(len(caps), int), [None] * len(caps)
        self.held_out: list[list[float]] = [[] for _ in caps]
        self.improved, self.without_gain = False, 0

    def score(self, epoch: int, params) -> int:
        """Score the candidates after this epoch -> the leading one (the first maximum: the earlier candidate)."""
        accuracy = np.asarray(self.held_hits(params)[0]) / self.n_held  # (K,)
        improved = (accuracy > self.best) & (epoch < self.caps)
        for k in np.flatnonzero(improved):
            self.best[k], self.best_epoch[k], self.best_params[k] = accuracy[k], epoch + 1, _member(params, int(k))
        for k in np.flatnonzero(epoch < self.caps):
            self.held_out[k].append(round(float(accuracy[k]), 6))
        self.improved = bool(improved.any())
        return int(np.argmax(self.best))

    def stale(self, epoch: int, params) -> bool:
        """run_epochs' early_stop: True once no candidate has improved for `patience` epochs."""
        self.without_gain = 0 if self.improved else self.without_gain + 1
        return self.without_gain >= self.patience


def _rates_one_by_one(train_x, train_y, n_classes, settings, backend, candidates, held_x, held_y, eval_x, eval_y,
                      on_epoch, patience, stop_requested) -> RateChoice:
    from dataclasses import replace

    from textclf.training.fit import EarlyStopping
    from textclf.training.loop import fit_network

    history, compile_seconds, train_seconds, done, judges, networks = [], 0.0, 0.0, 0, [], []

    def numbered(stats):
        stats = replace(stats, epoch=done + stats.epoch)
        history.append(stats)
        if on_epoch:
            on_epoch(stats)

    for rate, decay, epochs in candidates:
        judge = EarlyStopping(held_x, held_y, patience)
        result = fit_network(train_x, train_y, n_classes,
                             settings.replace(learning_rate=rate, weight_decay=decay, epochs=epochs, ensemble=1),
                             backend, eval_x, eval_y, numbered, early_stopping=judge, stop_requested=stop_requested)
        judges.append(judge)
        networks.append(result.params)
        compile_seconds += result.compile_seconds
        train_seconds += result.train_seconds
        done = len(history)
    best = [judge.accuracies[judge.best_epoch - 1] for judge in judges]
    chosen = int(np.argmax(best))
    return RateChoice(networks[chosen], chosen, judges[chosen].best_epoch,
                      [[round(a, 6) for a in judge.accuracies] for judge in judges], history, compile_seconds,
                      train_seconds)


class RoundData(NamedTuple):
    """One round's batches on the device, cut before the round trains (round_data): the search builds the next
    round's while the device trains the current one."""

    train: tuple[jax.Array, ...]  # indices, values, rows (steps, cap); labels, mask (steps, B): cut from one shuffle
    val: tuple[jax.Array, ...]  # the validation rows in order, the same five arrays at the scoring batch size
    n_val: int  # validation documents
    n_features: int
    orders: np.random.Generator  # draws the order in which each epoch visits the training batches
    n_steps: int  # training batches an epoch visits (the arrays' steps beyond them: padding, see round_data)

    @property
    def batch_size(self) -> int:
        return self.train[3].shape[1]  # labels: (steps, B)


def round_data(train_x: sp.csr_matrix, train_y: np.ndarray, val_x: sp.csr_matrix, val_y: np.ndarray,
               batch_size: int, seed: int, shape: tuple[int, int], val_shape: tuple[int, int],
               score_batch: int | None = None) -> RoundData:
    """Cut and upload one round's batches. shape / val_shape: (steps, cap) of the training / validation batches
    (batch_shape), shared by the rounds of one search so that they compile once; a cut they did not foresee
    gets a wider cap (one more compilation) rather than losing nonzeros. score_batch: rows per validation batch
    (default batch_size): scoring has no gradient, so a GPU scores 1,024 rows a step where it trains on 64."""
    score_batch = score_batch or batch_size
    # The batches are cut once, from one shuffle, and each epoch visits them in a new order: cutting them anew
    # on the host every epoch cost more than the GPU's training (0.1-0.2 s an epoch on news4).
    cut, rng = cut_order(seed, train_x.shape[0])
    shape = tuple(map(max, shape, batch_shape([train_x], batch_size, [cut])))
    val_shape = tuple(map(max, val_shape, batch_shape([val_x], score_batch)))
    # The arrays' steps rounded up to a power of two (padding batches, never visited: _epoch's traced `steps`;
    # scored as no rows), so that a corpus of another size compiles to the same programs and a later run finds
    # them in the persistent compilation cache (a first search is mostly compilation: BENCHMARKS.md, "Accuracy").
    padded = (next_power_of_two(shape[0]), shape[1])
    val_padded = (next_power_of_two(val_shape[0]), val_shape[1])
    return RoundData(tuple(_device_batches(train_x, train_y, batch_size, cut, padded)),
                     tuple(_device_batches(val_x, val_y, score_batch, np.arange(val_x.shape[0]), val_padded)),
                     val_x.shape[0], train_x.shape[1], rng, shape[0])


def fit_candidates(data: RoundData, n_classes: int, rates: list[float], decays: list[float], epochs: int,
                   hidden: int, seed: int, patience: int | None = None, initial: StackedParams | None = None,
                   scores_from: int | None = None):
    """Train K = len(rates) networks side by side for `epochs` epochs on one round's batches (round_data),
    network k with learning rate rates[k] and weight decay decays[k]; -> (epochs, K) validation accuracy after
    each epoch. patience: stop once this many epochs in a row improved no network's best validation accuracy
    (early stopping); the epochs not run score 0. initial: the K networks' starting weights (copied, not
    consumed), else drawn from `seed` as init_stacked does: a search starts every round of a fold from the same
    weights, and drawing 25M uniform numbers cost ~0.3 s a round. scores_from: return (accuracies, the
    (epochs run from this one (1-based) on, validation documents, K, C) log-probabilities after each of them),
    for the search to score combinations of networks (an ensemble, networks trained on other columns)."""
    models = len(rates)
    if initial is None:
        params = init_stacked(jax.random.PRNGKey(seed), data.n_features, hidden, n_classes, models)
    else:
        params = jax.tree.map(jnp.copy, initial)  # the epoch donates (overwrites) its params
    state = adam().init(params)
    rates_array = jnp.asarray(rates, jnp.float32)
    decays_array = jnp.asarray(decays, jnp.float32)
    from textclf.training.fit import run_epochs

    dense, fused = _step_kind(data.batch_size, data.n_features, models * hidden)
    steps, padded = data.n_steps, data.train[0].shape[0]
    visited = jnp.asarray(steps, jnp.int32)
    accuracies = np.zeros((epochs, models))
    best, scores, stale = np.full(models, -1.0), [], 0  # (stale: epochs in a row that improved no network)

    def one_epoch(epoch: int, params, state):
        # a new order of the cut batches each epoch; the padding batches after them are never visited
        order = np.concatenate([data.orders.permutation(steps), np.arange(steps, padded)]).astype(np.int32)
        params, state, _ = _epoch(params, state, rates_array, decays_array, *data.train, jnp.asarray(order),
                                  visited, dense=dense, fused=fused)
        each, _ = _hits(params, *data.val, dense=dense)
        accuracies[epoch] = np.asarray(each) / max(1, data.n_val)
        if scores_from is not None and epoch + 1 >= scores_from:
            batched = np.asarray(_scores(params, *data.val[:4], dense=dense))  # (steps, B, K, C)
            scores.append(batched.reshape(-1, *batched.shape[2:])[: data.n_val])
        return params, state, None  # (the rounds keep no EpochStats: the accuracies are their record)

    def no_gain(epoch: int, params) -> bool:
        nonlocal best, stale
        stale = 0 if np.any(accuracies[epoch] > best) else stale + 1
        best = np.maximum(best, accuracies[epoch])
        return patience is not None and stale >= patience

    run_epochs(params, state, [], 0, epochs, one_epoch, early_stop=no_gain)
    return (accuracies, np.stack(scores)) if scores_from is not None else accuracies


# Compiling ahead, without running: for a thread while the device trains the search's first rounds. jax keeps what
# it compiled, and the later call of the same program with arrays of these shapes runs it without compiling (and
# the persistent compilation cache, textclf/training/backends.py, keeps it for the next process), so a first search
# waits for compilation less (a first search is mostly compilation, BENCHMARKS.md "Accuracy").


def precompile_epoch(data: RoundData, n_classes: int, models: int, hidden: int, batch_size: int,
                     shape: tuple[int, int]) -> None:
    """The epoch program that fit_candidates will run for a round of K = `models` networks over `data`'s input
    width, cut at `batch_size` into batches of `shape` (steps, cap; round_data's)."""
    dense, fused = _step_kind(batch_size, data.n_features, models * hidden)
    steps = next_power_of_two(shape[0])

    # Shapes and dtypes only, as the round's uploaded (uncommitted) arrays lower: a sharding here would change the
    # program's text, and so its cache key.
    train = [jax.ShapeDtypeStruct((steps, shape[1]), a.dtype) for a in data.train[:3]] + \
        [jax.ShapeDtypeStruct((steps, batch_size), a.dtype) for a in data.train[3:]]
    params = _abstract_params(data, n_classes, models, hidden)
    per_model = jax.ShapeDtypeStruct((models,), jnp.float32)
    _epoch.lower(params, jax.eval_shape(adam().init, params), per_model, per_model, *train,
                 jax.ShapeDtypeStruct((steps,), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32),
                 dense=dense, fused=fused).compile()


def precompile_scores(data: RoundData, n_classes: int, models: int, hidden: int) -> None:
    """The program of fit_candidates(..., scores_from=...) for K = `models` networks over `data`'s validation
    batches (the search's networks trial)."""
    _scores.lower(_abstract_params(data, n_classes, models, hidden), *data.val[:4], dense=dense_default()).compile()


def _abstract_params(data: RoundData, n_classes: int, models: int, hidden: int) -> StackedParams:
    # (init_stacked's own eval_shape: traced inside another function it would be a nested jit, which its
    # compiler options do not allow)
    return init_stacked.eval_shape(jax.random.PRNGKey(0), data.n_features, hidden, n_classes, models)


@functools.partial(jax.jit, static_argnames=("dense",), compiler_options=SEARCH_COMPILER_OPTIONS)
def _scores(params: StackedParams, indices, values, rows, labels, dense: bool = False) -> jax.Array:
    """(steps, ...) batches -> (steps, B, K, C) log-probabilities of each model (the validation rows in order,
    then padding)."""
    def one(buffer, batch):
        scores, buffer = _batch_scores(params, batch, dense, buffer)
        return buffer, jax.nn.log_softmax(scores, axis=-1)

    return jax.lax.scan(one, _zero_rows(params, labels, dense), (indices, values, rows, labels))[1]
