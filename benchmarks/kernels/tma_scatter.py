"""dW1's scatter-add against bulk TMA reduce-adds, on a news4-like pieces batch (Hopper GPUs only):

    python3 -m benchmarks.kernels.tma_scatter

XLA's side is the Pallas MLP step's dW1 (pallas_kernels/pieces_hidden.pieces_input_grad): each slot's value times
its document's dPre row, gathered and scatter-added into (F, 128) fp32 in one fusion, one fp32 atomic an element.
The TMA side sends one 128-wide row a slot to the same rows of dW1 with `cp.reduce.async.bulk.tensor ... .add.f32`
(Pallas Mosaic GPU `copy_smem_to_gmem(..., reduction_op="add")`), R slots a program, from rows already in shared
memory: no products, no loads of dPre, so it is a lower bound for a kernel that does the whole dW1 this way. Both
add into a carried matrix inside one jitted loop of LOOPS iterations, scaled by the iteration so that nothing is
hoisted out of it. Prints microseconds an iteration, twice. The batch: 4,096 documents of lognormal lengths (~88
nonzeros), features drawn with 1/rank frequencies, cut into pieces of 16 slots as device_data lays them out.
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

F, H, B, W = 32768, 128, 4096, 16  # features, hidden units, documents, slots a piece
R = 256  # slots a program (one TMA copy of their row numbers: at most 256)
LOOPS = 20


def pieces_batch(rng: np.random.Generator):
    """-> (indices, values (cap, W), piece_rows (cap,)), cap a multiple of R / W; padding slots name row F."""
    weights = 1.0 / np.arange(1, F + 1)
    weights /= weights.sum()
    ids = rng.permutation(F)
    lengths = np.clip(rng.lognormal(4.3, 0.6, B).astype(int), 5, 600)
    idx, val, rows = [], [], []
    for document, n in enumerate(lengths):
        features = np.sort(ids[rng.choice(F, n, replace=False, p=weights)])
        for start in range(0, len(features), W):
            chunk = features[start : start + W]
            piece_idx, piece_val = np.full(W, F, np.int32), np.zeros(W, np.float32)
            piece_idx[: len(chunk)], piece_val[: len(chunk)] = chunk, rng.uniform(0.05, 0.3, len(chunk))
            idx.append(piece_idx)
            val.append(piece_val)
            rows.append(document)
    pad = -len(idx) % (R // W)
    print(f"{lengths.sum():,} nonzeros, {len(idx) + pad:,} pieces, {(len(idx) + pad) * W:,} slots", flush=True)
    return (
        np.concatenate([np.stack(idx), np.full((pad, W), F, np.int32)]),
        np.concatenate([np.stack(val), np.zeros((pad, W), np.float32)]),
        np.concatenate([np.array(rows, np.int32), np.full(pad, B - 1, np.int32)]),
    )


def _reduce_adds(idx_gmem, src_gmem, _, out_gmem, idx_smem, src_smem, loaded):
    first = jax.lax.axis_index("programs") * R
    plgpu.copy_gmem_to_smem(idx_gmem.at[pl.ds(first, R)], idx_smem, loaded.at[0])
    plgpu.copy_gmem_to_smem(src_gmem, src_smem, loaded.at[0])
    plgpu.barrier_wait(loaded.at[0])

    @pl.loop(0, R)
    def _(slot):
        plgpu.copy_smem_to_gmem(
            src_smem.at[pl.ds(jax.lax.rem(slot, 16), 1)], out_gmem.at[pl.ds(idx_smem[slot], 1)], reduction_op="add"
        )

    plgpu.wait_smem_to_gmem(0)


def tma_reduce_adds(flat_idx, src, out):
    """out (F, H) + for each slot j: src[j % 16] into row flat_idx[j] (rows past F dropped by the copy engine)."""
    # plgpu.kernel takes no input_output_aliases in jax 0.11.2, and the reduce-adds must sum into `out`.
    from jax._src.pallas.mpmd import _mpmd_map

    scratch = [
        plgpu.SMEM((R,), jnp.int32),
        plgpu.SMEM((16, H), jnp.float32),
        plgpu.Barrier(num_arrivals=2, num_barriers=1),
    ]
    mesh = plgpu.Mesh(grid=(flat_idx.shape[0] // R,), grid_names=("programs",))
    body = lambda *refs: pl.run_scoped(functools.partial(_reduce_adds, *refs), *scratch)
    return _mpmd_map(
        [(mesh, body)],
        (jax.ShapeDtypeStruct((F, H), jnp.float32),),
        input_output_aliases={2: 0},
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Lane),
        name="tma_reduce_adds",
    )(flat_idx, src, out)[0]


def _per_call_us(fn, repeat: int = 20) -> float:
    jax.block_until_ready(fn())
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        samples.append((time.perf_counter() - start) / LOOPS)
    return float(np.median(samples)) * 1e6


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help; no options
    rng = np.random.default_rng(0)
    idx, val, rows = map(jnp.asarray, pieces_batch(rng))
    dpre = jnp.asarray(rng.standard_normal((B, H)) * 0.01, jnp.float32)
    src = jnp.asarray(rng.standard_normal((16, H)), jnp.float32)
    flat_idx = idx.reshape(-1)

    @jax.jit
    def xla_loop():
        def one(i, out):  # pieces_input_grad's fused gather, scale and scatter-add, into the carried matrix
            scaled = dpre * (1 + i.astype(jnp.float32) * 1e-3)
            per_slot = val[..., None] * scaled[rows][:, None, :]
            return out.at[jnp.where(val != 0, idx, F)].add(per_slot, mode="drop")

        return jax.lax.fori_loop(0, LOOPS, one, jnp.zeros((F, H), jnp.float32))

    @jax.jit
    def tma_loop():
        return jax.lax.fori_loop(
            0,
            LOOPS,
            lambda i, out: tma_reduce_adds(flat_idx, src * i.astype(jnp.float32), out),
            jnp.zeros((F, H), jnp.float32),
        )

    for _ in range(2):
        print(
            f"XLA gather-scale-scatter {_per_call_us(xla_loop):.1f} us; TMA reduce-adds of rows already in shared "
            f"memory, the same slots {_per_call_us(tma_loop):.1f} us",
            flush=True,
        )


if __name__ == "__main__":
    main()
