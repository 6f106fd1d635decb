"""Output layer + sigmoid + binary cross-entropy + its gradient, in one kernel: the multi-label network's loss (one
sigmoid output a label, each its own yes/no), as softmax_xent is the one-label network's.

Per block of rows: Z = H @ W2 + b2 (M, C); per row the summed binary cross-entropy of its real outputs,
sum_c softplus(-|z|) + max(z, 0) - z y (stable for any score); whether every output is right at probability 0.5;
and dZ = (sigmoid(Z) - Y) * weight[:, None], the gradient of sum(weight * loss). C is padded as softmax_xent pads
it (padded_classes); padded outputs add no loss and get dZ = 0, as do padded rows (weight 0).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.common import (
    PRECISIONS,
    accumulator_dtype,
    dot,
    pad_axis,
    require,
    require_blocks,
    round_up,
    triton_params,
)
from pallas_kernels.softmax_xent import output_layer_grads, padded_classes


# Ten arguments: hidden units, W2, b2, targets and row weights in; loss, hits and dz out; the class count and
# precision.
def _kernel(
    h_ref, w_ref, b_ref, targets_ref, weight_ref, loss_ref, right_ref, dz_ref, *, n_classes: int, precision: str
):
    # h_ref: (block_m, H)  w_ref: (H, Cp)  b_ref: (Cp,)  targets_ref: (block_m, Cp)  weight_ref: (block_m,)
    # outputs: loss_ref (block_m,), right_ref (block_m,) int32, dz_ref (block_m, Cp)
    block_m, classes = dz_ref.shape
    scores = dot(h_ref[...], w_ref[...], precision) + b_ref[...].astype(accumulator_dtype(dz_ref.dtype))[None, :]
    real = lax.broadcasted_iota(jnp.int32, (block_m, classes), 1) < n_classes
    targets = targets_ref[...].astype(scores.dtype)
    each = jnp.log1p(jnp.exp(-jnp.abs(scores))) + jnp.maximum(scores, 0.0) - scores * targets
    loss_ref[...] = jnp.sum(jnp.where(real, each, 0.0), axis=1).astype(loss_ref.dtype)
    wrong = jnp.where(real, (scores > 0) != (targets > 0.5), False)
    right_ref[...] = 1 - jnp.max(wrong.astype(jnp.int32), axis=1)
    probabilities = 1.0 / (1.0 + jnp.exp(-scores))
    dz = (probabilities - targets) * weight_ref[...][:, None]
    dz_ref[...] = jnp.where(real, dz, 0.0).astype(dz_ref.dtype)


@dataclass(frozen=True)
class SigmoidBceBlocks:
    """sigmoid_bce's launch: rows per program and Triton warps."""

    block_m: int = 64
    num_warps: int = 4


# Nine arguments: the hidden units, W2, b2, targets and row weights, then class count, tiling, precision, interpret.
@functools.partial(jax.jit, static_argnames=("n_classes", "block_sizes", "precision", "interpret"))
def sigmoid_bce(
    h,
    w2,
    b2,
    targets,
    weight,
    *,
    n_classes: int,
    block_sizes: SigmoidBceBlocks = SigmoidBceBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """-> (loss (M,), every output right (M,) int32, dZ (M, Cp)). targets (M, C) 0/1 (any dtype); w2 (H, Cp),
    b2 (Cp,) and targets may already be padded; columns at or past n_classes are ignored."""
    block_m, num_warps = block_sizes.block_m, block_sizes.num_warps
    require(
        "sigmoid_bce",
        h.ndim == 2
        and w2.ndim == 2
        and w2.shape[0] == h.shape[1]
        and b2.shape == (w2.shape[1],)
        and targets.ndim == 2
        and targets.shape[0] == h.shape[0] == weight.shape[0]
        and weight.ndim == 1
        and 0 < n_classes <= min(w2.shape[1], targets.shape[1]),
        f"h (M, H), w2 (H, C), b2 (C,), targets (M, C), weight (M,) with n_classes ({n_classes}) <= C",
        h=h,
        w2=w2,
        b2=b2,
        targets=targets,
        weight=weight,
    )
    require_blocks("sigmoid_bce", block_m=block_m)
    m, hidden = h.shape
    classes = padded_classes(max(n_classes, w2.shape[1]))
    padded_m = round_up(m, block_m)
    h = pad_axis(h, 0, padded_m)
    targets = pad_axis(pad_axis(targets.astype(h.dtype), 1, classes), 0, padded_m)
    weight = pad_axis(weight.astype(h.dtype), 0, padded_m)
    w2, b2 = pad_axis(w2, 1, classes), pad_axis(b2, 0, classes)
    dtype = h.dtype
    row = pl.BlockSpec((block_m,), lambda i: (i,))
    wide = pl.BlockSpec((block_m, classes), lambda i: (i, 0))
    loss, right, dz = pl.pallas_call(
        functools.partial(_kernel, n_classes=n_classes, precision=precision),
        out_shape=(
            jax.ShapeDtypeStruct((padded_m,), dtype),
            jax.ShapeDtypeStruct((padded_m,), jnp.int32),
            jax.ShapeDtypeStruct((padded_m, classes), dtype),
        ),
        grid=(padded_m // block_m,),
        in_specs=[
            pl.BlockSpec((block_m, hidden), lambda i: (i, 0)),
            pl.BlockSpec((hidden, classes), lambda i: (0, 0)),
            pl.BlockSpec((classes,), lambda i: (0,)),
            wide,
            row,
        ],
        out_specs=(row, row, wide),
        compiler_params=triton_params(num_warps, 1),
        interpret=interpret,
        name="sigmoid_bce",
    )(h, w2, b2, targets, weight)
    return loss[:m], right[:m], dz[:m]


def sigmoid_bce_reference(h, w2, b2, targets, weight, *, n_classes: int, precision: str = "default"):
    scores = jnp.dot(h, w2[:, :n_classes], precision=PRECISIONS[precision]) + b2[:n_classes]
    targets = targets[:, :n_classes].astype(h.dtype)
    loss = jnp.sum(jax.nn.softplus(-jnp.abs(scores)) + jnp.maximum(scores, 0.0) - scores * targets, axis=1)
    right = jnp.all((scores > 0) == (targets > 0.5), axis=1).astype(jnp.int32)
    dz = (jax.nn.sigmoid(scores) - targets) * weight[:, None]
    return loss, right, dz


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6, 7))
def sigmoid_bce_loss(h, w2, b2, targets, weight, n_classes: int, precision: str = "default", interpret: bool = False):
    """Differentiable (sum of weight * loss, rows all right) through the kernel: h (M, H), w2 (H, C), b2 (C,),
    targets (M, C) 0/1, weight (M,). The backward reuses the forward's dZ (scaled by the incoming cotangent) and
    adds dH = dZ W2^T, dW2 = H^T dZ, db2 = sum dZ."""
    return _sigmoid_bce_loss_fwd(h, w2, b2, targets, weight, n_classes, precision, interpret)[0]


def _sigmoid_bce_loss_fwd(h, w2, b2, targets, weight, n_classes, precision, interpret):
    loss, right, dz = sigmoid_bce(
        h, w2, b2, targets, weight, n_classes=n_classes, precision=precision, interpret=interpret
    )
    return (jnp.sum(loss * weight), right), (h, w2, loss, dz[:, : w2.shape[1]])


def _sigmoid_bce_loss_bwd(n_classes, precision, interpret, residuals, cotangents):
    return output_layer_grads(residuals, cotangents[0], precision)


sigmoid_bce_loss.defvjp(_sigmoid_bce_loss_fwd, _sigmoid_bce_loss_bwd)
