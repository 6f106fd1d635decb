"""Fused SGD-with-momentum update (the original design's "ApplyWeightChange"), in place.

  v <- momentum * v + g + weight_decay * w
  w <- w - lr * v
One pass over each parameter: w, v and g are read once, w and v written once into the same buffers
(input_output_aliases), instead of the several passes separate XLA ops would make if they did not fuse.
lr arrives as a (1,) array because it changes every step (linear decay) and must not trigger a recompile.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from pallas_kernels.common import next_power_of_two, triton_params


def _kernel(w_ref, v_ref, g_ref, lr_ref, w_out, v_out, *, momentum: float, weight_decay: float, size: int):
    block = w_out.shape[0]
    start = pl.program_id(0) * block
    index = start + jnp.arange(block)
    valid = index < size  # the last block may run past the end of the flat parameter
    window = pl.ds(start, block)
    w = pltriton.load(w_ref.at[window], mask=valid, other=0.0)
    v = pltriton.load(v_ref.at[window], mask=valid, other=0.0)
    g = pltriton.load(g_ref.at[window], mask=valid, other=0.0)
    v = momentum * v + g.astype(v.dtype) + weight_decay * w
    w = w - lr_ref[0].astype(w.dtype) * v
    pltriton.store(w_out.at[window], w, mask=valid)
    pltriton.store(v_out.at[window], v, mask=valid)


@functools.partial(jax.jit, static_argnames=("momentum", "weight_decay", "block", "num_warps", "interpret"),
                   donate_argnums=(0, 1))
def sgd_update(w, v, g, lr, *, momentum: float, weight_decay: float, block: int = 4096, num_warps: int = 4,
               interpret: bool = False):
    """-> (new w, new v), written over w and v (donated). lr: scalar or (1,) array."""
    shape = w.shape
    size = w.size
    block = min(block, next_power_of_two(size))
    flat = lambda a: a.reshape(-1)
    lr = jnp.asarray(lr, w.dtype).reshape(1)
    w_new, v_new = pl.pallas_call(
        functools.partial(_kernel, momentum=momentum, weight_decay=weight_decay, size=size),
        out_shape=(jax.ShapeDtypeStruct((size,), w.dtype), jax.ShapeDtypeStruct((size,), v.dtype)),
        grid=(-(-size // block),),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * 3 + [pl.BlockSpec((1,), lambda i: (0,))],
        out_specs=(pl.BlockSpec(memory_space=pl.ANY), pl.BlockSpec(memory_space=pl.ANY)),
        input_output_aliases={0: 0, 1: 1},
        compiler_params=triton_params(num_warps, 1), interpret=interpret, name="sgd_update",
    )(flat(w), flat(v), flat(g), lr)
    return w_new.reshape(shape), v_new.reshape(shape)


def sgd_update_reference(w, v, g, lr, *, momentum: float, weight_decay: float):
    v = momentum * v + g + weight_decay * w
    return w - jnp.asarray(lr, w.dtype).reshape(()) * v, v
