"""2-D convolution + bias + ReLU on Hopper's tensor cores through Pallas's Mosaic GPU backend: TMA loads of
shifted input tiles and warpgroup MMAs (wgmma), for bf16 layers of many channels (VGG's 3x3 convolutions).

out[oh, ow, n, :] = relu(sum_{kh, kw} x[oh+kh-p, ow+kw-p, n, :] @ w[kh, kw] + b), stride 1, in the blocked
layout (H, W, C / 64, N, 64): `to_blocked` / `from_blocked` convert from and to NHWC.

Why this layout: a wgmma reads its (M, K) operand from shared memory in tiles of 8 rows x 128 bytes (64 bf16),
and Mosaic GPU's TMA copies keep that tiling on the global side, so a copy's start along its rows must be a
multiple of 8. A 3x3 tap shifts the input by one pixel in H and W; with images along the rows, the shift falls
on the leading dimensions, which take any start, and the rows (8 or more images of one pixel) stay aligned (in
NHWC the rows would be an image row's pixels, and a shifted tap would start at an odd column). The kernel reads
x as (H, W, (C / 64) * N, 64), a free reshape: with the tiling's two dimensions added a copy's view of it has 5
dimensions, the most a TMA copy takes. With more (HWNC with 128 channels or more: H, W, N / 8, C / 64, 8, 64),
Mosaic GPU folds the leading indices into one linear index, and a tap that leaves the image then reads the
neighbouring pixel's data instead of zeros (measured on an H200: wrong outputs along the image's border). A network
keeps one layout from layer to layer (the conversion is paid at its input and output; BENCHMARKS.md, "VGG-16").

A program's output tile is (tile_h x tile_w pixels) x (tile_n images) x (block_n output channels): the M of
its product is tile_h * tile_w * tile_n rows, pixel-major. Each pipeline step is one (tap, 64-channel block):
tile_h * tile_w TMA copies of (tile_n images, 64 channels) from the input shifted by (kh - p, kw - p) -- the copy
engine zero-fills what lies outside the image, so the padding is neither written nor masked -- and one of the
tap's (64, block_n) weight rows, all on one barrier; the wgmma of step s overlaps the copies of the steps after
it (`stages` slots), and near a tile's end the copies of the next tile's first steps are already in flight. The
epilogue adds the bias, applies ReLU and stores the tile by TMA (which drops what lies past the image's edge).
The grid is persistent, one program per SM walking the tiles, the channel blocks of one pixel tile next to each
other so that they share its input in L2.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

from pallas_kernels.common import require

CHANNEL_BLOCK = 64  # input channels a step: 128 bytes of bf16, one 128-byte swizzle row


@dataclass(frozen=True)
class Conv2dTmaBlocks:
    """A program's output tile: tile_h x tile_w pixels of tile_n images (tile_n a multiple of 8; M = their
    product, a multiple of 64, the rows of one warpgroup's accumulator: M x block_n fp32 at most 128 x 256 or
    256 x 64 registers' worth) and block_n output channels; how many pipeline steps are in flight (shared-memory
    slots of M x 64 + 64 x block_n bf16 each)."""

    tile_h: int = 2
    tile_w: int = 2
    tile_n: int = 32
    block_n: int = 128
    stages: int = 4


def default_blocks(n_images: int, cout: int) -> Conv2dTmaBlocks:
    """The tiling the VGG-16 sweep on an H200 measured fastest for the layer's output width (BENCHMARKS.md,
    "VGG-16"), with tile_n the largest of 32 / 16 / 8 dividing N and the pixels widened to keep M."""
    tile_n = next(t for t in (32, 16, 8) if n_images % t == 0)
    widen = 32 // tile_n
    if cout == 64:  # (conv1_2) one 64-channel block: a tall tile, 256 rows, amortises each step's weights
        return Conv2dTmaBlocks(tile_h=2 * widen, tile_w=4, tile_n=tile_n, block_n=64, stages=4)
    if cout >= 256:  # (conv3_x - conv5_x) 64 rows x 256 channels
        return Conv2dTmaBlocks(tile_h=1, tile_w=2 * widen, tile_n=tile_n, block_n=256, stages=4)
    return Conv2dTmaBlocks(tile_h=2, tile_w=2 * widen, tile_n=tile_n, block_n=128, stages=4)


def supports_tma(x, w) -> bool:
    """Whether conv2d_blocked_forward takes this layer: bf16 activations, NHWC x with N a multiple of 8, Cin and
    Cout multiples of 64, a square kernel, on a GPU of compute capability 9 (Hopper: TMA and wgmma)."""
    device = jax.devices()[0]
    hopper = device.platform == "gpu" and getattr(device, "compute_capability", "").startswith("9")
    return bool(
        hopper
        and x.dtype == jnp.bfloat16
        and x.ndim == 4
        and w.ndim == 4
        and w.shape[0] == w.shape[1]
        and x.shape[0] % 8 == 0
        and x.shape[3] % CHANNEL_BLOCK == 0
        and w.shape[3] % CHANNEL_BLOCK == 0
    )


def to_blocked(x: jax.Array) -> jax.Array:
    """NHWC (N, H, W, C) -> (H, W, C / 64, N, 64), C a multiple of 64."""
    n, h, w, c = x.shape
    return x.reshape(n, h, w, c // CHANNEL_BLOCK, CHANNEL_BLOCK).transpose(1, 2, 3, 0, 4)


def from_blocked(x: jax.Array) -> jax.Array:
    """(H, W, C / 64, N, 64) -> NHWC (N, H, W, C)."""
    h, w, blocks, n, _ = x.shape
    return x.transpose(3, 0, 1, 2, 4).reshape(n, h, w, blocks * CHANNEL_BLOCK)


def _programs() -> int:
    device = jax.devices()[0]
    return device.core_count if device.platform == "gpu" else 4


# Over 80 lines: the TMA descriptors, the pipelined body and its launch share their block sizes; see the module.
@functools.partial(jax.jit, static_argnames=("pad", "relu", "blocks", "interpret"))
def conv2d_blocked_forward(
    x, w, b, *, pad: int, relu: bool = True, blocks: Conv2dTmaBlocks | None = None, interpret: bool = False
) -> jax.Array:
    """x (H, W, Cin / 64, N, 64), w (K, K, Cin, Cout), b (Cout,) -> relu(conv(x, w) + b) (OH, OW, Cout / 64, N,
    64): bf16 operands and output, fp32 accumulation. N a multiple of blocks.tile_n (a multiple of 8); Cout a
    multiple of block_n (a multiple of 64, at most 256), or smaller than it. blocks None: default_blocks.
    (Over 80 lines: the kernel body is a closure over the tiling it is launched with, as Pallas kernels are.)"""
    require(
        "conv2d_blocked_forward",
        x.ndim == 5
        and x.shape[4] == CHANNEL_BLOCK
        and w.ndim == 4
        and w.shape[0] == w.shape[1]
        and w.shape[2] == x.shape[2] * CHANNEL_BLOCK
        and b.shape == (w.shape[3],)
        and pad >= 0
        and w.shape[3] % CHANNEL_BLOCK == 0,
        "x (H, W, Cin / 64, N, 64), w (K, K, Cin, Cout), b (Cout,), Cout a multiple of 64",
        x=x,
        w=w,
        b=b,
    )
    h, width, chunks, n_images, _ = x.shape
    cin = chunks * CHANNEL_BLOCK
    size, cout = w.shape[0], w.shape[3]
    require("conv2d_blocked_forward", blocks is not None or n_images % 8 == 0, "N a multiple of 8", x=x)
    blocks = blocks or default_blocks(n_images, cout)
    tile_h, tile_w, tile_n, stages = blocks.tile_h, blocks.tile_w, blocks.tile_n, blocks.stages
    block_n = min(blocks.block_n, cout)
    require(
        "conv2d_blocked_forward",
        tile_n % 8 == 0 and n_images % tile_n == 0,
        f"N a multiple of tile_n {tile_n}, itself a multiple of 8",
        x=x,
    )
    require(
        "conv2d_blocked_forward",
        tile_h * tile_w * tile_n % 64 == 0,
        f"tile_h * tile_w * tile_n a multiple of 64 (a wgmma's rows), not {tile_h * tile_w * tile_n}",
        x=x,
    )
    require(
        "conv2d_blocked_forward",
        cout % block_n == 0 and block_n % CHANNEL_BLOCK == 0 and block_n <= 256,
        f"Cout a multiple of block_n {block_n}, itself a multiple of 64 and at most 256",
        w=w,
    )
    sub_blocks = block_n // CHANNEL_BLOCK  # 64-channel blocks of the output a tile stores
    out_h, out_w = h + 2 * pad - size + 1, width + 2 * pad - size + 1
    tiles_h, tiles_w, tiles_n, tiles_c = -(-out_h // tile_h), -(-out_w // tile_w), n_images // tile_n, cout // block_n
    steps = size * size * chunks  # a tile's pipeline steps: (tap, 64-channel block)
    pixels = tile_h * tile_w
    tile_m = pixels * tile_n
    tiles = tiles_h * tiles_w * tiles_n * tiles_c
    programs = min(_programs(), tiles)
    x = x.astype(jnp.bfloat16).reshape(h, width, chunks * n_images, CHANNEL_BLOCK)  # rows: (channel block, image)
    # (channel block, tap * Cin + channel, block_n): a tile's weights start at a leading index
    taps = w.reshape(size * size * cin, tiles_c, block_n).transpose(1, 0, 2).astype(jnp.bfloat16)
    bias = b.astype(jnp.float32).reshape(tiles_c, block_n)

    # Over 80 lines: one software-pipelined loop over the input channels; its stages share registers.
    def body(x_gmem, w_gmem, b_gmem, o_gmem):
        program = lax.axis_index("sm")
        # This program's tiles are program, program + programs, ...; its steps run as one stream, so the copies of
        # a tile's first steps are in flight while the tile before it finishes and stores.
        total_steps = lax.div(tiles - 1 - program, programs) * steps + steps

        def tile_at(step):
            index = program + lax.div(step, steps) * programs
            channel_block = lax.rem(index, tiles_c)
            rest = lax.div(index, tiles_c)
            n0 = lax.rem(rest, tiles_n) * tile_n
            rest = lax.div(rest, tiles_n)
            return lax.div(rest, tiles_w) * tile_h, lax.rem(rest, tiles_w) * tile_w, n0, channel_block

        def pipeline(x_smem, w_smem, loaded, b_smem, b_loaded, o_smem):
            def load(step, slot):
                # Step = a tile's (tap, channel block), w's row order: for each pixel of the tile, its tile_n
                # images' 64 channels under the tap (zero-filled where the tap leaves the image), and the tap's
                # weight rows, all on the slot's barrier.
                h0, w0, n0, channel_block = tile_at(step)
                within = lax.rem(step, steps)
                tap = lax.div(within, chunks)
                kh = lax.div(tap, size)
                kw = tap - kh * size

                chunk = lax.rem(within, chunks)
                for p in range(pixels):
                    plgpu.copy_gmem_to_smem(
                        x_gmem.at[
                            h0 + p // tile_w + kh - pad,
                            w0 + p % tile_w + kw - pad,
                            pl.ds(chunk * n_images + n0, tile_n),
                        ],
                        x_smem.at[slot, pl.ds(p * tile_n, tile_n)],
                        loaded.at[slot],
                    )
                plgpu.copy_gmem_to_smem(
                    w_gmem.at[channel_block, pl.ds(within * CHANNEL_BLOCK, CHANNEL_BLOCK)],
                    w_smem.at[slot],
                    loaded.at[slot],
                )

            def finish(acc, step):
                # After a tile's last step: bias, ReLU, and its store (once the previous tile's store has read o_smem).
                h0, w0, n0, channel_block = tile_at(step)
                result = acc + lax.broadcast_in_dim(b_smem[channel_block], (tile_m, block_n), [1])
                if relu:
                    result = jnp.maximum(result, 0.0)
                result = result.astype(jnp.bfloat16)
                plgpu.wait_smem_to_gmem(0, wait_read_only=True)
                for j in range(sub_blocks):
                    o_smem[j] = result[:, j * CHANNEL_BLOCK : (j + 1) * CHANNEL_BLOCK]
                plgpu.commit_smem()
                for j in range(sub_blocks):
                    for p in range(pixels):
                        plgpu.copy_smem_to_gmem(
                            o_smem.at[j, pl.ds(p * tile_n, tile_n)],
                            o_gmem.at[
                                h0 + p // tile_w,
                                w0 + p % tile_w,
                                pl.ds((channel_block * sub_blocks + j) * n_images + n0, tile_n),
                            ],
                        )

            def tile_steps(first, acc_ref):
                @pl.loop(first, first + steps)
                def _(step):
                    slot = lax.rem(step, stages)
                    plgpu.barrier_wait(loaded.at[slot])
                    plgpu.wgmma(acc_ref, x_smem.at[slot], w_smem.at[slot])
                    plgpu.wgmma_wait(1)  # the previous step's product is done: its slot may be refilled

                    @pl.when((step > 0) & (step - 1 + stages < total_steps))
                    def _():
                        load(step - 1 + stages, lax.rem(step - 1, stages))  # the next tile's too, near the end

                plgpu.wgmma_wait(0)
                return acc_ref[...]

            plgpu.copy_gmem_to_smem(b_gmem, b_smem, b_loaded)
            for step in range(stages):
                pl.when(step < total_steps)(functools.partial(load, step, step))
            plgpu.barrier_wait(b_loaded)

            @pl.loop(0, total_steps, step=steps)
            def _(first):
                acc = pl.run_scoped(functools.partial(tile_steps, first), plgpu.ACC((tile_m, block_n)))
                finish(acc, first)

            plgpu.wait_smem_to_gmem(0)

        pl.run_scoped(
            pipeline,
            plgpu.SMEM((stages, tile_m, CHANNEL_BLOCK), jnp.bfloat16),  # x_smem
            plgpu.SMEM((stages, CHANNEL_BLOCK, block_n), jnp.bfloat16),  # w_smem
            plgpu.Barrier(num_arrivals=pixels + 1, num_barriers=stages),  # loaded: a slot's copies
            plgpu.SMEM((tiles_c, block_n), jnp.float32),  # b_smem: the bias, by channel block
            plgpu.Barrier(),  # b_loaded
            plgpu.SMEM((sub_blocks, tile_m, CHANNEL_BLOCK), jnp.bfloat16),  # o_smem
        )

    kernel = plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((out_h, out_w, cout // CHANNEL_BLOCK * n_images, CHANNEL_BLOCK), jnp.bfloat16),
        grid=(programs,),
        grid_names=("sm",),
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
        interpret=plgpu.InterpretGPUParams() if interpret else None,
    )
    return kernel(x, taps, bias).reshape(out_h, out_w, cout // CHANNEL_BLOCK, n_images, CHANNEL_BLOCK)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def conv2d_blocked(x, w, b, pad: int, blocks: Conv2dTmaBlocks | None = None, interpret: bool = False):
    """Differentiable conv + bias + ReLU in the blocked layout (conv2d_blocked_forward). Backward, as conv2d.py's:
    dZ = dY * (Y > 0); dX = this kernel on dZ with the kernel flipped and its channels swapped, padded by
    K - 1 - p (a stride-1 transposed convolution is a convolution); dW (x's taps^T dZ) and db in plain JAX."""
    return conv2d_blocked_forward(x, w, b, pad=pad, blocks=blocks, interpret=interpret)


def _conv2d_blocked_fwd(x, w, b, pad, blocks, interpret):
    y = conv2d_blocked(x, w, b, pad, blocks, interpret)
    return y, (x, w, y)


def _conv2d_blocked_bwd(pad, blocks, interpret, residuals, dy):
    x, w, y = residuals
    size, cin = w.shape[0], w.shape[2]
    dz = jnp.where(y > 0, dy, jnp.zeros((), dy.dtype))  # (OH, OW, Cout / 64, N, 64)
    flipped = jnp.transpose(w[::-1, ::-1], (0, 1, 3, 2))  # (K, K, Cout, Cin)
    dx = conv2d_blocked_forward(
        dz, flipped, jnp.zeros((cin,), jnp.float32), pad=size - 1 - pad, relu=False, blocks=blocks, interpret=interpret
    )
    _, weight_vjp = jax.vjp(lambda w_: _convolution(from_blocked(x), w_, pad), w)
    dw = weight_vjp(from_blocked(dz).astype(jnp.float32))[0]
    db = jnp.sum(dz.astype(jnp.float32), axis=(0, 1, 3)).reshape(-1)
    return dx.astype(x.dtype), dw.astype(w.dtype), db


conv2d_blocked.defvjp(_conv2d_blocked_fwd, _conv2d_blocked_bwd)


def _convolution(x_nhwc, w, pad: int):
    """Plain JAX, fp32: NHWC x, (K, K, Cin, Cout) w -> NHWC."""
    return lax.conv_general_dilated(
        x_nhwc.astype(jnp.float32),
        w.astype(jnp.float32),
        (1, 1),
        [(pad, pad)] * 2,
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision="highest",
    )


def conv2d_blocked_reference(x, w, b, pad: int, relu: bool = True):
    """Plain JAX (XLA, cuDNN on a GPU): the same conv + bias (+ ReLU) in the blocked layout, fp32, differentiable
    by jax.grad."""
    y = _convolution(from_blocked(x), w, pad) + b
    return to_blocked(jax.nn.relu(y) if relu else y)
