"""Fused update of the small parameters b1, W2 and b2 from hidden_backward's per-block partial gradients, in one
launch and in place: SGD with momentum (head_update) or Adam (head_adam_update).

For each parameter: g = sum over p of partials[p], then the optimizer's step (the same math as sgd_update /
adam_update). hidden_backward_partials leaves one partial per block of rows; summing them here instead of in
XLA turns three reductions and three update launches into one program: at small batches the training step is
mostly short launches (BENCHMARKS.md, epoch profile).

Shapes: b1 (N,), W2 (N, Cp), b2 (Cp,); partials (P, N), (P, N, Cp), (P, Cp), P = number of row blocks.
All of it is ~P * 17 KB at N = 128, Cp = 16, so a single program handles it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.adam_update import adam_step, scalars_of
from pallas_kernels.common import require, triton_params
from pallas_kernels.sgd_update import sgd_step, sgd_update_reference


def _summed(parts_ref, like):
    return lax.fori_loop(
        0, parts_ref.shape[0], lambda p, acc: acc + parts_ref[p].astype(like.dtype), jnp.zeros(like.shape, like.dtype)
    )


def _sgd(w, state, grad, s_ref, *, momentum: float, weight_decay: float):
    w, v = sgd_step(w, state[0], grad, s_ref[0], momentum=momentum, weight_decay=weight_decay)
    return w, (v,)


def _adam(w, state, grad, s_ref, *, weight_decay: float):
    w, m, v = adam_step(w, state[0], state[1], grad, *scalars_of(s_ref), weight_decay=weight_decay)
    return w, (m, v)


def _kernel(*refs, n_state: int, rule):
    # refs: 3 groups (w, *state) in, 3 partials, scalars; then the 3 groups out.
    group = 1 + n_state
    ins, parts, s_ref, outs = (
        refs[: 3 * group],
        refs[3 * group : 3 * group + 3],
        refs[3 * group + 3],
        refs[-3 * group :],
    )
    for i in range(3):
        w = ins[i * group][...]
        state = [ref[...] for ref in ins[i * group + 1 : (i + 1) * group]]
        w, state = rule(w, state, _summed(parts[i], w), s_ref)
        for ref, value in zip(outs[i * group : (i + 1) * group], (w, *state)):
            ref[...] = value


def _call(groups, partials, scalars, rule, interpret: bool, name: str):
    (b1, *_), (w2, *_), (b2, *_) = groups
    db1_parts, dw2_parts, db2_parts = partials
    hidden, classes = w2.shape if w2.ndim == 2 else (-1, -1)
    parts = db1_parts.shape[0] if db1_parts.ndim == 2 else -1
    require(
        name,
        w2.ndim == 2
        and all(a.shape == g[0].shape for g in groups for a in g)
        and b1.shape == (hidden,)
        and b2.shape == (classes,)
        and db1_parts.shape == (parts, hidden)
        and dw2_parts.shape == (parts, hidden, classes)
        and db2_parts.shape == (parts, classes),
        "b1 (N,), w2 (N, C), b2 (C,) with their optimizer state alike, partials (P, N), (P, N, C), (P, C)",
        b1=b1,
        w2=w2,
        b2=b2,
        db1_parts=db1_parts,
        dw2_parts=dw2_parts,
        db2_parts=db2_parts,
    )
    flat = [a for g in groups for a in g]
    whole = lambda a: pl.BlockSpec(a.shape, lambda i: (0,) * a.ndim)
    inputs = flat + list(partials) + [scalars]
    return pl.pallas_call(
        functools.partial(_kernel, n_state=len(groups[0]) - 1, rule=rule),
        out_shape=tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in flat),
        grid=(1,),
        in_specs=[whole(a) for a in inputs],
        out_specs=tuple(whole(a) for a in flat),
        input_output_aliases={i: i for i in range(len(flat))},
        compiler_params=triton_params(4, 1),
        interpret=interpret,
        name=name,
    )(*inputs)


# Thirteen arguments: b1, W2, b2 and their momentum, the three gradients' per-block parts, then SGD's rate, momentum
# and decay.
@functools.partial(
    jax.jit, static_argnames=("momentum", "weight_decay", "interpret"), donate_argnums=(0, 1, 2, 3, 4, 5)
)
def head_update(
    b1,
    vb1,
    w2,
    v2,
    b2,
    vb2,
    db1_parts,
    dw2_parts,
    db2_parts,
    lr,
    *,
    momentum: float,
    weight_decay: float,
    interpret: bool = False,
):
    """SGD with momentum -> (b1, vb1, w2, v2, b2, vb2), written over the (donated) inputs. lr: scalar or (1,).
    Every shape but the partials' leading P must be a power of two (the product's are: N = 128, Cp)."""
    rule = functools.partial(_sgd, momentum=momentum, weight_decay=weight_decay)
    return _call(
        ((b1, vb1), (w2, v2), (b2, vb2)),
        (db1_parts, dw2_parts, db2_parts),
        jnp.asarray(lr, b1.dtype).reshape(1),
        rule,
        interpret,
        "head_update",
    )


# Fifteen arguments: b1, W2, b2 with both Adam moments, the gradients' per-block parts, Adam's scalars and decay.
@functools.partial(jax.jit, static_argnames=("weight_decay", "interpret"), donate_argnums=tuple(range(9)))
def head_adam_update(
    b1,
    mb1,
    vb1,
    w2,
    m2,
    v2,
    b2,
    mb2,
    vb2,
    db1_parts,
    dw2_parts,
    db2_parts,
    scalars,
    *,
    weight_decay: float,
    interpret: bool = False,
):
    """Adam -> (b1, mb1, vb1, w2, m2, v2, b2, mb2, vb2), in place. scalars: (4,) [lr, c1, c2, 0]."""
    rule = functools.partial(_adam, weight_decay=weight_decay)
    return _call(
        ((b1, mb1, vb1), (w2, m2, v2), (b2, mb2, vb2)),
        (db1_parts, dw2_parts, db2_parts),
        scalars.astype(b1.dtype),
        rule,
        interpret,
        "head_adam_update",
    )


# Twelve arguments: head_update's operands and constants, without its interpret flag.
def head_update_reference(
    b1, vb1, w2, v2, b2, vb2, db1_parts, dw2_parts, db2_parts, lr, *, momentum: float, weight_decay: float
):
    """sgd_update_reference on each parameter with its partials summed."""
    return tuple(
        a
        for w, v, parts in ((b1, vb1, db1_parts), (w2, v2, dw2_parts), (b2, vb2, db2_parts))
        for a in sgd_update_reference(w, v, parts.sum(axis=0), lr, momentum=momentum, weight_decay=weight_decay)
    )
