"""Max pooling with window = stride = `size` (LeNet's 2x2), NHWC, forward and backward as kernels.

Forward, maxpool_forward: grid over blocks of block_m output pixels x channel blocks. Each program gathers the
size*size input rows under its pixels' windows, keeps the running max and which tap held it (the first on ties),
and stores both: y (M, C) and the tap index (M, C) int32 that the backward needs.
Backward, maxpool_backward: the same grid; each program writes dY into the input row of the winning tap and 0
into the others. Windows do not overlap (stride = size), so every input pixel is written by at most one program,
no atomics; the input rows no window covers (the last row/column of an odd size) stay at the zeros the output
buffer starts from (input_output_aliases on a zero array).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.common import next_power_of_two, pad_axis, require, require_blocks, round_up, triton_params


def _window_rows(block_m: int, n_rows: int, out_h: int, out_w: int, in_h: int, in_w: int, size: int):
    rows = pl.program_id(0) * block_m + lax.broadcasted_iota(jnp.int32, (block_m,), 0)
    valid = rows < n_rows
    rows = jnp.where(valid, rows, 0)
    n, rest = rows // (out_h * out_w), rows % (out_h * out_w)
    oh, ow = rest // out_w, rest % out_w
    return valid, (n * in_h + oh * size) * in_w + ow * size  # flat input row of tap (0, 0)


# Ten arguments: the input, output and argmax refs, then the window and image geometry and the row tiling.
def _forward_kernel(x_ref, y_ref, arg_ref, *, size, out_h, out_w, in_h, in_w, n_rows, block_m):
    _, base = _window_rows(block_m, n_rows, out_h, out_w, in_h, in_w, size)
    best = x_ref[base, :]
    best_tap = jnp.zeros(best.shape, jnp.int32)
    for tap in range(1, size * size):
        value = x_ref[base + (tap // size) * in_w + tap % size, :]
        better = value > best
        best = jnp.where(better, value, best)
        best_tap = jnp.where(better, tap, best_tap)
    y_ref[...] = best
    arg_ref[...] = best_tap


# Twelve arguments: the output gradient, argmax, a zero block and the input gradient refs, then the geometry and
# tiling.
def _backward_kernel(dy_ref, arg_ref, zeros_ref, dx_ref, *, size, out_h, out_w, in_h, in_w, n_rows, block_m, spare):
    del zeros_ref  # aliased to dx_ref: the rows no window covers keep its zeros
    valid, base = _window_rows(block_m, n_rows, out_h, out_w, in_h, in_w, size)
    dy, arg = dy_ref[...], arg_ref[...]
    n_cols = dy.shape[1]
    for tap in range(size * size):
        # Rows past the last output pixel (the last block's padding) write into a spare row past the image
        # rows, which the wrapper drops.
        target = jnp.where(valid, base + (tap // size) * in_w + tap % size, spare)
        dx_ref[target, :] = jnp.where(arg == tap, dy, jnp.zeros((), dy.dtype)).reshape(-1, n_cols)


def _flat(x: jax.Array, channels: int) -> jax.Array:
    n, h, w, c = x.shape
    return pad_axis(x.reshape(n * h * w, c), 1, channels)


@dataclass(frozen=True)
class MaxpoolBlocks:
    """The max-pooling kernels' launch: rows per program and Triton warps."""

    block_m: int = 64
    num_warps: int = 4


