"""The model search's W1 update: dW1 = X^T @ dPre fused with Adam, for K networks side by side, each with its own
learning rate and weight decay (textclf/training/steps/stacked.py trains them as one (F, K*H) first layer).

Shapes: X (M, F) the batch as dense rows (F = input columns), dPre (M, N) the gradient of the loss w.r.t. the
pre-activations of the N = K*H hidden units; W1 and its Adam moments (F, N); rates, decays (N,) (network k's
value repeated over its H columns); scalars (4,) = [1 - beta1^t, 1 - beta2^t, live, 0]: live 0 leaves W1 and
its moments as they are (a padding batch of a fixed-shape epoch: deciding it here, not by selecting between
old and new arrays afterwards, keeps W1 updated in place, where a select would make XLA copy all three first).

Why a kernel: XLA writes the (F, N) gradient to memory and reads it back in the Adam update (its step makes 9
passes over an (F, N) array: read W1 forward, write dW1, read dW1/W1/m/v, write W1/m/v); here each program
computes a (block_f, block_n) tile of dW1 in registers and updates its tile of W1, m and v in place: 6 passes
plus the forward's one. At K*H = 768-1024 columns the step is bound by those passes, not by the products.

Grid: (N / block_n, F / (sub_tiles * block_f)), column blocks varying fastest, so the N / block_n programs that
read the same (M, sub_tiles * block_f) slab of X run together and find it in L2 (X is read about once: at
B = 1,024 and fp32 it is 134 MB, as large as W1 for K = 8). A program updates sub_tiles (block_f, block_n) tiles
of W1 with grad (block_f, block_n) = X[:, f-block]^T @ dPre[:, n-block]. A batch of one block_m chunk (the
search's 64 rows): dPre's block is loaded once and the tiles are done one after another, in a loop that Triton
pipelines num_stages deep (the next tile's W1, m and v read while this one is computed). Several chunks: a GEMM's
loop order, every tile's gradient accumulated chunk by chunk (each chunk's dPre read once for all of them), then
the tiles updated one by one. The batch may be read as columns (`columns`: the wrapper hands the kernel x^T
(F, M) and dpre^T (N, M)): the gradient's product then contracts two operands that both run along the rows, the
order TF32 tensor-core products take; as rows, Triton's product of two row-major operands contracted over their rows was
the slowest part (on an H200, K = 8,
F = 8,192: the step at B = 256 1.12x -> 0.87x XLA's, at 1,024 1.55x -> 1.18x, one call; at B = 64 the rows stay
faster). At 1,024 the step is still above XLA's (textclf/training/steps/stacked.py FUSED_MAX_BATCH). W1's
and its moments' loads and stores may be marked evict-first (each byte is used once) so that L2 keeps X and dPre,
which every program re-reads. No program touches another's tile: no races. Measured (BENCHMARKS.md, "The model
search's K-network step", each against XLA's step in the same call): at B = 64 the step went from 0.87-0.93x to
0.79-0.80x XLA's time on an H200 (one 32 x 128 tile a program, 4 warps, 2 stages -> 8 tiles of 16 x 128,
evict-first), and from 0.78-0.81x to 0.66-0.69x on an H100 with these defaults.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from pallas_kernels.adam_update import adam_step
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

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8  # textclf.models.mlp's Adam constants


def _kernel(
    x_ref,
    dpre_ref,
    w_ref,
    m_ref,
    v_ref,
    rate_ref,
    decay_ref,
    s_ref,
    w_out,
    m_out,
    v_out,
    *,
    block_m: int,
    block_f: int,
    precision: str,
    stream: str | None,
    columns: bool,
):
    # x_ref: (M, S*block_f)  dpre_ref: (M, block_n), or as columns (S*block_f, M) and (block_n, M)
    # w/m/v: (S*block_f, block_n)  rate/decay: (block_n,)  s_ref: (4,)
    # The program updates S sub-tiles of (block_f, block_n); each one's W1, m and v are read and written once
    # (stream: their loads' and stores' L2 eviction policy, so that the re-read X and dPre stay).
    rows_total = x_ref.shape[1] if columns else x_ref.shape[0]
    block_n = w_ref.shape[1]
    sub_tiles = w_ref.shape[0] // block_f
    # Scalar loads from the ref: slicing a loaded array has no Triton lowering.
    c1, c2, live = s_ref[0], s_ref[1], s_ref[2] > 0
    rate, decay = rate_ref[...][None, :], decay_ref[...][None, :]

    def update(sub, grad):
        """Adam with coupled L2 (textclf.training.steps.optimizers.adam's update) on sub-tile `sub`, each column with
        its network's rate and decay."""
        tile = (pl.ds(sub * block_f, block_f), slice(None))
        w = pltriton.load(w_ref.at[tile], eviction_policy=stream)
        m_old = pltriton.load(m_ref.at[tile], eviction_policy=stream)
        v_old = pltriton.load(v_ref.at[tile], eviction_policy=stream)
        new_w, m, v = adam_step(w, m_old, v_old, grad, rate, c1, c2, weight_decay=decay)
        pltriton.store(w_out.at[tile], jnp.where(live, new_w, w), eviction_policy=stream)
        pltriton.store(m_out.at[tile], jnp.where(live, m, m_old), eviction_policy=stream)
        pltriton.store(v_out.at[tile], jnp.where(live, v, v_old), eviction_policy=stream)

    def product(sub, rows, dpre):
        # (block_f, block_n): X's rows `rows` of sub-tile `sub`'s columns, transposed, times dpre (those rows).
        if columns:  # x_ref (S*block_f, M), dpre (block_n, rows): both operands contiguous along the summed rows
            return dot(x_ref[pl.ds(sub * block_f, block_f), rows], dpre, precision, contract=((1,), (1,)))
        return dot(x_ref[rows, pl.ds(sub * block_f, block_f)], dpre, precision, contract=((0,), (0,)))

    if rows_total == block_m:
        # One chunk of rows (a search's batch of 64): dPre loaded once, the sub-tiles one after another in a loop
        # that Triton pipelines (the next sub-tile's W1, m and v read while this one is computed).
        dpre = dpre_ref[...]

        def sub_tile(sub, carry):
            update(sub, product(sub, slice(None), dpre))
            return carry

        lax.fori_loop(0, sub_tiles, sub_tile, 0)
        return

    # Several chunks: a GEMM's loop order, each chunk's dPre rows read once for all the sub-tiles' gradients (S
    # accumulators of (block_f, block_n)), then the updates one sub-tile at a time (a whole (S*block_f, block_n)
    # tile of W1, m and v at once would not fit in registers).
    def chunk(step, grads):
        rows = pl.ds(step * block_m, block_m)
        dpre = dpre_ref[:, rows] if columns else dpre_ref[rows, :]
        return tuple(grad + product(sub, rows, dpre) for sub, grad in enumerate(grads))

    start = tuple(jnp.zeros((block_f, block_n), accumulator_dtype(w_ref.dtype)) for _ in range(sub_tiles))
    for sub, grad in enumerate(lax.fori_loop(0, rows_total // block_m, chunk, start)):
        update(sub, grad)


@dataclass(frozen=True)
class StackedInputAdamBlocks:
    """stacked_input_adam's launch: batch rows summed per step, W1 rows and columns per sub-tile, sub-tiles per
    program (one after another), Triton warps and stages, and the L2 eviction policy of W1's and its moments'
    loads and stores ("evict_first": read once, written once; None: the default)."""

    # The fastest at the search's shapes (batches of 64) on an H200 and an H100 (the search's step uses them there;
    # for batches of several chunks it replaces some: textclf.training.steps.stacked.FUSED_CHUNKED_BLOCKS).
    block_m: int = 64
    block_f: int = 16
    block_n: int = 128
    num_warps: int = 4
    num_stages: int = 3
    sub_tiles: int = 8
    stream: str | None = "evict_first"
    # The kernel reads the batch as columns (x^T (F, M) and dpre^T (N, M), transposed by the wrapper) instead of
    # rows: both of the gradient product's operands then run along the summed rows, as TF32 tensor-core products
    # take them.
    columns: bool = False


# Eleven arguments: the batch, pre-activation gradient, stacked W1 and moments, per-network rates and decays, scalars,
# then tiling, precision, interpret.
@functools.partial(jax.jit, static_argnames=("block_sizes", "precision", "interpret"), donate_argnums=(2, 3, 4))
def stacked_input_adam(
    x,
    dpre,
    w,
    m,
    v,
    rates,
    decays,
    scalars,
    *,
    block_sizes: StackedInputAdamBlocks = StackedInputAdamBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """One Adam step of the stacked first layer with dW1 = x^T @ dpre computed on the fly -> (new w, new m, new v),
    written over w, m and v (donated). x (M, F), dpre (M, N); F must be a multiple of block_f x sub_tiles and N of
    block_n; M is padded to block_m (zero rows add nothing to the product). With block_sizes.columns the kernel is
    handed both transposed (XLA transposes them inside the caller's program)."""
    block_m, block_f, block_n, num_warps, num_stages, sub_tiles = (
        block_sizes.block_m,
        block_sizes.block_f,
        block_sizes.block_n,
        block_sizes.num_warps,
        block_sizes.num_stages,
        block_sizes.sub_tiles,
    )
    columns = block_sizes.columns
    rows_per_program = block_f * sub_tiles
    require(
        "stacked_input_adam",
        x.ndim == 2
        and dpre.ndim == 2
        and x.shape[0] == dpre.shape[0]
        and w.shape == m.shape == v.shape == (x.shape[1], dpre.shape[1])
        and rates.shape == decays.shape == (dpre.shape[1],)
        and scalars.shape == (4,)
        and x.shape[1] % rows_per_program == 0
        and dpre.shape[1] % block_n == 0,
        f"x (M, F) with F a multiple of block_f x sub_tiles ({rows_per_program}), dpre (M, N) with N a multiple "
        f"of block_n ({block_n}), w, m, v (F, N), rates and decays (N,), scalars (4,)",
        x=x,
        dpre=dpre,
        w=w,
        m=m,
        v=v,
        rates=rates,
        decays=decays,
        scalars=scalars,
    )
    require_blocks("stacked_input_adam", block_m=block_m, block_f=block_f, block_n=block_n)
    features, n = w.shape
    padded_m = round_up(x.shape[0], block_m)
    x, dpre = pad_axis(x, 0, padded_m), pad_axis(narrowed(dpre, x), 0, padded_m)
    tile = pl.BlockSpec((rows_per_program, block_n), lambda j, i: (i, j))
    column = pl.BlockSpec((block_n,), lambda j, i: (j,))
    if columns:
        x, dpre = x.T, dpre.T  # (F, M), (N, M)
        x_spec = pl.BlockSpec((rows_per_program, padded_m), lambda j, i: (i, 0))
        dpre_spec = pl.BlockSpec((block_n, padded_m), lambda j, i: (j, 0))
    else:
        x_spec = pl.BlockSpec((padded_m, rows_per_program), lambda j, i: (0, i))
        dpre_spec = pl.BlockSpec((padded_m, block_n), lambda j, i: (0, j))
    return pl.pallas_call(
        functools.partial(
            _kernel, block_m=block_m, block_f=block_f, precision=precision, stream=block_sizes.stream, columns=columns
        ),
        out_shape=tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in (w, m, v)),
        grid=(n // block_n, features // rows_per_program),
        in_specs=[x_spec, dpre_spec, tile, tile, tile, column, column, pl.BlockSpec((4,), lambda j, i: (0,))],
        out_specs=(tile, tile, tile),
        input_output_aliases={2: 0, 3: 1, 4: 2},
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name="stacked_input_adam",
    )(x, dpre, w, m, v, rates.astype(w.dtype), decays.astype(w.dtype), scalars.astype(w.dtype))


# Nine arguments: stacked_input_adam's operands and precision, without its tiling.
def stacked_input_adam_reference(x, dpre, w, m, v, rates, decays, scalars, precision: str = "default"):
    """Plain JAX: the gradient as one product, then textclf.training.steps.optimizers.adam's update with per-column
    rates."""
    grad = jnp.dot(x.astype(w.dtype).T, dpre.astype(w.dtype), precision=PRECISIONS[precision]) + decays[None, :] * w
    new_m = BETA1 * m + (1 - BETA1) * grad
    new_v = BETA2 * v + (1 - BETA2) * grad * grad
    new_w = w - rates[None, :] * (new_m / scalars[0]) / (jnp.sqrt(new_v / scalars[1]) + EPS)
    live = scalars[2] > 0
    return tuple(jnp.where(live, new, old) for new, old in ((new_w, w), (new_m, m), (new_v, v)))
