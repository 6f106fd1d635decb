"""dW1 = X^T @ dPre, the tall-and-skinny weight gradient of the hidden layer (K = 32768 x M x N = 128), and
the same product fused with the momentum update of W1 so dW1 never goes to memory.

Grid: one program per block of block_k rows of W1 (K / block_k programs: 256 at block_k = 128), each looping
over the batch in chunks of block_m rows: acc (block_k, N) += X[rows, cols]^T @ dPre[rows]. X is read once
in total. The fused variant then applies v <- m v + dW1 + wd w; w <- w - lr v to its own (block_k, N) block
of W1 and its momentum buffer, in place: one pass over W1 instead of three (write dW1, read dW1, update);
input_grad_adam_update does the same with the Adam update (two moment buffers).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.adam_update import adam_step, scalars_of
from pallas_kernels.common import PRECISIONS, dot, narrowed, pad_axis, require, require_blocks, round_up, triton_params
from pallas_kernels.sgd_update import sgd_step


def _accumulate(x_ref, dpre_ref, block_m: int, precision: str, acc_dtype):
    # x_ref: (M, block_k)  dpre_ref: (M, N) -> (block_k, N)
    m, block_k = x_ref.shape
    n = dpre_ref.shape[1]

    def body(step, acc):
        rows = pl.ds(step * block_m, block_m)
        return acc + dot(x_ref[rows, :], dpre_ref[rows, :], precision, contract=((0,), (0,)))

    return lax.fori_loop(0, m // block_m, body, jnp.zeros((block_k, n), acc_dtype))


def _grad_kernel(x_ref, dpre_ref, dw_ref, *, block_m: int, precision: str):
    dw_ref[...] = _accumulate(x_ref, dpre_ref, block_m, precision, dw_ref.dtype).astype(dw_ref.dtype)


# Eleven arguments: the batch, pre-activation gradient, W1, its momentum and rate refs, W1 and momentum out, then
# tiling and SGD constants.
def _grad_update_kernel(
    x_ref,
    dpre_ref,
    w_ref,
    v_ref,
    lr_ref,
    w_out,
    v_out,
    *,
    block_m: int,
    precision: str,
    momentum: float,
    weight_decay: float,
):
    w = w_ref[...]
    grad = _accumulate(x_ref, dpre_ref, block_m, precision, w.dtype)
    w_out[...], v_out[...] = sgd_step(w, v_ref[...], grad, lr_ref[0], momentum=momentum, weight_decay=weight_decay)


# Twelve arguments: the batch, pre-activation gradient, W1, both moments and the scalars in; W1 and moments out; tiling
# and decay.
def _grad_adam_kernel(
    x_ref,
    dpre_ref,
    w_ref,
    m_ref,
    v_ref,
    s_ref,
    w_out,
    m_out,
    v_out,
    *,
    block_m: int,
    precision: str,
    weight_decay: float,
):
    w = w_ref[...]
    grad = _accumulate(x_ref, dpre_ref, block_m, precision, w.dtype)
    w_out[...], m_out[...], v_out[...] = adam_step(
        w, m_ref[...], v_ref[...], grad, *scalars_of(s_ref), weight_decay=weight_decay
    )


def _specs(m: int, k: int, n: int, block_k: int):
    return [pl.BlockSpec((m, block_k), lambda j: (0, j)), pl.BlockSpec((m, n), lambda j: (0, 0))]


@dataclass(frozen=True)
class InputGradBlocks:
    """The X^T @ dPre kernels' launch (input_grad and the fused updates): rows of the batch summed per step, W1
    rows per program, Triton warps and stages."""

    block_m: int = 32
    block_k: int = 128
    num_warps: int = 4
    num_stages: int = 3


@functools.partial(jax.jit, static_argnames=("block_sizes", "precision", "interpret"))
def input_grad(
    x, dpre, *, block_sizes: InputGradBlocks = InputGradBlocks(), precision: str = "default", interpret: bool = False
) -> jax.Array:
    """X^T @ dPre -> (K, N) in dPre's dtype. X (M, K) with K a multiple of block_k; M is padded to block_m."""
    block_m, block_k, num_warps, num_stages = (
        block_sizes.block_m,
        block_sizes.block_k,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    require(
        "input_grad",
        x.ndim == 2 and dpre.ndim == 2 and x.shape[0] == dpre.shape[0] and x.shape[1] % block_k == 0,
        f"x (M, K) with K a multiple of block_k ({block_k}), dpre (M, N)",
        x=x,
        dpre=dpre,
    )
    require_blocks("input_grad", block_m=block_m, block_k=block_k)
    m, k = x.shape
    n = dpre.shape[1]
    out_dtype = dpre.dtype
    padded_m = round_up(m, block_m)
    # bf16 X: dPre read as bf16 by each of the K / block_k programs (each reads all of it).
    x, dpre = pad_axis(x, 0, padded_m), pad_axis(narrowed(dpre, x), 0, padded_m)
    return pl.pallas_call(
        functools.partial(_grad_kernel, block_m=block_m, precision=precision),
        out_shape=jax.ShapeDtypeStruct((k, n), out_dtype),
        grid=(k // block_k,),
        in_specs=_specs(padded_m, k, n, block_k),
        out_specs=pl.BlockSpec((block_k, n), lambda j: (j, 0)),
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name="input_grad",
    )(x, dpre)


# Eleven arguments: the kernel to run, its batch, gradient, optimizer state and scalars, then its Triton launch
# settings and name.
def _fused_update(
    kernel,
    x,
    dpre,
    state,
    scalars,
    *,
    block_m: int,
    block_k: int,
    num_warps: int,
    num_stages: int,
    interpret: bool,
    name: str,
):
    """dW1 = X^T @ dPre computed inside an optimizer step: `state` (W1 and its optimizer buffers, (K, N) each)
    is updated in place, block_k rows per program; scalars: the step's (S,) lr / corrections."""
    k, n = x.shape[1], dpre.shape[1]
    padded_m = round_up(x.shape[0], block_m)
    x, dpre = pad_axis(x, 0, padded_m), pad_axis(narrowed(dpre, x), 0, padded_m)
    block = pl.BlockSpec((block_k, n), lambda j: (j, 0))
    return pl.pallas_call(
        kernel,
        out_shape=tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in state),
        grid=(k // block_k,),
        in_specs=_specs(padded_m, k, n, block_k) + [block] * len(state) + [pl.BlockSpec(scalars.shape, lambda j: (0,))],
        out_specs=(block,) * len(state),
        input_output_aliases={2 + i: i for i in range(len(state))},
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name=name,
    )(x, dpre, *state, scalars)


def _require_update(kernel: str, x, dpre, w, block_m: int, block_k: int, **state) -> None:
    """x (M, K), dpre (M, N), w and its optimizer state (K, N), K a multiple of block_k."""
    require(
        kernel,
        x.ndim == 2
        and dpre.ndim == 2
        and x.shape[0] == dpre.shape[0]
        and w.shape == (x.shape[1], dpre.shape[1])
        and all(a.shape == w.shape for a in state.values())
        and x.shape[1] % block_k == 0,
        f"x (M, K) with K a multiple of block_k ({block_k}), dpre (M, N), w and its state (K, N)",
        x=x,
        dpre=dpre,
        w=w,
        **state,
    )
    require_blocks(kernel, block_m=block_m, block_k=block_k)


# Ten arguments: the batch, pre-activation gradient, W1, its momentum and rate, SGD's constants, then tiling,
# precision, interpret.
@functools.partial(
    jax.jit,
    static_argnames=("momentum", "weight_decay", "block_sizes", "precision", "interpret"),
    donate_argnums=(2, 3),
)
def input_grad_update(
    x,
    dpre,
    w,
    v,
    lr,
    *,
    momentum: float,
    weight_decay: float,
    block_sizes: InputGradBlocks = InputGradBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """SGD-momentum step of W1 with dW1 = X^T @ dPre computed on the fly -> (new w, new v), in place."""
    block_m, block_k, num_warps, num_stages = (
        block_sizes.block_m,
        block_sizes.block_k,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    _require_update("input_grad_update", x, dpre, w, v=v, block_m=block_m, block_k=block_k)
    kernel = functools.partial(
        _grad_update_kernel, block_m=block_m, precision=precision, momentum=momentum, weight_decay=weight_decay
    )
    return _fused_update(
        kernel,
        x,
        dpre,
        (w, v),
        jnp.asarray(lr, w.dtype).reshape(1),
        block_m=block_m,
        block_k=block_k,
        num_warps=num_warps,
        num_stages=num_stages,
        interpret=interpret,
        name="input_grad_update",
    )


# Ten arguments: the batch, pre-activation gradient, W1 and both moments, Adam's scalars and decay, then tiling,
# precision, interpret.
@functools.partial(
    jax.jit, static_argnames=("weight_decay", "block_sizes", "precision", "interpret"), donate_argnums=(2, 3, 4)
)
def input_grad_adam_update(
    x,
    dpre,
    w,
    m,
    v,
    scalars,
    *,
    weight_decay: float,
    block_sizes: InputGradBlocks = InputGradBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """Adam step of W1 (pallas_kernels/adam_update.py) with dW1 = X^T @ dPre computed on the fly -> (new w,
    new m, new v), in place. scalars: (4,) [lr, c1, c2, 0]. Saves writing dW1 and reading it back (2 x 16 MB
    at the product's shape) and one launch per step."""
    block_m, block_k, num_warps, num_stages = (
        block_sizes.block_m,
        block_sizes.block_k,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    _require_update("input_grad_adam_update", x, dpre, w, m=m, v=v, block_m=block_m, block_k=block_k)
    kernel = functools.partial(_grad_adam_kernel, block_m=block_m, precision=precision, weight_decay=weight_decay)
    return _fused_update(
        kernel,
        x,
        dpre,
        (w, m, v),
        scalars.astype(w.dtype),
        block_m=block_m,
        block_k=block_k,
        num_warps=num_warps,
        num_stages=num_stages,
        interpret=interpret,
        name="input_grad_adam_update",
    )


def input_grad_reference(x, dpre, precision: str = "default"):
    prec = PRECISIONS[precision]
    return jnp.dot(x.astype(dpre.dtype).T, dpre, precision=prec)
