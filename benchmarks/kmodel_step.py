"""The model search's K-network step (textclf/training/candidates.py), its formulations side by side on the rows
of a real corpus: sparse XLA (gather the batch's W1 rows, sum per document; scatter-add gradient), dense XLA
(the batch scattered into a (B, F) matrix, then (B, F) x (F, K*H) products and Adam over W1), and dense with
W1's gradient and Adam update fused in one Pallas kernel (pallas_kernels/stacked_input_adam.py; GPU only).
Microseconds per step and documents per second of one `_epoch` (median of 5 after a compiling one), for K
networks, batch B and input width F (the F columns of the corpus's matrix that the most documents use; the
search trains its rounds at 8,192).

    python -m benchmarks.kmodel_step [TRAIN.jsonl] [--models 6,8] [--batches 64,1024] [--widths 8192,32768]
        [--blocks 32x128x4x2,...]

--blocks: fused-kernel tilings to try (block_f x block_n x warps x stages); the table shows the fastest, named.
Prints a markdown table; the ratio columns are time / dense XLA's time.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.kernels import load_problem
from textclf.training import candidates


def time_epoch(x, y, classes: int, models: int, batch: int, dense: bool, fused: bool = False) -> float:
    """-> seconds of one epoch over x (median of 5 after one that compiles)."""
    shape = candidates.batch_shape([x], batch)
    batches = candidates._device_batches(x, y, batch, np.arange(x.shape[0]), shape)
    rates = jnp.full((models,), 1e-3, jnp.float32)
    decays = jnp.zeros((models,), jnp.float32)
    params, state = candidates._start(0, x.shape[1], 128, classes, models)
    seconds = []
    for _ in range(6):
        start = time.perf_counter()
        params, state, losses = candidates._epoch(params, state, rates, decays, *batches, dense=dense, fused=fused)
        losses.block_until_ready()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds[1:]))


def widest_columns(x, width: int):
    """The `width` columns that the most rows use, in their original order."""
    used = np.bincount(x.indices, minlength=x.shape[1])
    kept = np.sort(np.argsort(-used, kind="stable")[:width])
    sub = x[:, kept].tocsr()
    if sub.shape[1] < width:
        sub.resize((sub.shape[0], width))
    return sub


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", nargs="?", default=".devdata/news4/train.jsonl")
    parser.add_argument("--models", default="6,8")
    parser.add_argument("--batches", default="64,1024")
    parser.add_argument("--widths", default="8192,32768")
    parser.add_argument("--blocks", default="32x128x4x2")
    args = parser.parse_args()
    full, y, classes = load_problem(args.train)
    on_gpu = jax.default_backend() == "gpu"
    blocks = [tuple(map(int, b.split("x"))) for b in args.blocks.split(",")]
    print(f"device: {jax.devices()[0].device_kind}; {args.train}: {full.shape[0]} documents, {full.shape[1]} "
          f"columns, {full.nnz / full.shape[0]:.0f} nonzeros a document")
    print("| F | K | B | nonzeros/doc | sparse us/step | dense us/step | fused us/step | sparse / dense | "
          "fused / dense | fused tiling |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for width in map(int, args.widths.split(",")):
        x = widest_columns(full, width)
        for models in map(int, args.models.split(",")):
            for batch in map(int, args.batches.split(",")):
                steps = -(-x.shape[0] // batch)
                sparse = time_epoch(x, y, classes, models, batch, dense=False)
                dense = time_epoch(x, y, classes, models, batch, dense=True)
                fused, tiling = float("nan"), "-"
                if on_gpu:
                    tried = {}
                    for block_f, block_n, warps, stages in blocks:
                        _configure(block_f, block_n, warps, stages)
                        tried[f"{block_f}x{block_n}, {warps} warps, {stages} stages"] = time_epoch(
                            x, y, classes, models, batch, dense=True, fused=True)
                    tiling, fused = min(tried.items(), key=lambda item: item[1])
                    _configure(*blocks[0])
                print(f"| {width} | {models} | {batch} | {x.nnz / x.shape[0]:.0f} | {sparse / steps * 1e6:,.0f} | "
                      f"{dense / steps * 1e6:,.0f} | {fused / steps * 1e6:,.0f} | {sparse / dense:.2f}x | "
                      f"{fused / dense:.2f}x | {tiling} |", flush=True)


def _configure(block_f: int, block_n: int, warps: int, stages: int) -> None:
    """Set the fused kernel's tiling for the next compilation (candidates reads these at trace time)."""
    candidates.FUSED_BLOCKS = dict(block_f=block_f, block_n=block_n, num_warps=warps, num_stages=stages)
    candidates._epoch.clear_cache()


if __name__ == "__main__":
    main()
