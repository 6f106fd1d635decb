"""The step of K networks side by side (textclf/models/stacked.py): the model search's candidates, an ensemble and
the rate candidates. A Step (textclf/training/steps/step.py) like one network's, run by the one epoch loop
(textclf/training/epochs.py, run_epochs) through textclf/training/ensembles.py.

The K networks share one input (the same documents, the same vectorizer columns) and differ in initialisation,
learning rate and weight decay; Adam runs with a per-network learning rate and weight decay. Two XLA
formulations of the step (sparse: gather the batch's W1 rows; dense: the batch as (B, F) rows times W1) and, on
a GPU at batches up to 256, the dense one with W1's gradient and Adam update fused in one Pallas kernel
(pallas_kernels/stacked_input_adam.py); each is chosen where it measured fastest (BENCHMARKS.md, "The model
search's K-network step").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp

from textclf.models.stacked import (
    dense_loss,
    dense_scores,
    head,
    init_stacked,
    stacked_logits,
    stacked_loss,
    summed_loss,
)
from textclf.models.weights import Params
from textclf.training.backends import INIT_COMPILER_OPTIONS, SEARCH_COMPILER_OPTIONS
from textclf.training.device_data import erase_batch, narrowed, write_batch
from textclf.training.steps.optimizers import AdamState, adam, adam_corrections
from textclf.training.steps.step import Step

# K seeded initialisations as one program, with the search's compiler options.
init_stack = jax.jit(
    init_stacked,
    static_argnames=("n_features", "hidden", "n_classes", "models", "gain"),
    compiler_options={**SEARCH_COMPILER_OPTIONS, **INIT_COMPILER_OPTIONS},
)


def _per_model(values: jax.Array, units: int) -> Params:
    """(K,) per-model values (learning rates, weight decays) shaped to broadcast against each parameter of
    Params; units: W1's columns a model (H, or C for linear models)."""
    columns = jnp.repeat(values, units)  # (K*units,)
    return Params(columns[None, :], columns, values[:, None, None], values[:, None])


def dense_default() -> bool:
    """The faster formulation of the step on this process's default device (stacked_logits says why)."""
    return jax.default_backend() == "gpu"


# The fused Pallas W1 update is used up to this batch size, where it trained faster than XLA's dense step; at wider
# batches cuBLAS's product and XLA's Adam fusions are faster (BENCHMARKS.md, "The model search's K-network step").
FUSED_MAX_BATCH = 256


def pallas_default(batch_size: int) -> bool:
    """Whether the search's K-network step updates W1 with the fused Pallas kernel (pallas_kernels/
    stacked_input_adam.py): on a GPU, at the batch sizes where it measured faster than XLA. Elsewhere the
    kernel would only run interpreted."""
    return jax.default_backend() == "gpu" and batch_size <= FUSED_MAX_BATCH


# The fused W1 update's tiling (`python -m benchmarks.kernels.kmodel_step --blocks ... --all` chooses it;
# BENCHMARKS.md): a batch of one 64-row chunk (the search's rounds) takes
# pallas_kernels.stacked_input_adam.StackedInputAdamBlocks's defaults; a batch of several chunks these fields, the
# batch read as columns (x^T (F, B), dpre^T (N, B)), so that both operands of the gradient's product run along the
# summed rows as TF32 tensor-core products take them. FUSED_BLOCKS replaces fields of either (the benchmark sets it
# to try other tilings). The kernel's module is imported only where it runs (a GPU).
FUSED_CHUNKED_BLOCKS = dict(block_f=64, block_n=64, num_warps=4, num_stages=3, sub_tiles=1, columns=True)
FUSED_BLOCKS: dict = {}


def _fused_blocks(batch_size: int):
    from pallas_kernels.stacked_input_adam import StackedInputAdamBlocks

    chunked = batch_size > StackedInputAdamBlocks.block_m
    return StackedInputAdamBlocks(**{**(FUSED_CHUNKED_BLOCKS if chunked else {}), **FUSED_BLOCKS})


def step_kind(batch_size: int, n_features: int, hidden_units: int) -> tuple[bool, bool]:
    """(dense, fused) of _epoch for this batch size and (n_features, hidden_units) first layer on this process's
    device: what fit_candidates runs, and so what precompile_epoch must compile."""
    dense = dense_default()
    return dense, dense and pallas_default(batch_size) and fused_fits(batch_size, n_features, hidden_units)


def fused_fits(batch_size: int, n_features: int, hidden_units: int) -> bool:
    """Whether the fused W1 update's tiling for this batch size tiles an (n_features, hidden_units) first layer (a
    search's widths are powers of two and K*H a multiple of 128 at the default H; other shapes take the XLA step)."""
    blocks = _fused_blocks(batch_size)
    return n_features % (blocks.block_f * blocks.sub_tiles) == 0 and hidden_units % blocks.block_n == 0


