"""Fused SGD-with-momentum update (the original design's "ApplyWeightChange"), in place.

  v <- momentum * v + g + weight_decay * w
  w <- w - lr * v
One pass over each parameter: w, v and g are read once, w and v written once into the same buffers
(input_output_aliases), instead of the several passes separate XLA ops would make if they did not fuse.
lr arrives as a (1,) array because it changes every step (linear decay) and must not trigger a recompile.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from pallas_kernels.common import next_power_of_two, pad_axis, require, require_blocks, round_up, triton_params


def sgd_step(w, v, g, lr, *, momentum: float, weight_decay: float):
    """The update on loaded tiles -> (w, v); also used by the kernels that fuse it (input_grad, head_update)."""
    v = momentum * v + g.astype(w.dtype) + weight_decay * w
    return w - lr.astype(w.dtype) * v, v


def _kernel(w_ref, v_ref, g_ref, lr_ref, w_out, v_out, *, momentum: float, weight_decay: float):
    # One (block,) slice of the flattened parameter, its momentum buffer and its gradient.
    w_out[...], v_out[...] = sgd_step(
        w_ref[...], v_ref[...], g_ref[...], lr_ref[0], momentum=momentum, weight_decay=weight_decay
    )


@dataclass(frozen=True)
class SgdUpdateBlocks:
    """sgd_update's launch: elements per program and Triton warps."""

    block: int = 4096
    num_warps: int = 4


@functools.partial(
    jax.jit, static_argnames=("momentum", "weight_decay", "block_sizes", "interpret"), donate_argnums=(0, 1)
)
def sgd_update(
    w,
    v,
    g,
    lr,
    *,
    momentum: float,
    weight_decay: float,
    block_sizes: SgdUpdateBlocks = SgdUpdateBlocks(),
    interpret: bool = False,
):
    """-> (new w, new v), written over w and v (donated). lr: scalar or (1,) array.

    Triton needs power-of-two shapes, so the flattened parameter is cut into power-of-two blocks; a size that
    is not a multiple of the block is padded (a copy; the product's parameters are all powers of two)."""
    block, num_warps = block_sizes.block, block_sizes.num_warps
    require("sgd_update", w.shape == v.shape == g.shape, "w, v, g of one shape", w=w, v=v, g=g)
    require_blocks("sgd_update", block=block)
    shape, size = w.shape, w.size
    block = min(block, next_power_of_two(size))
    padded = round_up(size, block)
    flat = lambda a: pad_axis(a.reshape(-1), 0, padded)
    lr = jnp.asarray(lr, w.dtype).reshape(1)
    spec = pl.BlockSpec((block,), lambda i: (i,))
    w_new, v_new = pl.pallas_call(
        functools.partial(_kernel, momentum=momentum, weight_decay=weight_decay),
        out_shape=(jax.ShapeDtypeStruct((padded,), w.dtype), jax.ShapeDtypeStruct((padded,), v.dtype)),
        grid=(padded // block,),
        in_specs=[spec, spec, spec, pl.BlockSpec((1,), lambda i: (0,))],
        out_specs=(spec, spec),
        input_output_aliases={0: 0, 1: 1},
        compiler_params=triton_params(num_warps, 1),
        interpret=interpret,
        name="sgd_update",
    )(flat(w), flat(v), flat(g), lr)
    return w_new[:size].reshape(shape), v_new[:size].reshape(shape)


def sgd_update_reference(w, v, g, lr, *, momentum: float, weight_decay: float):
    v = momentum * v + g + weight_decay * w
    return w - jnp.asarray(lr, w.dtype).reshape(()) * v, v
