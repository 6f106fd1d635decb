"""Per-kernel GPU times of the sparse hidden layer (pallas_kernels/sparse_hidden.py) against XLA's gather +
segment-sum, on real news4 batches, over a small sweep of block sizes.

    python -m benchmarks.kernels.sparse_kernels .devdata/news4/train.jsonl [--batch 4096]

Times are profiler kernel times (benchmarks/timing.kernel_time), milliseconds per call.
"""

from __future__ import annotations

import argparse
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import kernel_time
from pallas_kernels.sparse_hidden import (
    SparseForwardBlocks,
    SparseGradBlocks,
    _by_feature,
    sparse_hidden_forward,
    sparse_hidden_reference,
    sparse_input_grad,
)
from pipelines.batches import make_batches
from pipelines.corpus import read_corpus
from pipelines.vectorize import fit_vectorizer
from textclf.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("--batch", type=int, default=4096)
    args = parser.parse_args()
    corpus = read_corpus(args.train)
    _, matrix = fit_vectorizer(corpus.texts, corpus.labels, Settings())
    rng = np.random.default_rng(0)
    sample = matrix[rng.permutation(matrix.shape[0])[: args.batch]]
    batch = make_batches(sample, np.zeros(sample.shape[0], np.int32), args.batch)
    indices, values, rows = (jnp.asarray(a[0]) for a in (batch.indices, batch.values, batch.rows))
    n_features, hidden, b = 32768, 128, args.batch
    w1 = jnp.asarray(rng.normal(size=(n_features, hidden)) * 0.01, jnp.float32)
    b1 = jnp.zeros((hidden,), jnp.float32)
    dpre = jnp.asarray(rng.normal(size=(b, hidden)) * 1e-3, jnp.float32)
    nnz = int((np.asarray(batch.mask[0]) > 0).sum())
    print(f"batch {b}: {int(np.count_nonzero(batch.values[0])):,} nonzeros, cap {indices.shape[0]:,}; {nnz} documents")
    ms = lambda fn, *a: (kernel_time(fn, a) or float("nan")) * 1e3
    print(
        f"XLA gather + segment_sum forward: "
        f"{ms(lambda i, v, r, w: sparse_hidden_reference(w, b1, i, v, r, b), indices, values, rows, w1):.3f} ms"
    )
    xla_grad = jax.grad(lambda w, i, v, r, d: jnp.sum(sparse_hidden_reference(w, b1, i, v, r, b) * d))
    print(f"XLA forward + dW1 (grad of the reference): {ms(xla_grad, w1, indices, values, rows, dpre):.3f} ms")
    print(
        f"XLA argsort of the batch by feature (part of the Pallas backward): "
        f"{ms(lambda i, v, r: _by_feature(i, v, r, n_features, 64, 64), indices, values, rows):.3f} ms"
    )
    print("| kernel | block_b / block_k | block_n | warps | ms |")
    print("|---|---:|---:|---:|---:|")
    for block_b, block_n, warps in itertools.product((16, 32, 64), (32, 64, 128), (4, 8)):
        blocks = SparseForwardBlocks(block_b=block_b, block_n=block_n, num_warps=warps)
        fn = lambda i, v, r, w: sparse_hidden_forward(i, v, r, w, b1, batch_size=b, block_sizes=blocks)
        print(
            f"| sparse_hidden_forward | {block_b} | {block_n} | {warps} | {ms(fn, indices, values, rows, w1):.3f} |",
            flush=True,
        )
    for block_k, block_n, warps in itertools.product((16, 32, 64, 128), (32, 64, 128), (4,)):
        blocks = SparseGradBlocks(block_k=block_k, block_n=block_n, num_warps=warps)
        fn = lambda i, v, r, d: sparse_input_grad(i, v, r, d, n_features=n_features, block_sizes=blocks)
        print(
            f"| sparse_input_grad (incl. sort) | {block_k} | {block_n} | {warps} | "
            f"{ms(fn, indices, values, rows, dpre):.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