# Nine arguments: the step's state, per-network rates, the batch and its padding flag, inside the traced epoch.
def _fused_step(
    params: Params,
    state: AdamState,
    lr: Params,
    wd: Params,
    x,
    labels,
    mask,
    live,
    interpret: bool,
    loss_name: str = "log",
):
    """One step with the dense formulation's arithmetic on x (B, F), W1's gradient and Adam update fused in one
    Pallas kernel (never written to memory); the small layers (b1, W2, b2) take textclf.training.steps.optimizers.adam.
    live: False for a padding batch, which then changes nothing (the kernel leaves W1 and its moments in place,
    see its module).
    -> (params, state, loss)."""
    from pallas_kernels.stacked_input_adam import stacked_input_adam

    pre = x @ params.w1 + params.b1  # (B, K*H)
    loss, (dpre, dw2, db2) = jax.value_and_grad(
        lambda p, w2, b2: summed_loss(head(p, w2, b2), labels, mask, loss_name), argnums=(0, 1, 2)
    )(pre, params.w2, params.b2)
    small_state = AdamState(state.m[1:], state.v[1:], state.step)
    small, small_state = jax.tree.map(
        lambda new, old: jnp.where(live, new, old),
        adam(wd[1:]).update((params.b1, params.w2, params.b2), small_state, (dpre.sum(axis=0), dw2, db2), lr[1:]),
        ((params.b1, params.w2, params.b2), small_state),
    )
    c1, c2 = adam_corrections(state.step + 1)
    scalars = jnp.stack([c1, c2, live.astype(c1.dtype), jnp.zeros_like(c1)]).astype(params.w1.dtype)
    w1, m1, v1 = stacked_input_adam(
        x,
        dpre,
        params.w1,
        state.m.w1,
        state.v.w1,
        lr.w1[0],
        wd.w1[0],
        scalars,
        block_sizes=_fused_blocks(x.shape[0]),
        interpret=interpret,
    )
    return (
        Params(w1, *small),
        AdamState(Params(m1, *small_state.m), Params(v1, *small_state.v), small_state.step),
        loss,
    )


@functools.partial(
    jax.jit, donate_argnums=(0, 1), static_argnames=("dense", "fused", "loss"), compiler_options=SEARCH_COMPILER_OPTIONS
)
def stacked_epoch(
    params: Params,
    state: AdamState,
    rates,
    decays,
    indices,
    values,
    rows,
    labels,
    mask,
    order=None,
    steps=None,
    dense: bool = False,
    fused: bool = False,
    loss: str = "log",
):
    # A jitted epoch: its arrays and static flags are its arguments (one traced program).
    """One pass over pre-cut batches ((steps, cap) / (steps, B) arrays), in `order` ((steps,) batch numbers;
    default as stored) -> new params, Adam state and (steps,) losses. rates, decays: (K,) per model.
    steps: a () int32 array, how many of `order`'s batches to run (the rest of the arrays is padding that a
    search rounds up to a power of two, round_data: a traced count, so that corpora of other sizes run the same
    compiled program, which the persistent compilation cache then serves); losses after it are 0. default: all.
    fused: the dense step with W1's gradient and update in one Pallas kernel (_fused_step; interpreted off a
    GPU). loss: the models' loss (textclf.models.stacked.summed_loss). A batch with no rows (padding) is skipped. A
    batch names each (row, column) once (make_batches of a canonical CSR matrix, _padded_batches): the dense step
    stores its nonzeros, it does not add them up."""
    units = params.w1.shape[1] // params.w2.shape[0]
    lr = _per_model(rates, units)
    wd = _per_model(decays, units)
    batches = (indices, values, rows, labels, mask)
    interpret = jax.default_backend() != "gpu"
    loss_name = loss  # (step's own `loss` is each batch's value)

    def update(params, state, grads, real):
        updated = adam(wd).update(params, state, grads, lr)
        return jax.tree.map(lambda new, old: jnp.where(real, new, old), updated, (params, state))

    def step(params, state, buffer, batch):
        real = jnp.sum(batch[-1]) > 0  # a padding batch (no rows) changes nothing
        if not dense:
            loss, grads = narrowed(lambda b: jax.value_and_grad(stacked_loss)(params, *b, loss_name), batch)
            return *update(params, state, grads, real), buffer, loss
        batch_indices, batch_values, batch_rows, labels, mask = batch
        x = write_batch(buffer, batch_indices, batch_values, batch_rows)  # (B, F): the epoch's zeros + this batch
        if fused:
            params, state, loss = _fused_step(params, state, lr, wd, x, labels, mask, real, interpret, loss_name)
        else:
            loss, grads = jax.value_and_grad(dense_loss)(params, x, labels, mask, loss_name)
            params, state = update(params, state, grads, real)
        # The barrier orders the erase after everything that reads x; without it XLA may erase first and so copy
        # the whole (B, F) buffer to keep x (textclf/training/steps/pallas.py's epoch does the same).
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
    params, state, _, losses = jax.lax.fori_loop(
        0, steps, body, (params, state, _zero_rows(params, labels, dense), losses)
    )
    return params, state, losses


