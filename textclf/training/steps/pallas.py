"""The training epoch on the Pallas path: same inputs and outputs as the XLA epoch in network.py.

Two input formats (KernelConfig.input_format): "dense" (below) and "sparse", where the hidden layer and dW1 are
computed from the flat sparse batch itself by pallas_kernels/sparse_hidden.py (no dense X at all).

Each step writes its sparse minibatch into a dense (B, Kp) matrix on the device (bf16 by default, 4 MB at
B = 64; one zero buffer per epoch, nonzeros stored before the step and erased after it), then runs:
hidden_forward -> softmax_xent -> hidden_backward (per-block partial gradients) -> two update launches: W1
with dW1 computed inside its update (input_grad_update for sgd, input_grad_adam_update for adam: dW1 never
reaches memory), and b1, W2, b2 in one head_update / head_adam_update program.
Parameters live padded on this path (see pallas_kernels/mlp.py); pad_params/unpad_params convert once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pallas_kernels.common import round_up
from pallas_kernels.config import KernelConfig
from pallas_kernels.adam_update import adam_update
from pallas_kernels.head_update import head_adam_update, head_update
from pallas_kernels.hidden_backward import hidden_backward_partials
from pallas_kernels.input_grad import input_grad_adam_update, input_grad_update
from pallas_kernels.mlp import backward_to_hidden, forward, output_loss, weight_grad
from pallas_kernels.sgd_update import sgd_update
from pallas_kernels.softmax_xent import padded_classes
from pallas_kernels.pieces_hidden import finish_hidden, pieces_gather_sum, pieces_input_grad
from pallas_kernels.sparse_hidden import sparse_hidden_forward, sparse_input_grad, sparse_input_grad_update
from textclf.models.mlp import Params
from textclf.training.device_data import erase_batch, write_batch
from textclf.training.steps.optimizers import AdamState, adam_corrections


def padded_features(n_features: int, config: KernelConfig) -> int:
    block = max(
        config.forward.block_k * config.forward.split_k,
        config.grad.block_k,
        config.dw.block_k,
        config.sparse_grad.block_k,
    )
    return round_up(n_features, block)


def pad_params(params: Params, config: KernelConfig) -> Params:
    k = padded_features(params.w1.shape[0], config)
    c = padded_classes(params.w2.shape[1])
    return Params(
        jnp.pad(params.w1, ((0, k - params.w1.shape[0]), (0, 0))),
        params.b1,
        jnp.pad(params.w2, ((0, 0), (0, c - params.w2.shape[1]))),
        jnp.pad(params.b2, (0, c - params.b2.shape[0])),
    )


def unpad_params(params: Params, n_features: int, n_classes: int) -> Params:
    return Params(params.w1[:n_features], params.b1, params.w2[:, :n_classes], params.b2[:n_classes])


def dense_batch(indices, values, rows, batch_size: int, n_columns: int, dtype) -> jax.Array:
    """Flat sparse batch -> (batch_size, n_columns) dense matrix."""
    return jnp.zeros((batch_size, n_columns), dtype).at[rows, indices].add(values.astype(dtype))


# hidden_backward partials summed by head_update's single program up to this many; beyond, XLA's parallel
# reductions first (one program looping over 64 partials took 38 us at B = 4,096).
HEAD_MAX_PARTS = 8


# Twelve arguments and ~100 lines: one step chains the forward, loss and update kernels over the batch's arrays;
# split, each piece would pass all of them on.
def pallas_train_step(
    params: Params,
    opt_state,
    x,
    labels,
    mask,
    lr,
    *,
    n_classes: int,
    momentum: float,
    weight_decay: float,
    config: KernelConfig,
    optimizer: str = "sgd",
    axis_name: str | None = None,
):
    """One optimizer step -> (params, optimizer state, mean loss, number correct). (Over 80 lines: the kernels of one
    step in the order they run, each depending on the last, so it reads top to bottom as the step does.) x: a dense
    batch (B, Kp), or
    with config.input_format "sparse" the flat sparse batch (indices, values, rows), which the sparse kernels
    (pallas_kernels/sparse_hidden.py) read directly.

    One device: dW1 is fused into W1's update (input_grad_update for sgd, input_grad_adam_update for adam;
    the sparse adam path: sparse_input_grad then adam_update) and b1, W2, b2 take one head_update /
    head_adam_update launch. axis_name (data parallelism inside shard_map): x is this device's
    slice of the global batch; the loss is normalised by the global row count and the gradients are summed
    over the axis before the update, so dW1 must be materialised (input_grad) to be reduced."""
    count = jnp.sum(mask)
    if axis_name is not None:
        count = jax.lax.psum(count, axis_name)
    weight = mask / jnp.maximum(count, 1.0)
    numerics = dict(precision=config.precision, interpret=config.interpret)
    sparse = config.input_format == "sparse"
    pieces = config.input_format == "pieces"
    if pieces:
        per_piece = pieces_gather_sum(x[0], x[1], params.w1, block_sizes=config.pieces, interpret=config.interpret)
        h = finish_hidden(per_piece, params.b1, x[2], labels.shape[0])
    elif sparse:
        h = sparse_hidden_forward(
            *x, params.w1, params.b1, batch_size=labels.shape[0], block_sizes=config.sparse_forward, **numerics
        )
    if sparse or pieces:
        nll, predicted, dz = output_loss(h, params.w2, params.b2, labels, weight, n_classes, config)
    else:
        h, nll, predicted, dz = forward(*params, x, labels, weight, n_classes, config)
    # One device: dW1 goes straight into W1's update (input_grad_update / input_grad_adam_update, so dW1 never
    # reaches memory) and b1, W2, b2 are updated by one head launch from hidden_backward's per-block partial
    # gradients (no reductions, no three small update launches). Data parallel (axis_name): the gradients are
    # materialised and summed over the devices before the update.
    fused = axis_name is None
    if fused:
        dpre, dw2, db2, db1 = hidden_backward_partials(dz, params.w2, h, block_sizes=config.backward, **numerics)
        if dw2.shape[0] > HEAD_MAX_PARTS:  # many row blocks: XLA's parallel reductions beat one program's loop
            dw2, db2, db1 = (a.sum(axis=0, keepdims=True) for a in (dw2, db2, db1))
    else:
        dpre, dw2, db2, db1 = backward_to_hidden(dz, params.w2, h, config)
    dw1 = None
    fuse_adam = not sparse and not pieces and config.adam_fused_dw1
    if pieces:  # XLA's scatter-add; there is no fused dW1 + update from this layout
        dw1 = pieces_input_grad(*x, dpre, params.w1.shape[0])
    elif not fused or (optimizer == "adam" and not fuse_adam):
        if sparse:
            dw1 = sparse_input_grad(*x, dpre, n_features=params.w1.shape[0], block_sizes=config.sparse_grad, **numerics)
        else:
            dw1 = weight_grad(x, dpre, config)
    if not fused:
        dw1, db1, dw2, db2 = jax.lax.psum((dw1, db1, dw2, db2), axis_name)
    if optimizer == "adam":
        step = opt_state.step + 1
        c1, c2 = adam_corrections(step)
        scalars = jnp.stack([jnp.asarray(lr, jnp.float32), c1, c2, jnp.float32(0)])
        adam = dict(weight_decay=weight_decay, interpret=config.interpret)
        m, v = opt_state.m, opt_state.v
        if dw1 is None:
            w1, m1, v1 = input_grad_adam_update(
                x, dpre, params.w1, m.w1, v.w1, scalars, weight_decay=weight_decay, block_sizes=config.grad, **numerics
            )
        else:
            w1, m1, v1 = adam_update(params.w1, m.w1, v.w1, dw1, scalars, block_sizes=config.adam_update, **adam)
        if fused:
            b1, mb1, vb1, w2, m2, v2, b2, mb2, vb2 = head_adam_update(
                params.b1, m.b1, v.b1, params.w2, m.w2, v.w2, params.b2, m.b2, v.b2, db1, dw2, db2, scalars, **adam
            )
        else:
            (b1, mb1, vb1), (w2, m2, v2), (b2, mb2, vb2) = (
                adam_update(w, mw, vw, g, scalars, block_sizes=config.adam_update, **adam)
                for w, mw, vw, g in zip(params[1:], m[1:], v[1:], (db1, dw2, db2))
            )
        params = Params(w1, b1, w2, b2)
        opt_state = AdamState(Params(m1, mb1, m2, mb2), Params(v1, vb1, v2, vb2), step)
    else:
        update = dict(
            momentum=momentum, weight_decay=weight_decay, interpret=config.interpret, block_sizes=config.sgd_update
        )
        if dw1 is None and sparse:
            w1, v1 = sparse_input_grad_update(
                *x,
                dpre,
                params.w1,
                opt_state.w1,
                lr,
                momentum=momentum,
                weight_decay=weight_decay,
                block_sizes=config.sparse_grad,
                **numerics,
            )
        elif dw1 is None:
            w1, v1 = input_grad_update(
                x,
                dpre,
                params.w1,
                opt_state.w1,
                lr,
                momentum=momentum,
                weight_decay=weight_decay,
                block_sizes=config.grad,
                **numerics,
            )
        else:
            w1, v1 = sgd_update(params.w1, opt_state.w1, dw1, lr, **update)
        if fused:
            b1, vb1, w2, v2, b2, vb2 = head_update(
                params.b1,
                opt_state.b1,
                params.w2,
                opt_state.w2,
                params.b2,
                opt_state.b2,
                db1,
                dw2,
                db2,
                lr,
                momentum=momentum,
                weight_decay=weight_decay,
                interpret=config.interpret,
            )
        else:
            b1, vb1 = sgd_update(params.b1, opt_state.b1, db1, lr, **update)
            w2, v2 = sgd_update(params.w2, opt_state.w2, dw2, lr, **update)
            b2, vb2 = sgd_update(params.b2, opt_state.b2, db2, lr, **update)
        params, opt_state = Params(w1, b1, w2, b2), Params(v1, vb1, v2, vb2)
    loss = jnp.sum(nll * weight)
    # label sets: the loss kernel's second output says whether each row is all right
    correct = jnp.sum((predicted if labels.ndim == 2 else predicted == labels) * mask)
    if axis_name is not None:
        loss, correct = jax.lax.psum((loss, correct), axis_name)
    return params, opt_state, loss, correct


# Fourteen arguments: the epoch's arrays (as xla_epoch) and the kernels' static configuration, one traced program.
def pallas_epoch(
    params,
    opt_state,
    indices,
    values,
    rows,
    labels,
    mask,
    lrs,
    *,
    n_classes: int,
    momentum: float,
    weight_decay: float,
    config: KernelConfig,
    optimizer: str = "sgd",
    axis_name: str | None = None,
):
    """Scan pallas_train_step over the epoch's (steps, ...) stacked sparse minibatches."""
    batch_size = labels.shape[1]
    n_columns = params.w1.shape[0]
    x_dtype = jnp.dtype(config.x_dtype)

    sparse = config.input_format in ("sparse", "pieces")  # the kernels read the batch's nonzeros: no dense X
    # Dense input: one zero (B, Kp) buffer for the whole epoch, carried through the scan (so XLA updates it in
    # place); each step writes its nonzeros into it and erases them after the step (docs/decisions.md, "Step fusions":
    # the news4 step at B = 4,096 771 -> 632 us on an H100 against a fresh zero buffer a step).
    reuse = not sparse

    def step(carry, batch):
        params, opt_state, buffer = carry
        idx, val, row, y, m, lr = batch
        if sparse:
            x = (idx, val, row)
        else:
            x = write_batch(buffer if reuse else jnp.zeros((batch_size, n_columns), x_dtype), idx, val, row)
        params, opt_state, loss, correct = pallas_train_step(
            params,
            opt_state,
            x,
            y,
            m,
            lr,
            n_classes=n_classes,
            momentum=momentum,
            weight_decay=weight_decay,
            config=config,
            optimizer=optimizer,
            axis_name=axis_name,
        )
        if reuse:
            # The barrier orders the erase after every kernel that reads x (they all feed the new parameters);
            # without it XLA may schedule the erase first and so copies the whole (B, Kp) buffer to keep x.
            x, params = jax.lax.optimization_barrier((x, params))
            buffer = erase_batch(x, idx, val, row)
        return (params, opt_state, buffer), (loss, correct)

    buffer = jnp.zeros((batch_size, n_columns) if reuse else (0,), x_dtype)
    (params, opt_state, _), (losses, corrects) = jax.lax.scan(
        step, (params, opt_state, buffer), (indices, values, rows, labels, mask, lrs)
    )
    return params, opt_state, losses, corrects
