"""Fused SGD-momentum update of the small parameters b1, W2 and b2 from hidden_backward's per-block partial
gradients, in one launch and in place.

For each (w, v, partials): g = sum over p of partials[p]; v <- momentum * v + g + weight_decay * w;
w <- w - lr * v (the same math as sgd_update). hidden_backward_partials leaves one partial per block of rows;
summing them here instead of in XLA turns three reductions and three sgd_update launches into one program:
at small batches the training step is mostly launches (BENCHMARKS.md, epoch profile).

Shapes: b1 (N,), W2 (N, Cp), b2 (Cp,); partials (P, N), (P, N, Cp), (P, Cp), P = number of row blocks.
All of it is ~P * 17 KB at N = 128, Cp = 16, so a single program handles it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.common import triton_params


def _update(w_ref, v_ref, parts_ref, lr, w_out, v_out, momentum: float, weight_decay: float) -> None:
    w = w_ref[...]
    grad = lax.fori_loop(0, parts_ref.shape[0], lambda p, acc: acc + parts_ref[p].astype(w.dtype),
                         jnp.zeros(w.shape, w.dtype))
    v = momentum * v_ref[...] + grad + weight_decay * w
    v_out[...] = v
    w_out[...] = w - lr * v


def _kernel(b1_ref, vb1_ref, w2_ref, v2_ref, b2_ref, vb2_ref, db1_ref, dw2_ref, db2_ref, lr_ref,
            b1_out, vb1_out, w2_out, v2_out, b2_out, vb2_out, *, momentum: float, weight_decay: float):
    lr = lr_ref[0]
    _update(b1_ref, vb1_ref, db1_ref, lr, b1_out, vb1_out, momentum, weight_decay)
    _update(w2_ref, v2_ref, dw2_ref, lr, w2_out, v2_out, momentum, weight_decay)
    _update(b2_ref, vb2_ref, db2_ref, lr, b2_out, vb2_out, momentum, weight_decay)


@functools.partial(jax.jit, static_argnames=("momentum", "weight_decay", "num_warps", "interpret"),
                   donate_argnums=(0, 1, 2, 3, 4, 5))
def head_update(b1, vb1, w2, v2, b2, vb2, db1_parts, dw2_parts, db2_parts, lr, *, momentum: float,
                weight_decay: float, num_warps: int = 4, interpret: bool = False):
    """-> (b1, vb1, w2, v2, b2, vb2) updated, written over the (donated) inputs. lr: scalar or (1,) array.
    Every shape but the partials' leading P must be a power of two (the product's are: N = 128, Cp)."""
    whole = lambda a: pl.BlockSpec(a.shape, lambda i: (0,) * a.ndim)
    params = (b1, vb1, w2, v2, b2, vb2)
    lr = jnp.asarray(lr, b1.dtype).reshape(1)
    inputs = params + (db1_parts, dw2_parts, db2_parts, lr)
    return pl.pallas_call(
        functools.partial(_kernel, momentum=momentum, weight_decay=weight_decay),
        out_shape=tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in params),
        grid=(1,), in_specs=[whole(a) for a in inputs], out_specs=tuple(whole(a) for a in params),
        input_output_aliases={i: i for i in range(6)},
        compiler_params=triton_params(num_warps, 1), interpret=interpret, name="head_update",
    )(*inputs)


def head_update_reference(b1, vb1, w2, v2, b2, vb2, db1_parts, dw2_parts, db2_parts, lr, *, momentum: float,
                          weight_decay: float):
    out = []
    for w, v, parts in ((b1, vb1, db1_parts), (w2, v2, dw2_parts), (b2, vb2, db2_parts)):
        v = momentum * v + parts.sum(axis=0) + weight_decay * w
        out += [w - jnp.asarray(lr, w.dtype).reshape(()) * v, v]
    return tuple(out)