@functools.partial(jax.jit, static_argnames=("size", "block_sizes", "interpret"))
def maxpool_forward(x, *, size: int = 2, block_sizes: MaxpoolBlocks = MaxpoolBlocks(), interpret: bool = False):
    """x (N, H, W, C) -> (y (N, H//size, W//size, C), winning tap (same shape, int32))."""
    block_m, num_warps = block_sizes.block_m, block_sizes.num_warps
    require("maxpool_forward", x.ndim == 4 and size >= 1, f"x (N, H, W, C) and size >= 1 (got size {size})", x=x)
    require_blocks("maxpool_forward", block_m=block_m)
    n, h, w, c = x.shape
    c_p = next_power_of_two(c)
    out_h, out_w = h // size, w // size
    m = n * out_h * out_w
    flat = pad_axis(_flat(x, c_p), 0, next_power_of_two(n * h * w))
    common = dict(size=size, out_h=out_h, out_w=out_w, in_h=h, in_w=w, n_rows=m, block_m=block_m)
    out_rows = round_up(m, block_m)
    y, arg = pl.pallas_call(
        functools.partial(_forward_kernel, **common),
        out_shape=(jax.ShapeDtypeStruct((out_rows, c_p), x.dtype), jax.ShapeDtypeStruct((out_rows, c_p), jnp.int32)),
        grid=(out_rows // block_m,),
        in_specs=[pl.BlockSpec(flat.shape, lambda i: (0, 0))],
        out_specs=(pl.BlockSpec((block_m, c_p), lambda i: (i, 0)), pl.BlockSpec((block_m, c_p), lambda i: (i, 0))),
        compiler_params=triton_params(num_warps, 1),
        interpret=interpret,
        name="maxpool_forward",
    )(flat)
    shape = (n, out_h, out_w, c)
    return y[:m, :c].reshape(shape), arg[:m, :c].reshape(shape)


@functools.partial(jax.jit, static_argnames=("size", "height", "width", "block_sizes", "interpret"))
def maxpool_backward(
    dy,
    arg,
    *,
    size: int,
    height: int,
    width: int,
    block_sizes: MaxpoolBlocks = MaxpoolBlocks(),
    interpret: bool = False,
) -> jax.Array:
    """dY and the winning taps (N, OH, OW, C) -> dX (N, height, width, C)."""
    block_m, num_warps = block_sizes.block_m, block_sizes.num_warps
    require(
        "maxpool_backward",
        dy.ndim == 4 and arg.shape == dy.shape and dy.shape[1] == height // size and dy.shape[2] == width // size,
        f"dy and arg (N, {height} // {size}, {width} // {size}, C)",
        dy=dy,
        arg=arg,
    )
    require_blocks("maxpool_backward", block_m=block_m)
    n, out_h, out_w, c = dy.shape
    c_p = next_power_of_two(c)
    m = n * out_h * out_w
    out_rows = round_up(m, block_m)
    dy_flat = pad_axis(_flat(dy, c_p), 0, out_rows)
    arg_flat = pad_axis(_flat(arg, c_p), 0, out_rows)
    spare = n * height * width  # the first row past the image rows
    rows = next_power_of_two(spare + 1)
    zeros = jnp.zeros((rows, c_p), dy.dtype)
    common = dict(size=size, out_h=out_h, out_w=out_w, in_h=height, in_w=width, n_rows=m, block_m=block_m, spare=spare)
    dx = pl.pallas_call(
        functools.partial(_backward_kernel, **common),
        out_shape=jax.ShapeDtypeStruct((rows, c_p), dy.dtype),
        grid=(out_rows // block_m,),
        in_specs=[
            pl.BlockSpec((block_m, c_p), lambda i: (i, 0)),
            pl.BlockSpec((block_m, c_p), lambda i: (i, 0)),
            pl.BlockSpec((rows, c_p), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((rows, c_p), lambda i: (0, 0)),
        input_output_aliases={2: 0},
        compiler_params=triton_params(num_warps, 1),
        interpret=interpret,
        name="maxpool_backward",
    )(dy_flat, arg_flat, zeros)
    return dx[: n * height * width, :c].reshape(n, height, width, c)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def maxpool2d(x, size: int = 2, interpret: bool = False):
    return maxpool_forward(x, size=size, interpret=interpret)[0]


def _maxpool_fwd(x, size, interpret):
    y, arg = maxpool_forward(x, size=size, interpret=interpret)
    return y, (arg, x.shape[1], x.shape[2])


def _maxpool_bwd(size, interpret, residuals, dy):
    arg, height, width = residuals
    return (maxpool_backward(dy, arg, size=size, height=height, width=width, interpret=interpret),)


maxpool2d.defvjp(_maxpool_fwd, _maxpool_bwd)


def maxpool_reference(x, size: int = 2):
    """Plain JAX, differentiable by jax.grad: each size x size window's taps (row by row) and the first largest
    of them, the tap the kernel keeps, so the gradient goes where the kernel's does, ties included. (XLA's
    reduce_window computes the same values, but its gradient, a select-and-scatter, made a CPU training step of
    the default CNN 67 ms where this takes 50.) Rows and columns past the last whole window are dropped."""
    n, height, width, channels = x.shape
    out_h, out_w = height // size, width // size
    windows = x[:, : out_h * size, : out_w * size].reshape(n, out_h, size, out_w, size, channels)
    windows = windows.transpose(0, 1, 3, 5, 2, 4).reshape(n, out_h, out_w, channels, size * size)
    first = jnp.argmax(windows, axis=-1)  # (N, OH, OW, C): the first largest tap
    return jnp.take_along_axis(windows, first[..., None], axis=-1)[..., 0]
