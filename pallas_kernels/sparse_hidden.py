"""The hidden layer straight from the sparse batch (an "embedding bag"), forward and backward, no dense X.

A document touches ~0.1-1% of the 32,754 features, so reading a dense (B, 32768) X is mostly reading zeros.
Input: the flat batch of pipelines/batches.py, nonzeros laid end to end in row order (indices, values, rows,
each (cap,)), padding after the last document.

Forward, sparse_hidden_forward: grid over blocks of block_b documents. Program p owns documents
[p*block_b, (p+1)*block_b), whose nonzeros are the contiguous range offsets[p*block_b] .. offsets[(p+1)*block_b];
it walks that range in chunks of block_n nonzeros, gathers their W1 rows (block_n, H) and adds
S @ W1[idx] to its (block_b, H) accumulator, where S (block_b, block_n) holds each nonzero's value in its
document's row: a segment sum done as a small matmul (tensor cores, deterministic, no atomics). Bias and
sigmoid are fused into the store.

Backward, sparse_input_grad: dW1 = X^T dPre, by feature instead of by document. The wrapper sorts the
nonzeros by feature (one XLA sort of cap keys); program q owns W1 rows [q*block_k, (q+1)*block_k), walks the
nonzeros of those features, gathers the dPre rows of their documents and adds T @ dPre[rows] with T
(block_k, block_n) the one-hot-times-value matrix. Every block of dW1 is written exactly once (zeros where
no document has the feature), by one program: deterministic, no atomics, so the CPU interpret-mode tests check
the same code the GPU runs (array-indexed atomics lose repeated indices in interpret mode).
sparse_input_grad_update fuses W1's SGD-momentum update into the same pass (dW1 never reaches memory), and with
momentum 0 and no weight decay it skips the W1 blocks no document in the batch touches.

Loop lengths depend on the data (offsets loaded in the kernel), so a block holding a very frequent feature
takes longer than the others; chi-squared feature selection spreads frequent terms over the vocabulary.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.common import (
    PRECISIONS,
    accumulator_dtype,
    dot,
    next_power_of_two,
    pad_axis,
    require,
    require_blocks,
    round_up,
    triton_params,
)


def document_offsets(rows: jax.Array, n_rows: int) -> jax.Array:
    """(cap,) row of each slot -> (n_rows + 1,) start of each document's nonzeros. Padding slots repeat row 0
    after the real ones; a slot whose row is below an earlier slot's row is padding and counts for no row."""
    real = jnp.where(rows < lax.cummax(rows), n_rows, rows)
    return jnp.searchsorted(real, jnp.arange(n_rows + 1, dtype=rows.dtype), side="left").astype(jnp.int32)


# Eleven arguments: the sorted keys, gather, value and source refs, the segment's range and the output block's width.
def _segment_sum_range(
    keys_ref,
    gather_ref,
    val_ref,
    source_ref,
    first: int,
    start,
    end,
    n_out: int,
    block_n: int,
    precision: str,
    acc_dtype,
):
    """sum over the nonzeros j in [start, end) of value_j * source[gather_j] into output row keys_j - first:
    (n_out, H). Walked in chunks of block_n; each chunk is one (n_out, block_n) one-hot-times-value matrix
    times the (block_n, H) gathered source rows (a segment sum on the tensor cores)."""
    local = lax.broadcasted_iota(jnp.int32, (n_out, block_n), 0)
    lane = lax.broadcasted_iota(jnp.int32, (n_out, block_n), 1)

    def chunk(i, acc):
        pos = start + i * block_n
        keys = keys_ref[pl.ds(pos, block_n)]
        values = val_ref[pl.ds(pos, block_n)]
        rows = source_ref[gather_ref[pl.ds(pos, block_n)], :]  # (block_n, H)
        mine = (keys[None, :] - first == local) & (pos + lane < end)
        weights = jnp.where(mine, values[None, :].astype(rows.dtype), jnp.zeros((), rows.dtype))
        return acc + dot(weights, rows, precision)

    n_chunks = (end - start + block_n - 1) // block_n
    return lax.fori_loop(0, n_chunks, chunk, jnp.zeros((n_out, source_ref.shape[1]), acc_dtype))


