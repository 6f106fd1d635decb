"""2-D convolution as an implicit GEMM (the original design's "kernel fusion for unrolling and matrix
multiplication"), stride 1, any zero padding, square kernels (3, 5, 7, ...), NHWC layout.
(Over 600 lines: one op a module, as jax's pallas/ops keep one: the forward, the weight gradient, their wrappers,
the custom_vjp wiring and the reference share the grid helpers, as the house's kernel modules do.)

Forward, conv2d_forward: out[n, oh, ow, :] = relu(sum_{kh, kw} x[n, oh+kh-p, ow+kw-p, :] @ w[kh, kw] + b).
Grid: (output-pixel blocks of block_m rows) x (Cout blocks of block_n); the im2col matrix (M, K*K*Cin) is never
written. Two ways to build its tiles, by the input's channel count:
- Cin a multiple of 16 (every layer after an image's first), _conv_rows_kernel: x is read as it is, one pixel
  a row (N*H*W, Cin); each loop step loads one tap's block_k channels for the block's pixels (whole aligned rows,
  a masked load that reads zeros where the tap lies in the padding, so no padded copy is written) and feeds one
  tensor-core dot. On an H100 with bf16 operands: 1.08-1.32x cuDNN's time on VGG-16's 3x3 layers (BENCHMARKS.md).
- Fewer channels (1-3 for images, LeNet's 4), _conv_kernel: x padded and flattened to single elements; block_k
  columns of im2col at a time (column j = (tap, channel)) gathered into registers, so a 1-channel 7x7 layer is
  one 64-wide dot per block, not 49 dots of a channel padded to 16.
Accumulation in float32; bias and ReLU are fused into the store.

Backward (conv2d with custom_vjp):
- dZ = dY * (Y > 0) (the ReLU), db = sum of dZ (plain JAX: one pass each);
- dX = the same forward kernel on dZ padded by K-1-p with the kernel flipped and its channels swapped
  (a stride-1 transposed convolution is a convolution), no bias or ReLU;
- dW = conv2d_weight_grad: the transposed im2col GEMM, grid (blocks of dW's (tap, channel) rows, pixel
  shares); program (r, s) walks its share of the output pixels in block_m chunks, gathers those pixels' im2col
  columns like _conv_kernel and accumulates patch^T @ dZ (block_r, Cout_p); the shares are summed in plain
  JAX (no atomics).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from pallas_kernels.common import (
    accumulator_dtype,
    dot,
    next_power_of_two,
    pad_axis,
    require,
    require_blocks,
    round_up,
    triton_params,
)
from pallas_kernels.maxpool import maxpool_backward


MAX_UNROLLED_K_STEPS = 32


def _channels(c: int) -> int:
    return max(16, next_power_of_two(c))


def _repeat(count: int, body, acc, unroll: bool):
    """acc = body(i, acc) for i < count: unrolled in Python (LeNet's few K steps, measured on an H200,
    BENCHMARKS.md) or as a fori_loop (wide layers: keeps the program and its compile small)."""
    if not unroll:
        return lax.fori_loop(0, count, body, acc)
    for i in range(count):
        acc = body(i, acc)
    return acc


def _pixels(block: jax.Array, block_m: int, n_rows: int, out_h: int, out_w: int, pool: bool, tap: int, shape):
    """The output pixels a program computes, broadcast to `shape` (leading dimension block_m): -> (inside, n, oh,
    ow). Without pool, block_m consecutive pixels of the (N, OH, OW) grid (n_rows of them); with pool, block_m
    consecutive 2x2 windows of the (N, OH // 2, OW // 2) grid (n_rows of them) and, of each, its pixel `tap`
    (row by row: 0 (0, 0), 1 (0, 1), 2 (1, 0), 3 (1, 1))."""
    ids = block * block_m + lax.broadcasted_iota(jnp.int32, shape, 0)
    if not pool:
        inside, _, n, oh, ow = _grid_positions(ids, n_rows, out_h, out_w)
        return inside, n, oh, ow
    inside, _, n, row, column = _grid_positions(ids, n_rows, out_h // 2, out_w // 2)
    return inside, n, 2 * row + tap // 2, 2 * column + tap % 2


def _grid_positions(ids: jax.Array, n_rows: int, height: int, width: int):
    """Flat positions in an (N, height, width) grid -> (inside: id < n_rows, the ids with those past n_rows read as
    0, and their (n, row, column))."""
    inside = ids < n_rows
    ids = jnp.where(inside, ids, 0)
    n, rest = ids // (height * width), ids % (height * width)
    return inside, ids, n, rest // width, rest % width


# Eighteen arguments: the image, filter, bias and output refs, then the geometry of a stride-1 padded convolution and
# its fused ReLU/pool, all static.
def _conv_kernel(
    x_ref,
    w_ref,
    b_ref,
    out_ref,
    *tap_ref,
    size: int,
    cin: int,
    out_h: int,
    out_w: int,
    in_h: int,
    in_w: int,
    n_rows: int,
    zero: int,
    block_m: int,
    block_k: int,
    relu: bool,
    precision: str,
    pixel_axis: int,
    pool: bool,
):
    """Few input channels (Cin not a multiple of 16: an image's 1-3, LeNet's 4): im2col columns gathered from
    the padded input flattened to single elements (x_ref, + a zero at index `zero`); w_ref (KKC_p, block_n).
    pool: the program's rows are 2x2 windows; tap_ref receives which of each window's pixels was largest."""
    block_n = out_ref.shape[1]
    block = pl.program_id(pixel_axis)
    column = lax.broadcasted_iota(jnp.int32, (block_m, block_k), 1)
    # per pool tap (one without pool): the element offset of each output pixel's kernel tap (0, 0). Rows past the
    # last pixel read pixel 0's (_pixels clamps them) into output rows the wrapper drops: no mask to compute.
    starts = [
        ((n * in_h + oh) * in_w + ow) * cin
        for n, oh, ow in (
            _pixels(block, block_m, n_rows, out_h, out_w, pool, tap, (block_m, block_k))[1:]
            for tap in range(4 if pool else 1)
        )
    ]

    def k_block(k0, accs):
        # Column j of the unrolled patch matrix is (tap, input channel) = (j // cin, j % cin): one gather
        # builds a (block_m, block_k) slice of the im2col matrix in registers; one dot consumes it. The pool's
        # 4 pixels of each window share the weight tile.
        j = k0 + column
        kernel_tap, channel = j // cin, j % cin
        offset = ((kernel_tap // size) * in_w + kernel_tap % size) * cin + channel
        weights = w_ref[pl.ds(k0, block_k), :]
        return tuple(
            acc + dot(x_ref[jnp.where(j < size * size * cin, row_start + offset, zero)], weights, precision)
            for acc, row_start in zip(accs, starts)
        )

    steps = w_ref.shape[0] // block_k
    zeros = jnp.zeros((block_m, block_n), accumulator_dtype(out_ref.dtype))
    accs = _repeat(
        steps,
        lambda step, accs: k_block(step * block_k, accs),
        (zeros,) * len(starts),
        unroll=steps <= MAX_UNROLLED_K_STEPS,
    )
    _finish(out_ref, tap_ref, list(accs), b_ref, relu)


# Seventeen arguments: _conv_kernel's refs and static geometry, reading the unpadded rows (pad) in place.
def _conv_rows_kernel(
    x_ref,
    w_ref,
    b_ref,
    out_ref,
    *tap_ref,
    size: int,
    pad: int,
    in_h: int,
    in_w: int,
    out_h: int,
    out_w: int,
    n_rows: int,
    block_m: int,
    block_k: int,
    relu: bool,
    precision: str,
    pixel_axis: int,
    pool: bool,
):
    """Many input channels (Cin a multiple of 16): the implicit GEMM over (taps x channel blocks) reading the
    unpadded input, one pixel a row: x_ref (N*H*W, Cin). Each step loads, for block_m output pixels, the
    block_k channels of one tap: whole rows of x, contiguous and aligned, so the loads vectorise and Triton
    pipelines them (num_stages) into the tensor-core dots; a tap that falls in the zero padding is a masked-off
    row, so no padded copy of x is ever written. w_ref (K*K*Cin, block_n): row (tap * Cin + channel).
    pool: the program's rows are 2x2 windows, one accumulator for each of their 4 pixels."""
    block_n = out_ref.shape[1]
    block = pl.program_id(pixel_axis)
    chunks = x_ref.shape[1] // block_k
    channel = lax.broadcasted_iota(jnp.int32, (block_k,), 0)
    corners = []  # per pool tap (one without pool): the input pixel under kernel tap (0, 0), may lie in the padding
    for tap in range(4 if pool else 1):
        inside, n, oh, ow = _pixels(block, block_m, n_rows, out_h, out_w, pool, tap, (block_m,))
        top, left = oh - pad, ow - pad
        corners.append((inside, top, left, (n * in_h + top) * in_w + left))  # its row of x_ref (holds outside too)

    def step(s, accs):
        # s walks (kernel tap, channel block) in w_ref's row order; scalar integer division (no `%`: Triton's
        # lowering of a scalar remainder inside a loop failed on the GPU). The pool's 4 pixels of each window
        # share the weight tile.
        kernel_tap = s // chunks
        channel0 = (s - kernel_tap * chunks) * block_k
        kh = kernel_tap // size
        kw = kernel_tap - kh * size
        weights = w_ref[pl.ds(pl.multiple_of(s * block_k, block_k), block_k), :]
        new = []
        for acc, (inside, top, left, corner) in zip(accs, corners):
            h, w = top + kh, left + kw
            valid = inside & (h >= 0) & (h < in_h) & (w >= 0) & (w < in_w)
            source = jnp.where(valid, corner + kh * in_w + kw, 0)
            # A masked load (zero where the tap lies in the padding) rather than a select after it: the tile goes
            # from memory to the dot's operand buffer untouched, which Triton's pipeliner needs to overlap it.
            patch = pltriton.load(
                x_ref.at[source[:, None], pl.multiple_of(channel0, block_k) + channel[None, :]],
                mask=jnp.broadcast_to(valid[:, None], (block_m, block_k)),
                other=0,
            )
            new.append(acc + dot(patch, weights, precision))
        return tuple(new)

    zeros = jnp.zeros((block_m, block_n), accumulator_dtype(out_ref.dtype))
    accs = lax.fori_loop(0, size * size * chunks, step, (zeros,) * len(corners))
    _finish(out_ref, tap_ref, list(accs), b_ref, relu)


def _finish(out_ref, tap_ref, accs: list, b_ref, relu: bool) -> None:
    """The epilogue: bias, then ReLU, fused into the one store of the output tile; with 4 accumulators (a 2x2
    pool's pixels) the largest of them is stored and, in tap_ref, which one (the first on ties, as
    pallas_kernels/maxpool.py keeps)."""
    best = _activated(accs[0], b_ref, relu)
    if not tap_ref:
        out_ref[...] = best.astype(out_ref.dtype)
        return
    best_tap = jnp.zeros(best.shape, jnp.int32)
    for tap, acc in enumerate(accs[1:], 1):
        value = _activated(acc, b_ref, relu)
        better = value > best
        best = jnp.where(better, value, best)
        best_tap = jnp.where(better, tap, best_tap)
    out_ref[...] = best.astype(out_ref.dtype)
    tap_ref[0][...] = best_tap


def _activated(acc, b_ref, relu: bool):
    acc = acc + b_ref[...].astype(acc.dtype)
    return jnp.maximum(acc, 0) if relu else acc


@dataclass(frozen=True)
class Conv2dForwardBlocks:
    """conv2d_forward's launch: output pixels, output channels and K per tile, Triton warps and stages.
    The defaults suit the LeNet-sized layers of the CNN; VGG-sized bf16 layers measured best at block_m 128,
    block_n 256 (or 128), block_k 64, 8 (4) warps, 3 stages (BENCHMARKS.md)."""

    block_m: int = 64
    block_n: int = 32
    block_k: int = 32
    num_warps: int = 4
    num_stages: int = 2
    # Program order: the output-channel blocks of one pixel block run next to each other, so they share its
    # input rows in L2 instead of each re-reading them from memory once the pixel blocks have come round.
    channels_fastest: bool = True


# Nine arguments: image, filter, bias, padding, ReLU, then the tiling, precision, operand dtype and interpret flag.
@functools.partial(jax.jit, static_argnames=("pad", "relu", "block_sizes", "precision", "operand_dtype", "interpret"))
def conv2d_forward(
    x,
    w,
    b,
    *,
    pad: int,
    relu: bool = True,
    block_sizes: Conv2dForwardBlocks = Conv2dForwardBlocks(),
    precision: str = "default",
    operand_dtype: str | None = None,
    interpret: bool = False,
) -> jax.Array:
    """x (N, H, W, Cin), w (K, K, Cin, Cout), b (Cout,) -> relu(conv(x, w) + b) (N, OH, OW, Cout), x's dtype.
    operand_dtype: the dots' operand type ("bfloat16": bf16 tensor-core products, fp32 accumulation; None: x's
    dtype, TF32 for fp32 under precision "default"). Cin a multiple of 16 takes the row-gather implicit GEMM
    (_conv_rows_kernel), fewer channels the im2col gather (_conv_kernel). Defaults from a sweep on an H200
    (BENCHMARKS.md): block_k 32 was best for both LeNet layers at batch 1,000 and 10,000."""
    return _forward("conv2d_forward", x, w, b, pad, relu, block_sizes, precision, operand_dtype, interpret, False)


@functools.partial(jax.jit, static_argnames=("pad", "block_sizes", "precision", "interpret"))
def conv2d_pool_forward(
    x,
    w,
    b,
    *,
    pad: int,
    block_sizes: Conv2dForwardBlocks = Conv2dForwardBlocks(),
    precision: str = "default",
    interpret: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """conv + bias + ReLU, then a 2x2 max pool, in one kernel: x (N, H, W, Cin) -> (pooled (N, OH // 2, OW // 2,
    Cout), which (same shape, int32: the window's largest pixel, 0 (0, 0) .. 3 (1, 1), the first on ties)). The
    convolution's output is never written: each program accumulates the 4 pixels of block_m windows and keeps
    their largest. Rows and columns past the last whole window are not computed (a pool drops them)."""
    return _forward("conv2d_pool_forward", x, w, b, pad, True, block_sizes, precision, None, interpret, True)


# Eleven arguments: conv2d_forward's, its kernel's name and a fused pooling.
def _forward(
    name: str,
    x,
    w,
    b,
    pad: int,
    relu: bool,
    block_sizes: Conv2dForwardBlocks,
    precision: str,
    operand_dtype: str | None,
    interpret: bool,
    pool: bool,
):
    block_m, block_n, block_k, num_warps, num_stages = (
        block_sizes.block_m,
        block_sizes.block_n,
        block_sizes.block_k,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    require(
        name,
        x.ndim == 4
        and w.ndim == 4
        and w.shape[0] == w.shape[1]
        and w.shape[2] == x.shape[3]
        and b.shape == (w.shape[3],)
        and pad >= 0,
        "x (N, H, W, Cin), w (K, K, Cin, Cout), b (Cout,), pad >= 0",
        x=x,
        w=w,
        b=b,
    )
    require_blocks(name, block_m=block_m, block_n=block_n, block_k=block_k)
    n, h, width, cin = x.shape
    size, cout = w.shape[0], w.shape[3]
    cout_p = _channels(cout)
    block_n = min(block_n, cout_p)
    out_h, out_w = h + 2 * pad - size + 1, width + 2 * pad - size + 1
    grid_h, grid_w = (out_h // 2, out_w // 2) if pool else (out_h, out_w)  # the rows a program's block_m counts
    m = n * grid_h * grid_w
    operands = jnp.dtype(operand_dtype or x.dtype)
    bias = pad_axis(b, 0, cout_p)
    pixel_blocks, channel_blocks = round_up(m, block_m) // block_m, cout_p // block_n
    fastest = block_sizes.channels_fastest
    blocks = (lambda a, b: (b, a)) if fastest else (lambda a, b: (a, b))  # grid ids -> (pixel, channel) block
    out_shape = jax.ShapeDtypeStruct((round_up(m, block_m), cout_p), x.dtype)
    out_spec = pl.BlockSpec((block_m, block_n), blocks)
    common = dict(
        out_shape=(out_shape, jax.ShapeDtypeStruct(out_shape.shape, jnp.int32)) if pool else out_shape,
        grid=(channel_blocks, pixel_blocks) if fastest else (pixel_blocks, channel_blocks),
        out_specs=(out_spec, out_spec) if pool else out_spec,
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name=name,
    )
    weight_spec = lambda rows: pl.BlockSpec((rows, block_n), lambda a, b: (0, blocks(a, b)[1]))
    bias_spec = pl.BlockSpec((block_n,), lambda a, b: (blocks(a, b)[1],))
    if cin % 16 == 0:
        block_k = min(block_k, cin & -cin)  # the largest power of two dividing Cin, at most block_k
        # Free: NHWC is already one pixel a row. Not narrowed here: `dot` narrows each loaded tile to the
        # weights' operand type in registers, which saves a pass over x.
        rows = x.reshape(n * h * width, cin)
        weights = pad_axis(w.reshape(size * size * cin, cout), 1, cout_p).astype(operands)
        out = pl.pallas_call(
            functools.partial(
                _conv_rows_kernel,
                size=size,
                pad=pad,
                in_h=h,
                in_w=width,
                out_h=out_h,
                out_w=out_w,
                n_rows=m,
                block_m=block_m,
                block_k=block_k,
                relu=relu,
                precision=precision,
                pixel_axis=int(fastest),
                pool=pool,
            ),
            in_specs=[pl.BlockSpec(rows.shape, lambda a, b: (0, 0)), weight_spec(weights.shape[0]), bias_spec],
            **common,
        )(rows, weights, bias)
    else:
        unrolled = size * size * cin  # im2col width
        block_k = min(block_k, _channels(unrolled))
        padded = jnp.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0))).astype(operands)
        zero = padded.size  # index of an appended zero: where the padded im2col columns read
        flat = pad_axis(padded.reshape(-1), 0, next_power_of_two(zero + 1))
        weights = pad_axis(pad_axis(w.reshape(unrolled, cout), 0, round_up(unrolled, block_k)), 1, cout_p).astype(
            operands
        )
        out = pl.pallas_call(
            functools.partial(
                _conv_kernel,
                size=size,
                cin=cin,
                out_h=out_h,
                out_w=out_w,
                in_h=padded.shape[1],
                in_w=padded.shape[2],
                n_rows=m,
                zero=zero,
                block_m=block_m,
                block_k=block_k,
                relu=relu,
                precision=precision,
                pixel_axis=int(fastest),
                pool=pool,
            ),
            in_specs=[pl.BlockSpec(flat.shape, lambda a, b: (0,)), weight_spec(weights.shape[0]), bias_spec],
            **common,
        )(flat, weights, bias)
    shaped = lambda a: a[:m, :cout].reshape(n, grid_h, grid_w, cout)
    return (shaped(out[0]), shaped(out[1])) if pool else shaped(out)


# Fifteen arguments: the image, output-gradient and filter-gradient refs, then the padded geometry and the row tiling.
def _weight_grad_kernel(
    x_ref,
    dz_ref,
    dw_ref,
    *,
    size: int,
    cin: int,
    out_h: int,
    out_w: int,
    in_h: int,
    in_w: int,
    n_rows: int,
    zero: int,
    block_m: int,
    block_r: int,
    chunks: int,
    precision: str,
):
    """dW as the transposed im2col GEMM: rows of dW = im2col columns j = (tap, input channel), reduced over the
    output pixels. Program (r, s): block_r columns, the s-th share of the pixels, block_m pixels a step:
    acc (block_r, Cout_p) += patch (block_m, block_r)^T @ dZ (block_m, Cout_p). x_ref: the padded input
    flattened to single elements (+ a zero at index `zero`), as the forward's _conv_kernel reads it."""
    column = pl.program_id(0) * block_r + lax.broadcasted_iota(jnp.int32, (1, block_r), 1)
    tap, channel = column // cin, column % cin
    column_offset = ((tap // size) * in_w + tap % size) * cin + channel  # (1, block_r), fixed for the program
    real_column = column < size * size * cin
    pixel = lax.broadcasted_iota(jnp.int32, (block_m, 1), 0)
    first_chunk = pl.program_id(1) * chunks  # read here: program_id inside the loop fails in interpret mode

    def chunk(i, acc):
        # (block_m, 1) output pixels: whether each is one, its row of dZ, its (n, oh, ow)
        valid, rows, n, oh, ow = _grid_positions((first_chunk + i) * block_m + pixel, n_rows, out_h, out_w)
        row_start = ((n * in_h + oh) * in_w + ow) * cin
        patch = x_ref[jnp.where(valid & real_column, row_start + column_offset, zero)]  # (block_m, block_r)
        dz = pltriton.load(
            dz_ref.at[rows, lax.broadcasted_iota(jnp.int32, (1, dz_ref.shape[1]), 1)],
            mask=jnp.broadcast_to(valid, (block_m, dz_ref.shape[1])),
            other=0,
        )
        return acc + dot(patch, dz, precision, contract=((0,), (0,)))

    acc = lax.fori_loop(0, chunks, chunk, jnp.zeros(dw_ref.shape[1:], accumulator_dtype(dw_ref.dtype)))
    dw_ref[...] = acc.astype(dw_ref.dtype).reshape(dw_ref.shape)


# Fourteen arguments: _weight_grad_kernel's refs and geometry, reading the unpadded rows (pad) in place.
def _weight_grad_rows_kernel(
    x_ref,
    dz_ref,
    dw_ref,
    *,
    size: int,
    pad: int,
    in_h: int,
    in_w: int,
    out_h: int,
    out_w: int,
    n_rows: int,
    block_m: int,
    block_k: int,
    chunks: int,
    precision: str,
):
    """dW for Cin a multiple of 16, reading x as _conv_rows_kernel does: x_ref (N*H*W, Cin) unpadded, one pixel a
    row; dz_ref (M, Cout_p). Program (r, s): dW's rows r*block_k .. (one tap's block of block_k channels), the
    s-th share of the output pixels, block_m pixels a step: acc (block_k, Cout_p) += patch (block_m, block_k)^T
    @ dZ (block_m, Cout_p), the patch whole aligned rows of x (a masked load: zeros where the tap lies in the
    padding), where the im2col kernel above gathers single elements.
    Tried and not kept: a kernel row of taps a program, sharing each dZ tile. Alone it took 32.5 us against 40.8
    for the default network's second layer at batch 64 (H200). In the training epoch it was slower, 309k against
    340k images/s: with 5 times fewer row blocks, the pixels are split into 5 times as many shares, and summing
    their partial dWs cost more than the shared dZ saved."""
    chunks_a_tap = x_ref.shape[1] // block_k
    # Scalar arithmetic outside the loop: program_id inside it fails in interpret mode, and a scalar `%` inside a
    # loop failed Triton's lowering on the GPU (see _conv_rows_kernel).
    row_block = pl.program_id(0)
    tap = row_block // chunks_a_tap
    channel0 = (row_block - tap * chunks_a_tap) * block_k
    kh = tap // size
    kw = tap - kh * size
    first_chunk = pl.program_id(1) * chunks
    pixel = lax.broadcasted_iota(jnp.int32, (block_m,), 0)
    channel = lax.broadcasted_iota(jnp.int32, (block_k,), 0)
    column = lax.broadcasted_iota(jnp.int32, (dz_ref.shape[1],), 0)

    def chunk(i, acc):
        rows = (first_chunk + i) * block_m + pixel  # (block_m,) output pixels, then each one's row of dZ
        inside, rows, n, oh, ow = _grid_positions(rows, n_rows, out_h, out_w)
        h, w = oh - pad + kh, ow - pad + kw  # the input pixel under this tap
        valid = inside & (h >= 0) & (h < in_h) & (w >= 0) & (w < in_w)
        source = jnp.where(valid, (n * in_h + h) * in_w + w, 0)
        patch = pltriton.load(
            x_ref.at[source[:, None], channel0 + channel[None, :]],
            mask=jnp.broadcast_to(valid[:, None], (block_m, block_k)),
            other=0,
        )
        dz = pltriton.load(
            dz_ref.at[rows[:, None], column[None, :]],
            mask=jnp.broadcast_to(inside[:, None], (block_m, dz_ref.shape[1])),
            other=0,
        )
        return acc + dot(patch, dz, precision, contract=((0,), (0,)))

    acc = lax.fori_loop(0, chunks, chunk, jnp.zeros(dw_ref.shape[1:], accumulator_dtype(dw_ref.dtype)))
    dw_ref[...] = acc.astype(dw_ref.dtype).reshape(dw_ref.shape)


@dataclass(frozen=True)
class Conv2dWeightGradBlocks:
    """conv2d_weight_grad's launch: dW rows (im2col columns) and pixels per step, about how many programs in all
    (the pixels are split among as many as that leaves, each share summed afterwards), Triton warps and stages."""

    block_r: int = 32
    block_m: int = 128
    programs: int = 256
    num_warps: int = 4
    num_stages: int = 2
    # Cin a multiple of 16: read x a pixel row at a time (_weight_grad_rows_kernel) instead of gathering im2col's
    # single elements (False: the gather, kept for measuring one against the other).
    rows: bool = True


@functools.partial(jax.jit, static_argnames=("size", "pad", "block_sizes", "precision", "interpret"))
def conv2d_weight_grad(
    x,
    dz,
    *,
    size: int,
    pad: int,
    block_sizes: Conv2dWeightGradBlocks = Conv2dWeightGradBlocks(),
    precision: str = "default",
    interpret: bool = False,
) -> jax.Array:
    """x (N, H, W, Cin), dZ (N, OH, OW, Cout) -> dW (K, K, Cin, Cout) = sum over pixels of x_tap^T dZ.
    Grid (dW row blocks, pixel shares): every tap of a 1-channel image layer is one 32-row block, so its
    programs split only the pixels, and none loops over thousands of pixels alone (the previous layout, one
    program per tap and share, took half the Pallas CNN's step on an H100: BENCHMARKS.md)."""
    block_r, block_m, programs, num_warps, num_stages = (
        block_sizes.block_r,
        block_sizes.block_m,
        block_sizes.programs,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    out_h, out_w = x.shape[1] + 2 * pad - size + 1, x.shape[2] + 2 * pad - size + 1
    require(
        "conv2d_weight_grad",
        x.ndim == 4 and dz.ndim == 4 and dz.shape[:3] == (x.shape[0], out_h, out_w),
        f"x (N, H, W, Cin), dz (N, H + 2 * {pad} - {size} + 1, W + 2 * {pad} - {size} + 1, Cout)",
        x=x,
        dz=dz,
    )
    require_blocks("conv2d_weight_grad", block_r=block_r, block_m=block_m)
    n, h, width, cin = x.shape
    cout = dz.shape[3]
    cout_p = _channels(cout)
    unrolled = size * size * cin  # dW's rows: im2col's columns
    m = n * out_h * out_w
    dz_rows = pad_axis(dz.reshape(m, cout), 1, cout_p)
    total_chunks = -(-m // block_m)
    if cin % 16 == 0 and block_sizes.rows:  # whole rows of x a tap, as the forward's _conv_rows_kernel reads them
        block = min(block_r, cin & -cin)  # dW rows a program: a power of two dividing Cin, at most block_r
        source = x.reshape(n * h * width, cin)
        kernel = functools.partial(_weight_grad_rows_kernel, size=size, pad=pad, in_h=h, in_w=width, block_k=block)
        name = "conv2d_weight_grad_rows"
    else:  # the padded input flattened to single elements, im2col's columns gathered
        block = min(block_r, _channels(unrolled))
        padded = jnp.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
        zero = padded.size
        source = pad_axis(padded.reshape(-1), 0, next_power_of_two(zero + 1))
        kernel = functools.partial(
            _weight_grad_kernel,
            size=size,
            cin=cin,
            in_h=padded.shape[1],
            in_w=padded.shape[2],
            zero=zero,
            block_r=block,
        )
        name = "conv2d_weight_grad"
    row_blocks = round_up(unrolled, block) // block
    splits = max(1, min(total_chunks, programs // row_blocks))
    chunks = -(-total_chunks // splits)
    partial = pl.pallas_call(
        functools.partial(
            kernel, out_h=out_h, out_w=out_w, n_rows=m, block_m=block_m, chunks=chunks, precision=precision
        ),
        out_shape=jax.ShapeDtypeStruct((splits, row_blocks * block, cout_p), x.dtype),
        grid=(row_blocks, splits),
        in_specs=[
            pl.BlockSpec(source.shape, lambda r, s: (0,) * source.ndim),
            pl.BlockSpec(dz_rows.shape, lambda r, s: (0, 0)),
        ],
        out_specs=pl.BlockSpec((1, block, cout_p), lambda r, s: (s, r, 0)),
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name=name,
    )(source, dz_rows)
    return partial.sum(axis=0)[:unrolled, :cout].reshape(size, size, cin, cout)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def conv2d(x, w, b, pad: int, kernel: tuple = (Conv2dForwardBlocks(), Conv2dWeightGradBlocks(), "default", False)):
    """Differentiable conv + bias + ReLU; kernel = (Conv2dForwardBlocks: the forward and dX, Conv2dWeightGradBlocks:
    dW, precision, interpret), and optionally a fifth entry, dX's own Conv2dForwardBlocks (its input has Cout
    channels and its output Cin: another shape than the forward's)."""
    forward_blocks, _, precision, interpret = kernel[:4]
    return conv2d_forward(x, w, b, pad=pad, block_sizes=forward_blocks, precision=precision, interpret=interpret)


def _conv2d_fwd(x, w, b, pad, kernel):
    y = conv2d(x, w, b, pad, kernel)
    return y, (x, w, y)


def _conv2d_bwd(pad, kernel, residuals, dy):
    x, w, y = residuals
    return _conv_grads(x, w, jnp.where(y > 0, dy, jnp.zeros((), dy.dtype)), pad, kernel)


def _conv_grads(x, w, dz, pad: int, kernel: tuple):
    """(dX, dW, db) from dZ, the gradient at the convolution's output before its ReLU."""
    forward_blocks, grad_blocks, precision, interpret = kernel[:4]
    input_grad_blocks = kernel[4] if len(kernel) > 4 else forward_blocks
    size = w.shape[0]
    flipped = jnp.transpose(w[::-1, ::-1], (0, 1, 3, 2))  # (K, K, Cout, Cin)
    dx = conv2d_forward(
        dz,
        flipped,
        jnp.zeros((x.shape[3],), x.dtype),
        pad=size - 1 - pad,
        relu=False,
        block_sizes=input_grad_blocks,
        precision=precision,
        interpret=interpret,
    )
    dw = conv2d_weight_grad(
        x, dz, size=size, pad=pad, block_sizes=grad_blocks, precision=precision, interpret=interpret
    )
    return dx, dw, jnp.sum(dz, axis=(0, 1, 2))


conv2d.defvjp(_conv2d_fwd, _conv2d_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def conv2d_pool(x, w, b, pad: int, kernel: tuple = (Conv2dForwardBlocks(), Conv2dWeightGradBlocks(), "default", False)):
    """Differentiable conv + bias + ReLU + 2x2 max pool (conv2d_pool_forward); kernel as conv2d's, its first entry
    the fused forward's blocks (block_m counts windows), its optional fifth dX's. Backward: dZ is dY at each
    window's largest pixel where that was positive (the ReLU), 0 elsewhere (maxpool_backward, from `which`); then
    dX and dW as conv2d's."""
    return _conv2d_pool_fwd(x, w, b, pad, kernel)[0]


def _conv2d_pool_fwd(x, w, b, pad, kernel):
    forward_blocks, _, precision, interpret = kernel[:4]
    pooled, which = conv2d_pool_forward(
        x, w, b, pad=pad, block_sizes=forward_blocks, precision=precision, interpret=interpret
    )
    return pooled, (x, w, pooled, which)


def _conv2d_pool_bwd(pad, kernel, residuals, dy):
    x, w, pooled, which = residuals
    size = w.shape[0]
    out_h, out_w = x.shape[1] + 2 * pad - size + 1, x.shape[2] + 2 * pad - size + 1
    live = jnp.where(pooled > 0, dy, jnp.zeros((), dy.dtype))  # the ReLU: no gradient where the window was cut
    dz = maxpool_backward(live, which, size=2, height=out_h, width=out_w, interpret=kernel[3])
    return _conv_grads(x, w, dz, pad, kernel)


conv2d_pool.defvjp(_conv2d_pool_fwd, _conv2d_pool_bwd)


def conv2d_reference(x, w, b, pad: int, precision: str = "default"):
    """Plain JAX (XLA, cuDNN on a GPU): the same conv + bias + ReLU, differentiable by jax.grad."""
    from pallas_kernels.common import PRECISIONS

    y = lax.conv_general_dilated(
        x,
        w,
        (1, 1),
        [(pad, pad), (pad, pad)],
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision=PRECISIONS[precision],
    )
    return jax.nn.relu(y + b)
