"""Fused Adam update, in place: one pass over a parameter, its two moment buffers and its gradient.

  g <- g + weight_decay * w
  m <- b1 m + (1 - b1) g ;  v <- b2 v + (1 - b2) g^2
  w <- w - lr * (m / c1) / (sqrt(v / c2) + eps),   c1 = 1 - b1^t, c2 = 1 - b2^t
`scalars` = [lr, c1, c2, 0] as a (4,) array: they change every step and must not trigger a recompile.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from pallas_kernels.common import next_power_of_two, pad_axis, require, require_blocks, round_up, triton_params


# Eleven arguments: a weight, its two moments and gradient, then the rate, the bias corrections and Adam's three
# constants.
def adam_step(w, m, v, g, lr, c1, c2, *, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8, weight_decay=0.0):
    """The update on loaded tiles -> (w, m, v); also used by the kernels that fuse it (input_grad, head_update,
    stacked_input_adam). lr and weight_decay: scalars, or arrays that broadcast against w (one value per
    column's network in stacked_input_adam); c1, c2: the bias corrections."""
    g = g.astype(w.dtype) + weight_decay * w
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    return w - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), m, v


def scalars_of(s_ref):
    """(lr, c1, c2) from the (4,) scalars ref [lr, c1, c2, 0]: scalar loads straight from the ref (slicing a
    loaded array has no Triton lowering)."""
    return s_ref[0], s_ref[1], s_ref[2]


# Eight refs: the weight, moments, gradient and the scalars' row in; the weight and moments out.
def _kernel(w_ref, m_ref, v_ref, g_ref, s_ref, w_out, m_out, v_out, **hyper):
    w_out[...], m_out[...], v_out[...] = adam_step(
        w_ref[...], m_ref[...], v_ref[...], g_ref[...], *scalars_of(s_ref), **hyper
    )


@dataclass(frozen=True)
class AdamUpdateBlocks:
    """adam_update's launch: elements per program and Triton warps."""

    block: int = 4096
    num_warps: int = 4


# Eleven arguments: weight, moments, gradient and scalars, Adam's constants, then the tiling and interpret flag.
@functools.partial(
    jax.jit,
    static_argnames=("beta1", "beta2", "eps", "weight_decay", "block_sizes", "interpret"),
    donate_argnums=(0, 1, 2),
)
def adam_update(
    w,
    m,
    v,
    g,
    scalars,
    *,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    block_sizes: AdamUpdateBlocks = AdamUpdateBlocks(),
    interpret: bool = False,
):
    """-> (new w, new m, new v), written over w, m and v (donated). scalars: (4,) [lr, c1, c2, unused]."""
    block, num_warps = block_sizes.block, block_sizes.num_warps
    require(
        "adam_update",
        w.shape == m.shape == v.shape == g.shape and scalars.shape == (4,),
        "w, m, v, g of one shape and scalars (4,)",
        w=w,
        m=m,
        v=v,
        g=g,
        scalars=scalars,
    )
    require_blocks("adam_update", block=block)
    shape, size = w.shape, w.size
    block = min(block, next_power_of_two(size))
    padded = round_up(size, block)
    flat = lambda a: pad_axis(a.reshape(-1), 0, padded)
    spec = pl.BlockSpec((block,), lambda i: (i,))
    outs = pl.pallas_call(
        functools.partial(_kernel, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay),
        out_shape=tuple(jax.ShapeDtypeStruct((padded,), a.dtype) for a in (w, m, v)),
        grid=(padded // block,),
        in_specs=[spec, spec, spec, spec, pl.BlockSpec((4,), lambda i: (0,))],
        out_specs=(spec, spec, spec),
        input_output_aliases={0: 0, 1: 1, 2: 2},
        compiler_params=triton_params(num_warps, 1),
        interpret=interpret,
        name="adam_update",
    )(flat(w), flat(m), flat(v), flat(g), scalars.astype(w.dtype))
    return tuple(o[:size].reshape(shape) for o in outs)


# Nine arguments: adam_update's operands and constants, without its tiling.
def adam_update_reference(w, m, v, g, scalars, *, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    lr, c1, c2 = scalars[0], scalars[1], scalars[2]
    g = g + weight_decay * w
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return w - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), m, v
