"""Fused hidden-layer backward (the original design's "LayerErrorCalculate") plus the output layer's grads.

Per block of rows:
  dPre = (dZ @ W2^T) * H * (1 - H)      (M, N)   gradient at the hidden pre-activation
  dW2 partial = H^T @ dZ                (N, Cp)
  db2 partial = sum over rows of dZ     (Cp,)
  db1 partial = sum over rows of dPre   (N,)
Each program writes the partial sums of its own row block; the wrapper adds the (M / block_m) partials, so
no two programs write the same memory (no atomics, deterministic).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from pallas_kernels.common import PRECISIONS, dot, pad_axis, require, require_blocks, round_up, triton_params


def _kernel(dz_ref, w2_ref, h_ref, dpre_ref, dw2_ref, db2_ref, db1_ref, *, precision: str):
    # dz_ref: (block_m, Cp)  w2_ref: (N, Cp)  h_ref: (block_m, N)
    dz, h = dz_ref[...], h_ref[...]
    dh = dot(dz, w2_ref[...], precision, contract=((1,), (1,)))  # (block_m, N) = dZ @ W2^T
    dpre = dh * h * (1.0 - h)
    dpre_ref[...] = dpre.astype(dpre_ref.dtype)
    dw2_ref[...] = dot(h, dz, precision, contract=((0,), (0,))).astype(dw2_ref.dtype)  # H^T @ dZ
    db2_ref[...] = jnp.sum(dz, axis=0).astype(db2_ref.dtype)
    db1_ref[...] = jnp.sum(dpre, axis=0).astype(db1_ref.dtype)


@dataclass(frozen=True)
class HiddenBackwardBlocks:
    """hidden_backward's launch: rows per program and Triton warps."""

    block_m: int = 64
    num_warps: int = 4


@functools.partial(jax.jit, static_argnames=("block_sizes", "precision", "interpret"))
def hidden_backward_partials(
    dz,
    w2,
    h,
    *,
    block_sizes: HiddenBackwardBlocks = HiddenBackwardBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """-> (dPre (M, N), dW2 partials (P, N, Cp), db2 partials (P, Cp), db1 partials (P, N)), one partial per
    block of block_m rows (P = ceil(M / block_m)): their sums are the gradients. pallas_kernels/head_update.py
    adds them inside the update of b1, W2, b2, which saves three reductions."""
    block_m, num_warps = block_sizes.block_m, block_sizes.num_warps
    require(
        "hidden_backward_partials",
        dz.ndim == 2 and h.ndim == 2 and dz.shape[0] == h.shape[0] and w2.shape == (h.shape[1], dz.shape[1]),
        "dz (M, C), w2 (N, C), h (M, N)",
        dz=dz,
        w2=w2,
        h=h,
    )
    require_blocks("hidden_backward_partials", block_m=block_m)
    m, n = h.shape
    classes = dz.shape[1]
    padded_m = round_up(m, block_m)
    dz, h = pad_axis(dz, 0, padded_m), pad_axis(h, 0, padded_m)  # zero rows add nothing to the sums
    blocks = padded_m // block_m
    dtype = h.dtype
    dpre, dw2, db2, db1 = pl.pallas_call(
        functools.partial(_kernel, precision=precision),
        out_shape=(
            jax.ShapeDtypeStruct((padded_m, n), dtype),
            jax.ShapeDtypeStruct((blocks, n, classes), dtype),
            jax.ShapeDtypeStruct((blocks, classes), dtype),
            jax.ShapeDtypeStruct((blocks, n), dtype),
        ),
        grid=(blocks,),
        in_specs=[
            pl.BlockSpec((block_m, classes), lambda i: (i, 0)),
            pl.BlockSpec((n, classes), lambda i: (0, 0)),
            pl.BlockSpec((block_m, n), lambda i: (i, 0)),
        ],
        out_specs=(
            pl.BlockSpec((block_m, n), lambda i: (i, 0)),
            pl.BlockSpec((None, n, classes), lambda i: (i, 0, 0)),
            pl.BlockSpec((None, classes), lambda i: (i, 0)),
            pl.BlockSpec((None, n), lambda i: (i, 0)),
        ),
        compiler_params=triton_params(num_warps, 1),
        interpret=interpret,
        name="hidden_backward",
    )(dz, pad_axis(w2, 1, classes), h)
    return dpre[:m], dw2, db2, db1


def hidden_backward(
    dz,
    w2,
    h,
    *,
    block_sizes: HiddenBackwardBlocks = HiddenBackwardBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """-> (dPre (M, N), dW2 (N, Cp), db2 (Cp,), db1 (N,)). dz and w2 share the padded class count Cp."""
    dpre, dw2, db2, db1 = hidden_backward_partials(
        dz, w2, h, block_sizes=block_sizes, precision=precision, interpret=interpret
    )
    return dpre, dw2.sum(axis=0), db2.sum(axis=0), db1.sum(axis=0)


def hidden_backward_reference(dz, w2, h, precision: str = "default"):
    prec = PRECISIONS[precision]
    w2 = pad_axis(w2, 1, dz.shape[1])
    dpre = jnp.dot(dz, w2.T, precision=prec) * h * (1.0 - h)
    return dpre, jnp.dot(h.T, dz, precision=prec), dz.sum(axis=0), dpre.sum(axis=0)
