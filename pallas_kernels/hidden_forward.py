"""Hidden layer forward: H = sigmoid(X @ W1 + b1), a tiled matmul with bias and sigmoid fused.

Shapes: X (M, K) with K = 32768 (32754 padded; zero columns change nothing), W1 (K, N) with N = 128,
b1 (N,) -> H (M, N) in W1's dtype. X may be bf16 (TF-IDF weights rounded to 8 mantissa bits) with W1 fp32;
the product then runs in bf16 with fp32 accumulation.

With N = 128 a grid over row blocks alone gives M / block_m programs, too few for ~132 SMs at small M, so K is
split over the grid (split_k programs per row block, each summing K / split_k columns); the partial sums
(split_k, M, N) are then added, biased and squashed by a second small kernel. split_k = 1 does everything in
one kernel. No program ever writes another's output block, so there are no races.
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
    narrowed,
    pad_axis,
    require,
    require_blocks,
    round_up,
    triton_params,
)

# With bf16 X and fp32 W1, each of the r row blocks reads all of W1. Read as fp32: 4r bytes per weight. Cast
# once to bf16 first: 4 (read) + 2 (write) + 2r. Casting pays from r = 4 on; with one or two row blocks
# (small batches, block_m = B) the kernel reads fp32 W1 and casts each tile in registers. Same products.
NARROW_MIN_ROW_BLOCKS = 4
FINISH_PROGRAMS = 128


def _matmul_kernel(x_ref, w_ref, b_ref, out_ref, *, block_k: int, fuse_sigmoid: bool, precision: str):
    # x_ref: (block_m, K / split_k)   w_ref: (K / split_k, N)   out_ref: (block_m, N)
    block_m, n = out_ref.shape
    k_steps = x_ref.shape[1] // block_k

    def body(step, acc):
        cols = pl.ds(step * block_k, block_k)
        return acc + dot(x_ref[:, cols], w_ref[cols, :], precision)

    acc = lax.fori_loop(0, k_steps, body, jnp.zeros((block_m, n), accumulator_dtype(out_ref.dtype)))
    if fuse_sigmoid:
        acc = jax.nn.sigmoid(acc + b_ref[...].astype(acc.dtype)[None, :])
    out_ref[...] = acc.astype(out_ref.dtype)


def _finish_kernel(partial_ref, b_ref, out_ref):
    # partial_ref: (split_k, block_m, N) -> out_ref: (block_m, N)
    split_k = partial_ref.shape[0]

    def body(s, acc):
        return acc + partial_ref[s, :, :].astype(acc.dtype)

    acc = lax.fori_loop(0, split_k, body, jnp.zeros(out_ref.shape, partial_ref.dtype))
    out_ref[...] = jax.nn.sigmoid(acc + b_ref[...].astype(acc.dtype)[None, :]).astype(out_ref.dtype)


def finish_rows(padded_m: int, block_m: int) -> int:
    """Rows per program of the finishing kernel: about FINISH_PROGRAMS programs, 2 to block_m rows each. With
    block_m rows per program a batch of 64 had 2 programs, each summing 64 partial tiles one after another:
    16 us of the ~30 us forward on an H100 (BENCHMARKS.md, epoch profile)."""
    rows = 1 << max(1, (padded_m // FINISH_PROGRAMS).bit_length() - 1)
    return min(block_m, max(2, rows))


@dataclass(frozen=True)
class HiddenForwardBlocks:
    """hidden_forward's launch: rows and K columns per program, programs splitting K, Triton warps and stages."""

    block_m: int = 64
    block_k: int = 64
    split_k: int = 1
    num_warps: int = 4
    num_stages: int = 3


@functools.partial(jax.jit, static_argnames=("block_sizes", "precision", "interpret"))
def hidden_forward(
    x,
    w1,
    b1,
    *,
    block_sizes: HiddenForwardBlocks = HiddenForwardBlocks(),
    precision: str = "default",
    interpret: bool = False,
) -> jax.Array:
    """sigmoid(x @ w1 + b1) -> (M, N) in w1's dtype. Rows are padded to block_m and K to block_k * split_k."""
    block_m, block_k, split_k, num_warps, num_stages = (
        block_sizes.block_m,
        block_sizes.block_k,
        block_sizes.split_k,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    require(
        "hidden_forward",
        x.ndim == 2 and w1.ndim == 2 and x.shape[1] == w1.shape[0] and b1.shape == (w1.shape[1],),
        "x (M, K), w1 (K, N), b1 (N,)",
        x=x,
        w1=w1,
        b1=b1,
    )
    require_blocks("hidden_forward", block_m=block_m, block_k=block_k)
    m, k = x.shape
    n = w1.shape[1]
    padded_m, padded_k = round_up(m, block_m), round_up(k, block_k * split_k)
    x = pad_axis(pad_axis(x, 0, padded_m), 1, padded_k)
    w1 = pad_axis(w1, 0, padded_k)
    k_part = padded_k // split_k
    out_dtype = w1.dtype
    row_blocks = padded_m // block_m
    if row_blocks >= NARROW_MIN_ROW_BLOCKS:
        w1 = narrowed(w1, x)  # bf16 X: W1 read as bf16 by every row block
    grid = (row_blocks, split_k)
    in_specs = [
        pl.BlockSpec((block_m, k_part), lambda i, s: (i, s)),
        pl.BlockSpec((k_part, n), lambda i, s: (s, 0)),
        pl.BlockSpec((n,), lambda i, s: (0,)),
    ]
    params = triton_params(num_warps, num_stages)
    if split_k == 1:
        out = pl.pallas_call(
            functools.partial(_matmul_kernel, block_k=block_k, fuse_sigmoid=True, precision=precision),
            out_shape=jax.ShapeDtypeStruct((padded_m, n), out_dtype),
            grid=grid,
            in_specs=in_specs,
            out_specs=pl.BlockSpec((block_m, n), lambda i, s: (i, 0)),
            compiler_params=params,
            interpret=interpret,
            name="hidden_forward",
        )(x, w1, b1)
        return out[:m]
    acc_dtype = accumulator_dtype(out_dtype)
    partial = pl.pallas_call(
        functools.partial(_matmul_kernel, block_k=block_k, fuse_sigmoid=False, precision=precision),
        out_shape=jax.ShapeDtypeStruct((split_k, padded_m, n), acc_dtype),
        grid=grid,
        in_specs=in_specs,
        out_specs=pl.BlockSpec((None, block_m, n), lambda i, s: (s, i, 0)),
        compiler_params=params,
        interpret=interpret,
        name="hidden_forward_split",
    )(x, w1, b1)
    finish_m = finish_rows(padded_m, block_m)
    out = pl.pallas_call(
        _finish_kernel,
        out_shape=jax.ShapeDtypeStruct((padded_m, n), out_dtype),
        grid=(padded_m // finish_m,),
        in_specs=[pl.BlockSpec((split_k, finish_m, n), lambda i: (0, i, 0)), pl.BlockSpec((n,), lambda i: (0,))],
        out_specs=pl.BlockSpec((finish_m, n), lambda i: (i, 0)),
        compiler_params=triton_params(4, 3),
        interpret=interpret,
        name="hidden_forward_finish",
    )(partial, b1)
    return out[:m]


def hidden_forward_reference(x, w1, b1, precision: str = "default") -> jax.Array:
    prec = PRECISIONS[precision]
    pre = jnp.dot(x.astype(w1.dtype), w1, precision=prec) + b1
    return jax.nn.sigmoid(pre)