# Ten arguments: the batch's offsets, indices, values and rows, W1 and b1 in, the hidden units out, then tiling and
# precision.
def _forward_kernel(
    offsets_ref, idx_ref, val_ref, row_ref, w1_ref, b1_ref, h_ref, *, block_b: int, block_n: int, precision: str
):
    first = pl.program_id(0) * block_b
    start, end = offsets_ref[first], offsets_ref[first + block_b]
    acc_dtype = accumulator_dtype(w1_ref.dtype)
    # Keys: each nonzero's document; gathered: its W1 row.
    acc = _segment_sum_range(
        row_ref, idx_ref, val_ref, w1_ref, first, start, end, block_b, block_n, precision, acc_dtype
    )
    h_ref[...] = jax.nn.sigmoid(acc + b1_ref[...].astype(acc_dtype)).astype(h_ref.dtype)


def _pad_flat(indices, values, rows, block_n: int):
    """Room for a full chunk read past the last nonzero, and a power-of-two length (Triton)."""
    size = next_power_of_two(indices.shape[0] + block_n)
    return pad_axis(indices, 0, size), pad_axis(values, 0, size), pad_axis(rows, 0, size)


@dataclass(frozen=True)
class SparseForwardBlocks:
    """sparse_hidden_forward's launch: documents per program, nonzeros per chunk, Triton warps and stages."""

    block_b: int = 16
    block_n: int = 64
    num_warps: int = 4
    num_stages: int = 2


