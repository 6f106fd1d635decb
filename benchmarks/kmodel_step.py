"""The model search's K-network step (textclf/training/candidates.py): its two XLA formulations side by side,
sparse (gather the batch's W1 rows, sum per document; scatter-add gradient) and dense (the batch scattered into a
(B, F) matrix, then (B, F) x (F, K*H) products), on the rows of a real corpus: microseconds per step and
documents per second of one `_epoch` (median of 5 after a compiling one), for K networks and batch B.

    python -m benchmarks.kmodel_step [TRAIN.jsonl] [--models 3,6,8] [--batches 64,1024]

Prints a markdown table; the last column is dense time / sparse time.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.kernels import load_problem
from textclf.training import candidates


def time_epoch(x, y, classes: int, models: int, batch: int, dense: bool) -> float:
    """-> seconds of one epoch over x (median of 5 after one that compiles)."""
    shape = candidates.batch_shape([x], batch)
    batches = candidates._device_batches(x, y, batch, np.arange(x.shape[0]), shape)
    rates = jnp.full((models,), 1e-3, jnp.float32)
    decays = jnp.zeros((models,), jnp.float32)
    params, state = candidates._start(0, x.shape[1], 128, classes, models)
    seconds = []
    for _ in range(6):
        start = time.perf_counter()
        params, state, losses = candidates._epoch(params, state, rates, decays, *batches, dense=dense)
        losses.block_until_ready()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", nargs="?", default=".devdata/news4/train.jsonl")
    parser.add_argument("--models", default="3,6,8")
    parser.add_argument("--batches", default="64,1024")
    args = parser.parse_args()
    x, y, classes = load_problem(args.train)
    print(f"device: {jax.devices()[0].device_kind}; {args.train}: {x.shape[0]} documents, {x.shape[1]} columns, "
          f"{x.nnz / x.shape[0]:.0f} nonzeros a document")
    print("| K | B | sparse us/step | dense us/step | sparse docs/s | dense docs/s | dense / sparse time |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for models in map(int, args.models.split(",")):
        for batch in map(int, args.batches.split(",")):
            steps = -(-x.shape[0] // batch)
            sparse = time_epoch(x, y, classes, models, batch, dense=False)
            dense = time_epoch(x, y, classes, models, batch, dense=True)
            print(f"| {models} | {batch} | {sparse / steps * 1e6:,.0f} | {dense / steps * 1e6:,.0f} | "
                  f"{x.shape[0] / sparse:,.0f} | {x.shape[0] / dense:,.0f} | {dense / sparse:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
