"""The hidden layer from the "pieces" layout: each document's nonzeros cut into fixed-width rows.

Layout (textclf/training/device_data.py, gather_piece_batches): indices, values (cap, width) and piece_rows (cap,), the
pieces of a minibatch's documents laid end to end, a document's pieces adjacent and piece_rows ascending.

Forward, pieces_gather_sum: grid over blocks of block_p pieces; program p walks the `width` slot columns of
its pieces (a static loop), gathering one W1 row per piece and slot, (block_p, H), and accumulating
value * row in fp32. Every program does the same work (width gathers), whatever the documents' lengths: the
flat-batch kernel (sparse_hidden.py) gave each program whole documents, so a program holding long documents
walked many chunks while others idled. The transposed (width, cap) index and value arrays make each column a
contiguous load. The few pieces of each document are then summed by a sorted segment sum, and bias + sigmoid
applied in the same XLA fusion.

Backward: dW1 = sum over slots of value * dPre[row of the piece] scattered into the slot's W1 row (XLA's
scatter-add; padding slots dropped), db1 = sum of dPre.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from pallas_kernels.common import accumulator_dtype, pad_axis, require, require_blocks, round_up, triton_params


def _gather_sum_kernel(idx_ref, val_ref, w1_ref, out_ref, *, width: int):
    # idx_ref, val_ref: (width, block_p) this program's pieces, slot-major; w1_ref: (F, H) whole; out: (block_p, H)
    acc_dtype = accumulator_dtype(out_ref.dtype)
    acc = jnp.zeros(out_ref.shape, acc_dtype)
    last = w1_ref.shape[0] - 1
    for slot in range(width):  # static: width is small (16) and every iteration is independent
        # Padding slots (value 0) may name a row past the end: read the last row instead (times 0).
        rows = w1_ref[jnp.minimum(idx_ref[slot, :], last), :].astype(acc_dtype)  # (block_p, H) gathered W1 rows
        acc += val_ref[slot, :].astype(acc_dtype)[:, None] * rows
    out_ref[...] = acc.astype(out_ref.dtype)


@dataclass(frozen=True)
class PiecesBlocks:
    """pieces_gather_sum's launch: pieces per program, Triton warps and stages."""

    block_p: int = 64
    num_warps: int = 4
    num_stages: int = 2


@functools.partial(jax.jit, static_argnames=("block_sizes", "interpret"))
def pieces_gather_sum(
    indices, values, w1, *, block_sizes: PiecesBlocks = PiecesBlocks(), interpret: bool = False
) -> jax.Array:
    """(cap, width) indices and values, (F, H) W1 -> (cap, H) per-piece sums of value * W1[index], in the
    accumulator dtype (fp32; fp64 for fp64 inputs). cap is padded to a multiple of block_p (power of two)."""
    block_p, num_warps, num_stages = block_sizes.block_p, block_sizes.num_warps, block_sizes.num_stages
    require(
        "pieces_gather_sum",
        indices.ndim == 2 and values.shape == indices.shape and w1.ndim == 2,
        "indices and values (cap, width), w1 (F, H)",
        indices=indices,
        values=values,
        w1=w1,
    )
    require_blocks("pieces_gather_sum", block_p=block_p)
    cap, width = indices.shape
    padded = round_up(cap, block_p)
    # Padding pieces: index 0, value 0 (adds nothing).
    idx_t = pad_axis(indices, 0, padded).T  # (width, padded)
    val_t = pad_axis(values.astype(w1.dtype), 0, padded).T
    hidden = w1.shape[1]
    out = pl.pallas_call(
        functools.partial(_gather_sum_kernel, width=width),
        out_shape=jax.ShapeDtypeStruct((padded, hidden), accumulator_dtype(w1.dtype)),
        grid=(padded // block_p,),
        in_specs=[
            pl.BlockSpec((width, block_p), lambda p: (0, p)),
            pl.BlockSpec((width, block_p), lambda p: (0, p)),
            pl.BlockSpec(w1.shape, lambda p: (0, 0)),
        ],
        out_specs=pl.BlockSpec((block_p, hidden), lambda p: (p, 0)),
        compiler_params=triton_params(num_warps, num_stages),
        interpret=interpret,
        name="pieces_gather_sum",
    )(idx_t, val_t, w1)
    return out[:cap]


def finish_hidden(per_piece, b1, piece_rows, batch_size: int):
    """(cap, H) per-piece sums -> (B, H) sigmoid activations (one XLA fusion)."""
    pre = jax.ops.segment_sum(per_piece, piece_rows, num_segments=batch_size, indices_are_sorted=True)
    return jax.nn.sigmoid(pre + b1.astype(pre.dtype)).astype(b1.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6))
def pieces_hidden(w1, b1, indices, values, piece_rows, batch_size: int, kernel: tuple):
    """Differentiable (in w1, b1) hidden layer from the pieces layout; kernel = (PiecesBlocks, interpret)."""
    block_sizes, interpret = kernel
    per_piece = pieces_gather_sum(indices, values, w1, block_sizes=block_sizes, interpret=interpret)
    return finish_hidden(per_piece, b1, piece_rows, batch_size)


def _pieces_hidden_fwd(w1, b1, indices, values, piece_rows, batch_size, kernel):
    h = pieces_hidden(w1, b1, indices, values, piece_rows, batch_size, kernel)
    return h, (indices, values, piece_rows, h, w1.shape[0])


def pieces_input_grad(indices, values, piece_rows, dpre, n_features: int) -> jax.Array:
    """dW1 = X^T dPre from the pieces layout: (F, H), by XLA's scatter-add. Padding slots (value 0) are sent
    out of range and dropped: added as zeros they would pile onto whatever row they name."""
    per_slot = values[..., None].astype(dpre.dtype) * dpre[piece_rows][:, None, :]  # (cap, width, H)
    indices = jnp.where(values != 0, indices, n_features)
    return jnp.zeros((n_features, dpre.shape[1]), dpre.dtype).at[indices].add(per_slot, mode="drop")


def _pieces_hidden_bwd(batch_size, kernel, residuals, dh):
    indices, values, piece_rows, h, n_features = residuals
    dpre = dh * h * (1 - h)
    return pieces_input_grad(indices, values, piece_rows, dpre, n_features), jnp.sum(dpre, axis=0), None, None, None


pieces_hidden.defvjp(_pieces_hidden_fwd, _pieces_hidden_bwd)


def pieces_gather_sum_reference(indices, values, w1) -> jax.Array:
    """Plain JAX: (cap, H) per-piece sums."""
    return jnp.sum(w1.at[indices].get(mode="fill", fill_value=0) * values[..., None].astype(w1.dtype), axis=1)


def pieces_hidden_reference(w1, b1, indices, values, piece_rows, batch_size: int) -> jax.Array:
    """Plain JAX (what the XLA backend computes), differentiable by jax.grad."""
    return finish_hidden(pieces_gather_sum_reference(indices, values, w1), b1, piece_rows, batch_size)