# Nine arguments: the sparse batch (indices, values, rows), W1, b1 and its size, then tiling, precision, interpret.
@functools.partial(jax.jit, static_argnames=("batch_size", "block_sizes", "precision", "interpret"))
def sparse_hidden_forward(
    indices,
    values,
    rows,
    w1,
    b1,
    *,
    batch_size: int,
    block_sizes: SparseForwardBlocks = SparseForwardBlocks(),
    precision: str = "default",
    interpret: bool = False,
) -> jax.Array:
    """sigmoid(X @ W1 + b1) -> (batch_size, H) from the flat sparse batch (indices, values, rows: (cap,))."""
    block_b, block_n, num_warps, num_stages = (
        block_sizes.block_b,
        block_sizes.block_n,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    require(
        "sparse_hidden_forward",
        indices.ndim == 1
        and values.shape == rows.shape == indices.shape
        and w1.ndim == 2
        and b1.shape == (w1.shape[1],)
        and batch_size > 0,
        "indices, values, rows (cap,), w1 (F, H), b1 (H,), batch_size > 0",
        indices=indices,
        values=values,
        rows=rows,
        w1=w1,
        b1=b1,
    )
    require_blocks("sparse_hidden_forward", block_b=block_b, block_n=block_n)
    padded_b = round_up(batch_size, block_b)
    offsets = document_offsets(rows, padded_b)
    offsets = pad_axis(offsets, 0, next_power_of_two(padded_b + 1), value=0)
    indices, values, rows = _pad_flat(indices, values, rows, block_n)
    hidden = w1.shape[1]
    h = pl.pallas_call(
        functools.partial(_forward_kernel, block_b=block_b, block_n=block_n, precision=precision),
        out_shape=jax.ShapeDtypeStruct((padded_b, hidden), w1.dtype),
        grid=(padded_b // block_b,),
        in_specs=[_whole(offsets), _whole(indices), _whole(values), _whole(rows), _whole(w1), _whole(b1)],
        out_specs=pl.BlockSpec((block_b, hidden), lambda p: (p, 0)),
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name="sparse_hidden_forward",
    )(offsets, indices, values, rows, w1, b1)
    return h[:batch_size]


def _by_feature(indices, values, rows, n_features: int, block_k: int, block_n: int):
    """Sort the nonzeros by feature; (n_features / block_k + 1,) start of each block of block_k features.
    Slots holding 0 (the batch's padding: index 0, value 0) sort last, past every block: left at feature 0 they
    would all fall to the first block's program, which then walked the whole padding alone (a news4 batch of
    4,096 documents has ~157,000 padding slots)."""
    keys = jnp.where(values != 0, indices, n_features)
    order = jnp.argsort(keys)
    f_idx, f_val, f_row = keys[order], values[order], rows[order]
    bounds = jnp.arange(0, n_features + 1, block_k, dtype=indices.dtype)
    starts = jnp.searchsorted(f_idx, bounds, side="left").astype(jnp.int32)
    starts = pad_axis(starts, 0, next_power_of_two(starts.shape[0]))
    return (starts, *_pad_flat(f_idx, f_val, f_row, block_n))


# Nine arguments: the sorted batch's starts, indices, values and rows, the pre-activation gradient, then tiling and
# accumulator type.
def _accumulate_grad(
    starts_ref, idx_ref, val_ref, row_ref, dpre_ref, block_k: int, block_n: int, precision: str, acc_dtype
):
    block = pl.program_id(0)
    start, end = starts_ref[block], starts_ref[block + 1]
    # Keys: each nonzero's feature; gathered: its document's dPre row.
    acc = _segment_sum_range(
        idx_ref, row_ref, val_ref, dpre_ref, block * block_k, start, end, block_k, block_n, precision, acc_dtype
    )
    return acc, end > start


# Nine arguments: _accumulate_grad's refs with dW1 out, then tiling and precision.
def _grad_kernel(starts_ref, idx_ref, val_ref, row_ref, dpre_ref, dw_ref, *, block_k, block_n, precision):
    acc, _ = _accumulate_grad(
        starts_ref, idx_ref, val_ref, row_ref, dpre_ref, block_k, block_n, precision, accumulator_dtype(dw_ref.dtype)
    )
    dw_ref[...] = acc.astype(dw_ref.dtype)


# Fifteen arguments: _grad_kernel's inputs with W1, its momentum and rate, W1 and momentum out, then tiling and SGD
# constants.
def _grad_update_kernel(
    starts_ref,
    idx_ref,
    val_ref,
    row_ref,
    dpre_ref,
    w_ref,
    v_ref,
    lr_ref,
    w_out,
    v_out,
    *,
    block_k,
    block_n,
    precision,
    momentum,
    weight_decay,
):
    grad, touched = _accumulate_grad(
        starts_ref, idx_ref, val_ref, row_ref, dpre_ref, block_k, block_n, precision, accumulator_dtype(w_ref.dtype)
    )

    def update():
        w = w_ref[...]
        v = momentum * v_ref[...] + grad.astype(w.dtype) + weight_decay * w
        v_out[...] = v
        w_out[...] = w - lr_ref[0].astype(w.dtype) * v

    if momentum == 0 and weight_decay == 0:
        # Plain SGD: a W1 block no document touches keeps its value (the output aliases the input).
        pl.when(touched)(update)
    else:
        update()


def _whole(a) -> pl.BlockSpec:
    """The whole array in every program (the kernels index into it themselves)."""
    return pl.BlockSpec(a.shape, lambda p: (0,) * a.ndim)


def _grad_specs(starts, f_idx, dpre):
    return [_whole(starts), _whole(f_idx), _whole(f_idx), _whole(f_idx), _whole(dpre)]


@dataclass(frozen=True)
class SparseGradBlocks:
    """The sparse X^T @ dPre kernels' launch: W1 rows per program, nonzeros per chunk, Triton warps and stages."""

    block_k: int = 64
    block_n: int = 64
    num_warps: int = 4
    num_stages: int = 2


@functools.partial(jax.jit, static_argnames=("n_features", "block_sizes", "precision", "interpret"))
def sparse_input_grad(
    indices,
    values,
    rows,
    dpre,
    *,
    n_features: int,
    block_sizes: SparseGradBlocks = SparseGradBlocks(),
    precision: str = "default",
    interpret: bool = False,
) -> jax.Array:
    """X^T @ dPre -> (n_features, H) from the flat sparse batch; n_features a multiple of block_k."""
    block_k, block_n, num_warps, num_stages = (
        block_sizes.block_k,
        block_sizes.block_n,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    require(
        "sparse_input_grad",
        indices.ndim == 1
        and values.shape == rows.shape == indices.shape
        and dpre.ndim == 2
        and n_features > 0
        and n_features % block_k == 0,
        f"indices, values, rows (cap,), dpre (B, H), n_features ({n_features}) a multiple of block_k ({block_k})",
        indices=indices,
        values=values,
        rows=rows,
        dpre=dpre,
    )
    require_blocks("sparse_input_grad", block_k=block_k, block_n=block_n)
    starts, f_idx, f_val, f_row = _by_feature(indices, values, rows, n_features, block_k, block_n)
    dpre = pad_axis(dpre, 0, next_power_of_two(dpre.shape[0]))
    return pl.pallas_call(
        functools.partial(_grad_kernel, block_k=block_k, block_n=block_n, precision=precision),
        out_shape=jax.ShapeDtypeStruct((n_features, dpre.shape[1]), dpre.dtype),
        grid=(n_features // block_k,),
        in_specs=_grad_specs(starts, f_idx, dpre),
        out_specs=pl.BlockSpec((block_k, dpre.shape[1]), lambda q: (q, 0)),
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name="sparse_input_grad",
    )(starts, f_idx, f_val, f_row, dpre)


# Twelve arguments: the sparse batch, pre-activation gradient, W1, momentum and rate, SGD's constants, then tiling,
# precision, interpret.
@functools.partial(
    jax.jit,
    static_argnames=("momentum", "weight_decay", "block_sizes", "precision", "interpret"),
    donate_argnums=(4, 5),
)
def sparse_input_grad_update(
    indices,
    values,
    rows,
    dpre,
    w,
    v,
    lr,
    *,
    momentum: float,
    weight_decay: float,
    block_sizes: SparseGradBlocks = SparseGradBlocks(),
    precision: str = "default",
    interpret: bool = False,
):
    """SGD-momentum step of W1 with dW1 = X^T @ dPre computed on the fly from the sparse batch, in place."""
    block_k, block_n, num_warps, num_stages = (
        block_sizes.block_k,
        block_sizes.block_n,
        block_sizes.num_warps,
        block_sizes.num_stages,
    )
    require(
        "sparse_input_grad_update",
        indices.ndim == 1
        and values.shape == rows.shape == indices.shape
        and dpre.ndim == 2
        and w.ndim == 2
        and w.shape[1] == dpre.shape[1]
        and v.shape == w.shape
        and w.shape[0] % block_k == 0,
        f"indices, values, rows (cap,), dpre (B, H), w and v (F, H) with F a multiple of block_k ({block_k})",
        indices=indices,
        values=values,
        rows=rows,
        dpre=dpre,
        w=w,
        v=v,
    )
    require_blocks("sparse_input_grad_update", block_k=block_k, block_n=block_n)
    n_features, hidden = w.shape
    starts, f_idx, f_val, f_row = _by_feature(indices, values, rows, n_features, block_k, block_n)
    dpre = pad_axis(dpre, 0, next_power_of_two(dpre.shape[0]))
    block = pl.BlockSpec((block_k, hidden), lambda q: (q, 0))
    return pl.pallas_call(
        functools.partial(
            _grad_update_kernel,
            block_k=block_k,
            block_n=block_n,
            precision=precision,
            momentum=momentum,
            weight_decay=weight_decay,
        ),
        out_shape=(jax.ShapeDtypeStruct(w.shape, w.dtype), jax.ShapeDtypeStruct(v.shape, v.dtype)),
        grid=(n_features // block_k,),
        in_specs=_grad_specs(starts, f_idx, dpre) + [block, block, pl.BlockSpec((1,), lambda q: (0,))],
        out_specs=(block, block),
        input_output_aliases={5: 0, 6: 1},
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name="sparse_input_grad_update",
    )(starts, f_idx, f_val, f_row, dpre, w, v, jnp.asarray(lr, w.dtype).reshape(1))


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6))
def sparse_hidden(w1, b1, indices, values, rows, batch_size: int, kernel: tuple):
    """Differentiable (in w1, b1) sparse hidden layer; kernel = (SparseForwardBlocks, SparseGradBlocks: dW1,
    precision, interpret)."""
    forward_blocks, _, precision, interpret = kernel
    return sparse_hidden_forward(
        indices,
        values,
        rows,
        w1,
        b1,
        batch_size=batch_size,
        block_sizes=forward_blocks,
        precision=precision,
        interpret=interpret,
    )


def _sparse_hidden_fwd(w1, b1, indices, values, rows, batch_size, kernel):
    h = sparse_hidden(w1, b1, indices, values, rows, batch_size, kernel)
    return h, (indices, values, rows, h, w1.shape[0])


def _sparse_hidden_bwd(batch_size, kernel, residuals, dh):
    indices, values, rows, h, n_features = residuals
    _, grad_blocks, precision, interpret = kernel
    dpre = dh * h * (1 - h)
    dw1 = sparse_input_grad(
        indices,
        values,
        rows,
        dpre,
        n_features=n_features,
        block_sizes=grad_blocks,
        precision=precision,
        interpret=interpret,
    )
    return dw1, jnp.sum(dpre, axis=0), None, None, None


sparse_hidden.defvjp(_sparse_hidden_fwd, _sparse_hidden_bwd)


def sparse_hidden_reference(w1, b1, indices, values, rows, batch_size: int, precision: str = "default"):
    """Plain JAX: gather + segment sum (what the XLA backend does), differentiable by jax.grad."""
    del precision  # no matmul here
    pre = jax.ops.segment_sum(w1[indices] * values[:, None].astype(w1.dtype), rows, num_segments=batch_size)
    return jax.nn.sigmoid(pre + b1)


def sparse_input_grad_reference(indices, values, rows, dpre, n_features: int, precision: str = "default"):
    dense = jnp.zeros((dpre.shape[0], n_features), dpre.dtype).at[rows, indices].add(values.astype(dpre.dtype))
    return jnp.dot(dense.T, dpre, precision=PRECISIONS[precision])
