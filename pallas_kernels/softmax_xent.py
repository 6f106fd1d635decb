"""Output layer + softmax + cross-entropy + its gradient, in one kernel.

Per block of rows: Z = H @ W2 + b2 (M, C), P = softmax(Z) computed stably (row max subtracted), per-row
negative log-likelihood, the predicted class, and dZ = (P - onehot(labels)) * weight[:, None], which is the
gradient of sum(weight * nll). With weight = mask / number of real rows that is the mean loss's gradient.

C is padded to a power of two of at least 16 (Triton's smallest dot); padded classes get -inf scores, so
their probability and gradient are exactly 0. Padded rows (weight 0) get dZ = 0.
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
    next_power_of_two,
    pad_axis,
    require,
    require_blocks,
    round_up,
    triton_params,
)

MIN_CLASSES = 16


def padded_classes(n_classes: int) -> int:
    return max(MIN_CLASSES, next_power_of_two(n_classes))


def _kernel(h_ref, w_ref, b_ref, labels_ref, weight_ref, nll_ref, pred_ref, dz_ref, *, n_classes: int, precision: str):
    # h_ref: (block_m, H)  w_ref: (H, Cp)  b_ref: (Cp,)  labels_ref, weight_ref: (block_m,)
    # outputs: nll_ref (block_m,), pred_ref (block_m,) int32, dz_ref (block_m, Cp)
    block_m, classes = dz_ref.shape
    scores = dot(h_ref[...], w_ref[...], precision) + b_ref[...].astype(accumulator_dtype(dz_ref.dtype))[None, :]
    column = lax.broadcasted_iota(jnp.int32, (block_m, classes), 1)
    scores = jnp.where(column < n_classes, scores, -jnp.inf)
    row_max = jnp.max(scores, axis=1)
    shifted = scores - row_max[:, None]
    exp = jnp.exp(shifted)
    total = jnp.sum(exp, axis=1)
    onehot = column == labels_ref[...][:, None]
    nll_ref[...] = (jnp.log(total) - jnp.sum(jnp.where(onehot, shifted, 0.0), axis=1)).astype(nll_ref.dtype)
    # argmax as the first column holding the row max (ties -> lowest class, like jnp.argmax).
    pred_ref[...] = jnp.min(jnp.where(scores == row_max[:, None], column, classes), axis=1)
    probs = exp / total[:, None]
    dz_ref[...] = ((probs - onehot.astype(probs.dtype)) * weight_ref[...][:, None]).astype(dz_ref.dtype)


@dataclass(frozen=True)
class SoftmaxXentBlocks:
    """softmax_xent's launch: rows per program and Triton warps."""

    block_m: int = 64
    num_warps: int = 4


# Nine arguments: the hidden units, W2, b2, labels and row weights, then class count, tiling, precision, interpret.
@functools.partial(jax.jit, static_argnames=("n_classes", "block_sizes", "precision", "interpret"))
def softmax_xent(
    h,
    w2,
    b2,
    labels,
    weight,
    *,
    n_classes: int,
    block_sizes: SoftmaxXentBlocks = SoftmaxXentBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """-> (nll (M,), predicted class (M,) int32, dZ (M, Cp)). w2 (H, Cp) and b2 (Cp,) may already be padded;
    columns at or past n_classes are ignored."""
    block_m, num_warps = block_sizes.block_m, block_sizes.num_warps
    require(
        "softmax_xent",
        h.ndim == 2
        and w2.ndim == 2
        and w2.shape[0] == h.shape[1]
        and b2.shape == (w2.shape[1],)
        and labels.shape == weight.shape == (h.shape[0],)
        and 0 < n_classes <= w2.shape[1],
        f"h (M, H), w2 (H, C), b2 (C,), labels (M,), weight (M,) with n_classes ({n_classes}) <= C",
        h=h,
        w2=w2,
        b2=b2,
        labels=labels,
        weight=weight,
    )
    require_blocks("softmax_xent", block_m=block_m)
    m, hidden = h.shape
    classes = padded_classes(max(n_classes, w2.shape[1]))
    padded_m = round_up(m, block_m)
    h = pad_axis(h, 0, padded_m)
    labels = pad_axis(labels.astype(jnp.int32), 0, padded_m)
    weight = pad_axis(weight.astype(h.dtype), 0, padded_m)
    w2, b2 = pad_axis(w2, 1, classes), pad_axis(b2, 0, classes)
    dtype = h.dtype
    row = pl.BlockSpec((block_m,), lambda i: (i,))
    nll, pred, dz = pl.pallas_call(
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
            row,
            row,
        ],
        out_specs=(row, row, pl.BlockSpec((block_m, classes), lambda i: (i, 0))),
        compiler_params=triton_params(num_warps, 1),
        interpret=interpret,
        name="softmax_xent",
    )(h, w2, b2, labels, weight)
    return nll[:m], pred[:m], dz[:m]


def softmax_xent_reference(h, w2, b2, labels, weight, *, n_classes: int, precision: str = "default"):
    prec = PRECISIONS[precision]
    scores = jnp.dot(h, w2[:, :n_classes], precision=prec) + b2[:n_classes]
    log_probs = jax.nn.log_softmax(scores)
    nll = -jnp.take_along_axis(log_probs, labels[:, None], axis=1)[:, 0]
    dz = (jnp.exp(log_probs) - jax.nn.one_hot(labels, n_classes, dtype=h.dtype)) * weight[:, None]
    return nll, jnp.argmax(scores, axis=1).astype(jnp.int32), dz


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6, 7))
def softmax_xent_loss(h, w2, b2, labels, weight, n_classes: int, precision: str = "default", interpret: bool = False):
    """Differentiable (sum of weight * nll, predicted classes) through the kernel: h (M, H), w2 (H, C), b2 (C,),
    labels (M,) int, weight (M,). The backward reuses the dZ the forward kernel already wrote (scaled by the
    incoming cotangent) and adds dH = dZ W2^T, dW2 = H^T dZ, db2 = sum dZ; used by the CNN's output layer."""
    return _softmax_xent_loss_fwd(h, w2, b2, labels, weight, n_classes, precision, interpret)[0]


def _softmax_xent_loss_fwd(h, w2, b2, labels, weight, n_classes, precision, interpret):
    nll, predicted, dz = softmax_xent(
        h, w2, b2, labels, weight, n_classes=n_classes, precision=precision, interpret=interpret
    )
    return (jnp.sum(nll * weight), predicted), (h, w2, nll, dz[:, : w2.shape[1]])


def _softmax_xent_loss_bwd(n_classes, precision, interpret, residuals, cotangents):
    return output_layer_grads(residuals, cotangents[0], precision)


def output_layer_grads(residuals, g, precision: str):
    """The backward of an output-layer loss kernel (this one's, sigmoid_bce's): from its residuals (h, w2, the
    per-row loss, the dZ it wrote) and the incoming cotangent g -> (dh, dw2, db2, no labels' gradient, dweight)."""
    h, w2, loss, dz = residuals
    dz = dz * g
    prec = PRECISIONS[precision]
    return jnp.dot(dz, w2.T, precision=prec), jnp.dot(h.T, dz, precision=prec), jnp.sum(dz, axis=0), None, loss * g


softmax_xent_loss.defvjp(_softmax_xent_loss_fwd, _softmax_xent_loss_bwd)