def _zero_rows(params: Params, labels: jax.Array, dense: bool) -> jax.Array:
    """The all-zero (B, F) X that a dense epoch or scoring scan carries (labels: (steps, B)); each step stores its
    batch's nonzeros in it and erases them after (write_batch / erase_batch). A fresh zero fill and scatter-add each
    step were 23 of a 164 us step at F = 8,192, B = 64, K = 8 on an H200 (BENCHMARKS.md, "The model search's
    K-network step"). (0,) for the sparse formulation, which has no X."""
    return jnp.zeros((labels.shape[1], params.w1.shape[0]) if dense else (0,), params.w1.dtype)


def _batch_scores(params: Params, batch: tuple, dense: bool, buffer: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One flat batch (indices, values, rows (cap,); labels (B,), ...) -> ((B, K, C) scores, the buffer all zero
    again)."""
    if not dense:
        return narrowed(lambda b: stacked_logits(params, b[0], b[1], b[2], b[3].shape[0]), batch), buffer
    x = write_batch(buffer, *batch[:3])  # (B, F)
    scores = dense_scores(params, x)
    x, scores = jax.lax.optimization_barrier((x, scores))  # erased after the product reads it (see _epoch)
    return scores, erase_batch(x, *batch[:3])


@functools.partial(jax.jit, static_argnames=("dense",), compiler_options=SEARCH_COMPILER_OPTIONS)
def stacked_hits(
    params: Params, indices, values, rows, labels, mask, dense: bool = False
) -> tuple[jax.Array, jax.Array]:
    """(steps, ...) batches -> ((K,) documents each model predicts right, () documents the ensemble (the K
    models' scores averaged) predicts right). Label sets ((steps, B, C) labels): for each network and for their
    mean, (per label (C, 3) true positives, false positives and false negatives at probability 0.5, the summed
    F1 of each document's set), from which candidates.label_set_score computes the metric."""
    sets = labels.ndim == 3

    def right(scores, y, m):  # (B, ..., C) scores -> documents right, or label sets' counts
        if not sets:
            return jnp.sum(
                (jnp.argmax(scores, axis=-1) == y.reshape(y.shape + (1,) * (scores.ndim - 2)))
                * m.reshape(m.shape + (1,) * (scores.ndim - 2)),
                axis=0,
            )
        said = (scores > 0).astype(jnp.float32)
        truth = y.reshape(y.shape[:1] + (1,) * (scores.ndim - 2) + y.shape[1:]).astype(jnp.float32)
        weight = m.reshape(m.shape + (1,) * (scores.ndim - 1))
        tp, fp, fn = said * truth, said * (1 - truth), (1 - said) * truth  # (B, ..., C)
        counts = jnp.stack([jnp.sum(c * weight, axis=0) for c in (tp, fp, fn)], axis=-1)  # (..., C, 3)
        # a document's F1: 2 |said & true| / (|said| + |true|); 1 where both are empty (scikit-learn's samples-F1)
        hits, sizes = jnp.sum(tp, axis=-1), jnp.sum(said + truth, axis=-1)
        document_f1 = jnp.where(sizes > 0, 2 * hits / jnp.maximum(sizes, 1.0), 1.0)
        return counts, jnp.sum(document_f1 * weight[..., 0], axis=0)

    def one(carry, batch):
        each_total, together_total, buffer = carry
        y, m = batch[3:]
        scores, buffer = _batch_scores(params, batch, dense, buffer)  # (B, K, C)
        add = functools.partial(jax.tree.map, jnp.add)
        return (
            add(each_total, right(scores, y, m)),
            add(together_total, right(jnp.mean(scores, axis=1), y, m)),
            buffer,
        ), None

    models, classes = params.w2.shape[0], params.w2.shape[-1]
    if sets:
        each = (jnp.zeros((models, classes, 3), jnp.float32), jnp.zeros((models,), jnp.float32))
        together = (jnp.zeros((classes, 3), jnp.float32), jnp.zeros((), jnp.float32))
    else:
        each, together = jnp.zeros((models,), jnp.float32), jnp.zeros((), jnp.float32)
    start = (each, together, _zero_rows(params, labels, dense))
    (each_total, together_total, _), _ = jax.lax.scan(one, start, (indices, values, rows, labels, mask))
    return each_total, together_total


def start_stack(seed: int, n_features: int, hidden: int, n_classes: int, models: int, columns: int | None = None):
    """K freshly initialised networks and their zeroed Adam state. columns: as Step.start_state's."""
    from textclf.models.mlp import glorot_limit

    limit = None if columns is None or hidden == 0 else glorot_limit(columns, hidden)
    return _start_stack(jax.random.PRNGKey(seed), n_features, hidden, n_classes, models, limit)


# The seeded networks and their Adam state as one program, and a given stack copied with its state as another:
# built op by op, each small operation compiled on its own (docs/decisions.md, "The search's cost").
@functools.partial(
    jax.jit,
    static_argnames=("n_features", "hidden", "n_classes", "models"),
    compiler_options={**SEARCH_COMPILER_OPTIONS, **INIT_COMPILER_OPTIONS},
)
def _start_stack(key, n_features: int, hidden: int, n_classes: int, models: int, w1_limit=None):
    params = init_stacked(key, n_features, hidden, n_classes, models, w1_limit=w1_limit)
    return params, adam().init(params)


@functools.partial(jax.jit, compiler_options=SEARCH_COMPILER_OPTIONS)
def _ready_stack(params: Params):
    return jax.tree.map(jnp.copy, params), adam().init(params)  # a copy: the epoch donates (overwrites) its params


@functools.partial(jax.jit, static_argnames=("dense",), compiler_options=SEARCH_COMPILER_OPTIONS)
def stacked_scores(params: Params, indices, values, rows, labels, dense: bool = False) -> jax.Array:
    """(steps, ...) batches -> (steps, B, K, C) log-probabilities of each model (the validation rows in order,
    then padding)."""

    def one(buffer, batch):
        scores, buffer = _batch_scores(params, batch, dense, buffer)
        return buffer, jax.nn.log_softmax(scores, axis=-1)

    return jax.lax.scan(one, _zero_rows(params, labels, dense), (indices, values, rows, labels))[1]


@dataclass(frozen=True)
class StackedStep(Step):
    """K = `models` networks side by side as a Step: start_state -> (stacked Params, Adam state); epoch() -> the
    jitted stacked_epoch, (params, state, rates (K,), decays (K,), indices, values, rows, labels, mask, order=None,
    steps=None) -> (params, state, (steps,) losses summed over the K networks): its learning rates and weight
    decays are per network where one network's are per step. `for_batch` picks the formulation; `finish` merges
    the stack into the one network whose scores are the mean of theirs."""

    models: int = 1
    dense: bool = False  # the batch as (B, F) rows times W1 (a GPU's), else W1's rows gathered (a CPU's)
    fused: bool = False  # the dense step with W1's gradient and Adam update in one Pallas kernel
    loss: str = "log"  # the models' loss (textclf.settings.LINEAR_LOSSES)

    @classmethod
    def for_batch(cls, batch_size: int, n_features: int, hidden: int, models: int, loss: str = "log") -> StackedStep:
        """The step for K = models networks of (n_features, hidden) first layers at this batch size on this
        process's device: what fit_candidates runs, and so what precompile_epoch must compile. hidden 0: K linear
        models, whose narrow W1 (F, K*C) the fused kernel's tiling is not made for: XLA's step."""
        dense, fused = step_kind(batch_size, n_features, models * hidden)
        return cls("flat", models, dense, fused and hidden > 0, loss)

    def start_state(
        self,
        seed,
        n_features: int,
        hidden: int,
        n_classes: int,
        gain: float = 1.0,
        optimizer: str = "adam",
        columns: int | None = None,
    ):
        if gain != 1.0 or optimizer != "adam":
            raise ValueError("networks side by side start at gain 1.0 and train with Adam")
        return start_stack(seed, n_features, hidden, n_classes, self.models, columns)

    def ready_state(self, params: Params, optimizer: str = "adam"):
        return _ready_stack(params)

    def epoch(
        self, optimizer: str = "adam", momentum: float = 0.0, weight_decay: float = 0.0, n_classes: int = 0
    ) -> Callable:
        return functools.partial(stacked_epoch, dense=self.dense, fused=self.fused, loss=self.loss)

    def hits(self, params: Params, indices, values, rows, labels, mask):
        """-> ((K,) documents each network predicts right, () documents their mean predicts right)."""
        return stacked_hits(params, indices, values, rows, labels, mask, dense=self.dense)

    def log_probabilities(self, params: Params, indices, values, rows, labels) -> jax.Array:
        """-> (steps, B, K, C) each network's log-probabilities of the batches' rows."""
        return stacked_scores(params, indices, values, rows, labels, dense=self.dense)

    def unpad(self, params: Params, n_classes: int, n_features: int | None = None) -> Params:
        return params  # never padded

    def finish(self, params: Params, n_classes: int, n_features: int | None = None) -> Params:
        from textclf.models.stacked import merged

        return merged(params)
